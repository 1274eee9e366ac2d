"""Offline compositional decomposition: nested questions become chains of dependent sub-queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.index.store import build_index, load_index
from hoprag.pipeline.compositional import decompose, lead_with_found
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.plan import OfflinePlanner
from hoprag.pipeline.roles import Conditioned
from hoprag.pipeline.value_bridges import BEAM
from hoprag.records import Evidence, Hit

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


def lookups(question: str) -> list[str] | None:
    levels = decompose(question)
    return None if levels is None else [level.text for level in levels]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # of-chains, innermost first; a content-free frame ("Who is") asks for the last value only
        ("Who is the spouse of the performer of Blue Monday?", ["performer of Blue Monday", "spouse of"]),
        # a relative clause: the words after the anchor go to the clause above it, the frame keeps its own
        (
            "Who led the country where the composer of Moonlight Serenade was a citizen?",
            ["composer of Moonlight Serenade", "country where was a citizen", "Who led"],
        ),
        # a possessive chain reads inside out
        ("Where was Ada Lovelace's father's birthplace?", ["father of Ada Lovelace", "birthplace of"]),
        # a subject-position nesting: the clause takes its verb group, the frame the rest
        (
            "When did the state where Fort Ross is located join the Union?",
            ["state where Fort Ross is located", "When did join the Union"],
        ),
        # a zero relative ("the city [that] X played for")
        ("What river flows through the city Jane Doe played for?", ["city Jane Doe played for", "What river flows through"]),
        # four levels
        (
            "What is the capital of the country where the director of the sequel of Night Train was born?",
            ["sequel of Night Train", "director of", "country where was born", "capital of"],
        ),
        # a verbless tail after the anchor qualifies the innermost lookup, not the asking frame
        (
            "Who was the mayor of the city where Jane Doe was during the Great Flood?",
            ["city where Jane Doe was during the Great Flood", "mayor of"],
        ),
        # an adverb between the relative word and its verb: the clause keeps its object
        (
            "Where was the singer who also recorded Blue Monday born?",
            ["singer who also recorded Blue Monday", "Where was born"],
        ),
        # a copula's bare noun and its particle stay with the clause ("is part of")
        ("Where is the district that Kestrel Vale is part of located?", ["district that Kestrel Vale is part of", "Where is located"]),
        # a comma ends a relative clause whose verb the rules do not know ("joins")
        (
            "Besides the continent of the river which the Ashby Brook joins, where did Kestrel Dynamics open offices?",
            ["river which the Ashby Brook joins", "continent of", "Besides where did Kestrel Dynamics open offices"],
        ),
        # a relation noun without its article after a preposition opens a level (MuSiQue train 3hop1__287390)
        (
            "What is the main international airport in birth place of the director of The Girl Who Kicked the Hornets' Nest?",
            ["director of The Girl Who Kicked the Hornets' Nest", "birth place of", "What is the main international airport in"],
        ),
        # "the country with" nests the link that follows it (MuSiQue train 3hop1__857975)
        (
            "Where are Gila monsters found, in the country with the political party that Sergio Tolento Hernández belongs to?",
            ["political party that Sergio Tolento Hernández belongs to", "country with", "Where are Gila monsters found, in"],
        ),
        # a possessive before a noun that names no relation is a name ("Hanlon's razor"), a relation's is
        # unfolded ("Marty's girlfriend": the girlfriend of Marty)
        ("When was the author of Hanlon's razor born?", ["author of Hanlon's razor", "When was born"]),
        ("Who plays Marty's girlfriend in Back to the Future?", ["girlfriend of Marty in Back to the Future", "Who plays"]),
        # a bare measure noun ("age of") opens nothing: "avengers age of ultron" is a title
        ("Who is the spouse of the actor that plays vision in avengers age of ultron?",
         ["actor that plays vision in avengers age of ultron", "spouse of"]),
        # a nationality opens no anchor: the name it qualifies does (HotpotQA train, Ayesha Quraishi)
        (
            "What landlocked country located in Southern Africa is the birth place of the Swedish performance artist Ayesha?",
            ["birth place of the Swedish performance artist Ayesha", "What landlocked country located in Southern Africa is"],
        ),
        # a bare noun that names no relation ("in charge of") opens nothing
        (
            "Who was in charge of the country where the composer of Aschenbrodel was a citizen?",
            ["composer of Aschenbrodel", "country where was a citizen", "Who was in charge of"],
        ),
    ],
)
def test_nested_questions_become_chains(question: str, expected: list[str]) -> None:
    assert lookups(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "Who wrote Moonlight Serenade?",  # nothing nested
        "Is the director of Night Train older than the director of Day Train?",  # a yes/no comparison
        "Who was born first, the director of Night Train or the director of Day Train?",  # two options
        "Whose office opens earlier: Project Wren's or Project Basalt's?",
        "What is the name of the river?",  # "the name of" names no relation
        "When did the protests of 1989 begin?",  # a year is no lookup
        "Which treaty began with the signing of what document?",  # an interrogative inside
        "What was built in place of Kestrel Mill?",  # "in place of" is an idiom
        "What is the film with the highest gross?",  # "with" that nests no link
        # a nationality and no name after it: no anchor to look up (HotpotQA dev, Brian Bosworth)
        "What is the nick name of this former American professional football player who played as a linebacker?",
    ],
)
def test_questions_without_a_chain_are_left_alone(question: str) -> None:
    assert decompose(question) is None


def test_the_offline_planner_chains_dependent_sub_queries() -> None:
    plan = OfflinePlanner().plan("Who led the country where the composer of Moonlight Serenade was a citizen?")
    assert [(s.order, s.query, s.depends_on) for s in plan.sub_queries] == [
        (1, "composer of Moonlight Serenade", []),
        (2, "country where was a citizen", [1]),
        (3, "Who led", [2]),
    ]
    assert [len(layer) for layer in plan.layers()] == [1, 1, 1]  # one hop per level
    # comparisons keep their parallel branches; a plain question stays one sub-query
    assert len(OfflinePlanner().plan("Which film came out first, Night Train or Day Train?").layers()) == 1
    assert len(OfflinePlanner().plan("Who wrote Moonlight Serenade?").sub_queries) == 1


def test_hop_counts_on_real_musique_decompositions() -> None:
    # MuSiQue labels each question's decomposition; on the bundled dev sample (110 two-hop questions)
    # the offline plan has two lookups for most of them, and never more than three
    counts: dict[int, int] = {}
    for name in ("musique_ans_dev_migres_part1.jsonl", "musique_ans_dev_hoprag.jsonl"):
        for line in (ROOT / "data" / "musique" / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            assert len(record["question_decomposition"]) == 2
            levels = decompose(record["question"])
            n = 1 if levels is None else len(levels)
            counts[n] = counts.get(n, 0) + 1
    assert sum(counts.values()) == 110
    assert counts[2] / 110 > 0.6 and max(counts) <= 3


@pytest.fixture(scope="module")
def musique_slice(tmp_path_factory):
    result = import_dataset("musique", [ROOT / "tests" / "data" / "musique_dev_slice.jsonl"])
    out = tmp_path_factory.mktemp("musique-index")
    build_index(result.documents, out)
    return result, load_index(out)


def test_each_hop_is_filled_with_what_the_previous_one_found(musique_slice) -> None:
    result, index = musique_slice
    case = next(c for c in result.cases if c.query.startswith("What is the seat of the county"))
    trace = make_engine("multihop", index).answer(case.query, case_id=case.case_id)
    assert [s["query"] for s in trace.plan["sub_queries"]] == ["county where Van Hook Township is located", "seat of"]
    first = [s for s in trace.steps if s.hop == 1]
    assert [s.issued_query for s in first] == ["county where Van Hook Township is located"]
    found = [s for s in trace.steps if s.hop == 2 and s.bridge.get("kind") == "found"]
    assert 1 <= len(found) <= BEAM  # a small beam of values, best first
    value = found[0].bridge["value"]
    # every candidate and its score is in the trace, the followed value first
    assert found[0].bridge["candidates"][0][0] == value
    # the value is the answer the first lookup's passages gave, and it leads the conditioned query
    assert found[0].issued_query == f"{value} {value} seat of"
    assert found[0].depends_on == (first[0].step_id,)
    parent = index.chunks[found[0].bridge["from_chunk"]]
    assert value in parent.text and found[0].bridge["from_chunk"] in first[0].selected


def passage(chunk_id: str, title: str, text: str, rank: int) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id, score=10.0 - rank, rank=rank, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=1, step_id="s1", sub_query="city where Ada Quill was born")


# the retriever ranked a passage sharing the lookup's common words ("born", "city") above the one that
# names its rare anchor; the anchor's passage answers the lookup
EVIDENCE = [
    passage("amsterdam", "Ada Amsterdam", "Ada Amsterdam (born in Port Lowell City on May 3, 1970) is a writer.", 1),
    passage("quill", "Ada Quill", "Ada Quill (1650, Marrowby - 1704, Stenhaven) was a physician.", 2),
]


def anchor_relevance(item: Evidence) -> float:
    return 1.0 if "Quill" in item.text else 0.2  # how much of the lookup's weight the passage holds


def test_the_found_values_are_a_beam_of_typed_candidates_ranked_by_the_anchor_passage() -> None:
    bridges = [Conditioned(query="Stenhaven Stenhaven country where is located", bridge="Stenhaven", kind="entity", from_chunk="quill")]
    beam = lead_with_found(
        "city where Ada Quill was born", "country where is located", EVIDENCE, bridges, limit=10, weight=2,
        relevance=anchor_relevance, question="When did the country where the city where Ada Quill was born is located vote?",
    )
    # a city is a place, and the lookup asks where Ada Quill was born: the life span's birthplace slot
    # "(1650, Marrowby - …)" of the passage titled for the anchor is read by that role (3.0), weighed
    # 3 (titled for the anchor) x (0.5 + 1.0 relevance) = 13.5; "Stenhaven" (her death place) is a bare
    # name's fit to a place, 0.5 x 4.5 = 2.25, under 0.3 x 13.5 = 4.05, so it is not followed as a found
    # value and stays the plain bridge it was; "Port Lowell City" (a place word, after "born in": fit 1
    # x cue 1.5, ending in the asked noun "city": x 1.5) sits in a passage that does not name the
    # anchor: 0.5 x (0.5 + 0.2) x 2.25 = 0.7875
    assert [(q.bridge, q.kind) for q in beam] == [("Marrowby", "found"), ("Stenhaven", "entity")]
    assert beam[0].query == "Marrowby Marrowby country where is located" and beam[0].from_chunk == "quill"
    assert [c[:2] for c in beam[0].candidates] == [("Marrowby", 13.5), ("Stenhaven", 2.25), ("Port Lowell City", 0.7875)]
    # the beam never grows the hop past its limit of queries
    assert len(lead_with_found("city where Ada Quill was born", "country where is located", EVIDENCE, bridges, limit=1,
                               weight=2, relevance=anchor_relevance)) == 1


def test_a_value_the_question_names_or_a_whole_sentence_is_no_found_value() -> None:
    bridges = [Conditioned(query="Marrowby Marrowby country where is located", bridge="Marrowby", kind="entity", from_chunk="quill")]
    only = [passage("quill", "Ada Quill", "Ada Quill was a physician.", 1)]
    # the only candidate is the anchor itself, which the question names: the bridges stay as they were
    asked = "city where Ada Quill was born"
    kept = lead_with_found(asked, "country where is located", only, bridges, limit=10, weight=2,
                           relevance=anchor_relevance, question="When did the country where Ada Quill was born vote?")
    assert kept == bridges
    # a value that is one of the bridges leads as that bridge, marked found
    promoted = lead_with_found(asked, "country where is located", [passage("m", "Ada Quill", "Ada Quill was born in Marrowby.", 1)],
                               bridges, limit=10, weight=2, relevance=anchor_relevance, question="Where was Ada Quill born?")
    assert [(q.bridge, q.kind, q.query) for q in promoted] == [("Marrowby", "found", "Marrowby Marrowby country where is located")]
