"""Value bridges, answer kinds and the abbreviation-aware sentence splitter, on real MuSiQue passages."""

from __future__ import annotations

import pytest

from hoprag.pipeline.answer_types import question_kind, relation_kind, typed_spans
from hoprag.pipeline.text import sentences_with_offsets
from hoprag.pipeline.value_bridges import beam, found_values, named_anchor
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def passage(chunk_id: str, title: str, text: str, rank: int, step_id: str = "s1") -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id, score=10.0 - rank, rank=rank, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=1, step_id=step_id, sub_query="performers of Brother")


# MuSiQue train 3hop1__520721_132413_16030: "What is the usual average snowfall in the city where the
# performers of Brother were formed?" (Brother >> performer = Pearl Jam; formed in Seattle; 6.8 inches)
BROTHER = passage(
    "brother", "Brother (Pearl Jam song)",
    '"Brother" is a song by the American rock band Pearl Jam. Featuring lyrics written by vocalist Eddie Vedder '
    'and music written by guitarist Stone Gossard, "Brother" was an outtake from the band\'s debut album, "Ten".', 3,
)
MATHISEN = passage(
    "mathisen", "Hans Mathisen",
    "Hans Mathisen (born 27 July 1967 in Sandefjord, Norway) is a Norwegian Jazz guitarist, educated on the Jazz program.", 1,
)
PEARL_JAM = passage(
    "pearl-jam", "Pearl Jam",
    "Pearl Jam is an American rock band formed in 1990 in Seattle, Washington. The band's current lineup comprises "
    "founding members Eddie Vedder (lead vocals), Mike McCready (lead guitar), Stone Gossard (rhythm guitar).", 1, "s2",
)


def test_relation_and_question_kinds() -> None:
    assert relation_kind("performers of Brother") == "person"
    assert relation_kind("city where were formed") == "place"
    assert relation_kind("country where was a citizen") == "place"
    assert relation_kind("team that won") == "organisation"
    assert question_kind("Who is the CEO of the corporation?") == "person"
    assert question_kind("When did Italy enter the First World War?") == "date"
    assert question_kind("How many Publix stores are in North Carolina?") == "number"
    assert question_kind("In what country is Midway?") == "place"
    assert question_kind("Which team did Ozmen join?") == "organisation"


def test_typed_spans_judge_a_name_by_the_word_before_it() -> None:
    spans = {s.value: s.fit for s in typed_spans("Pearl Jam is a band formed in 1990 in Seattle, Washington.", "place")}
    # after "in" a bare name fits a place at 0.8, the band's own name (first word) at 0.5; a year is no place
    assert spans["Seattle"] == 0.8 and spans["Pearl Jam"] == 0.5 and "1990" not in spans
    # a month is no name
    assert "July" not in {s.value for s in typed_spans("He was born in July in Sandefjord.", "person")}


def test_the_anchor_is_the_name_a_lookup_holds() -> None:
    assert named_anchor("performers of Brother") == "Brother"
    assert named_anchor("city where Ada Quill was born") == "Ada Quill"
    assert named_anchor("What is the usual average snowfall in") == ""


def test_a_lookups_value_comes_from_the_passage_titled_for_its_anchor() -> None:
    # the retriever ranked a Norwegian guitarist first; the passage titled "Brother (…)" names the performer
    found = found_values("performers of Brother", [MATHISEN, BROTHER], question="What is the usual average snowfall "
                         "in the city where the performers of Brother were formed?")
    # Pearl Jam: the title's maker (1.5) in the anchor's passage (weight 3 x (0.5 + 0.5)) = 4.5, above
    # "Eddie Vedder" (a name after "vocalist": fit 0.5, cue "written" 1.5, second sentence 0.8) x 3 = 1.8;
    # "Featuring", the second sentence's first word, is no name
    assert found[0].value == "Pearl Jam" and found[0].score == pytest.approx(4.5)
    assert [(c.value, c.score) for c in found[1:3]] == [("Eddie Vedder", pytest.approx(1.8)), ("Stone Gossard", pytest.approx(1.8))]
    # the beam: the best three at 0.3 x 4.5 = 1.35 or more
    assert [c.value for c in beam(found)] == ["Pearl Jam", "Eddie Vedder", "Stone Gossard"]


def test_the_next_lookup_reads_the_place_the_found_value_was_formed_in() -> None:
    found = found_values("city where were formed", [PEARL_JAM], anchors={"s2": "Pearl Jam"},
                         question="What is the usual average snowfall in the city where the performers of Brother were formed?")
    # "formed in 1990 in Seattle": a name after "in" (0.8) within five words of "formed" (1.5), in the
    # anchor's own passage (3 x 1.0) = 3.6; the passage's own subject is no value
    assert found[0].value == "Seattle" and found[0].score == pytest.approx(3.6)
    assert "Pearl Jam" not in {c.value for c in found}


def test_a_demonym_names_its_country_when_a_place_is_asked() -> None:
    strauss = passage("strauss", "Johann Strauss II", "Johann Strauss II was an Austrian composer of light music.", 1, "s2")
    found = found_values("country where was a citizen", [strauss], anchors={"s2": "Johann Strauss II"},
                         titles={"austria", "germany"})
    assert found[0].value == "Austria"


def test_a_demonym_whose_country_the_question_names_stays_the_demonym() -> None:
    # the country is in the question, so it is no bridge: the demonym counts (weakly) as itself
    strauss = passage("strauss", "Johann Strauss II", "Johann Strauss II was an Austrian composer of light music.", 1, "s2")
    found = found_values("country where was a citizen", [strauss], anchors={"s2": "Johann Strauss II"},
                         question="Was the composer of The Blue Danube born in Austria?", titles={"austria"})
    assert "Austria" not in [f.value for f in found]
    assert [f.value for f in found if f.value == "Austrian"] == ["Austrian"]


def test_sentences_are_not_cut_at_abbreviations_or_initials() -> None:
    text = "He sued John Doe No. 2 in court. The Alfred P. Sloan Foundation paid. It moved to Mt. Fuji. Then he left."
    assert [text[a:b] for a, b in sentences_with_offsets(text)] == [
        "He sued John Doe No. 2 in court.", "The Alfred P. Sloan Foundation paid.", "It moved to Mt. Fuji.", "Then he left.",
    ]
