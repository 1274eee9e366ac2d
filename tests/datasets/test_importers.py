"""Importers on small real slices: facts, edges, chains, distractors, dedup, BEIR, write/read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.artefacts import clean_text
from hoprag.datasets.importers import STAT_KEYS, import_dataset, write_import
from hoprag.datasets.importers.hotpotqa import bridge_order
from hoprag.datasets.passages import doc_id_for, load_passage_corpus, paragraph_text
from hoprag.datasets.schema import load_cases
from hoprag.jsonl import read_records
from hoprag.records import Document

DATA = Path(__file__).parents[1] / "data"
HOTPOT = DATA / "hotpotqa_dev_slice.json"
MUSIQUE = DATA / "musique_dev_slice.jsonl"
TWOWIKI = DATA / "2wiki_dev_slice.json"
BEIR = DATA / "beir_slice"

pytestmark = pytest.mark.unit


def _doc_id(record: dict, title: str) -> str:
    sentences = dict((t, s) for t, s in record["context"])[title]
    return doc_id_for(title, paragraph_text(sentences)[0])


def _records(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


# --- HotpotQA ---------------------------------------------------------------------------------------


def test_hotpot_bridge_edges_run_from_the_paragraph_that_names_the_other() -> None:
    record = _records(HOTPOT)[2]  # Taylor Kemp -> Major League Soccer -> "Canada"
    result = import_dataset("hotpotqa", [HOTPOT])
    case = next(c for c in result.cases if c.case_id == "5a8268215542995ce29dccfb")
    kemp = f"{_doc_id(record, 'Taylor Kemp')}:s0"
    mls = f"{_doc_id(record, 'Major League Soccer')}:s0"
    # Kemp's sentence "...playing for D.C. United in Major League Soccer." names the hop-2 page.
    assert [(e.from_fact, e.to_fact, e.bridge_field, e.bridge_value) for e in case.edges] == [
        (kemp, mls, "entity", "Major League Soccer")
    ]
    assert case.fact_layers() == {kemp: 1, mls: 2}
    assert (case.facts[kemp].grade, case.facts[mls].grade) == (1, 2)
    assert case.valid_chains == [[kemp, mls]] and case.required_facts == [kemp, mls]
    assert case.answers == ["Canada"] and case.aliases == []
    assert case.question_type == "bridge" and case.dataset == "hotpotqa"
    assert case.metadata == {"original_id": "5a8268215542995ce29dccfb", "level": "hard"}
    sk = case.split_keys
    assert (sk.source_family, sk.entities, sk.template, sk.seed) == (
        None, ["Taylor Kemp", "Major League Soccer"], None, "5a8268215542995ce29dccfb"
    )
    assert len(case.distractors) == 8  # 10 context paragraphs, 2 supporting
    assert {d.error_type for d in case.distractors} == {"unlabelled"}
    assert kemp.split(":")[0] not in {d.source_id for d in case.distractors}


def test_hotpot_sentence_offsets_are_derived_from_the_joined_paragraph() -> None:
    record = _records(HOTPOT)[0]  # Rush: [["Nobody's Hero", 0], ["Neil Peart", 1]]
    peart = dict((t, s) for t, s in record["context"])["Neil Peart"]
    case = import_dataset("hotpotqa", [HOTPOT]).cases[0]
    [span] = case.facts[f"{_doc_id(record, 'Neil Peart')}:s1"].spans
    # sentence 1 starts with one space, which the span drops; sentence 0 lost its dict placeholder
    # ("{'1': \", …}" and the space before it) at import (hoprag.datasets.artefacts)
    assert span.start == len(clean_text(peart[0])) + 1 and len(clean_text(peart[0])) == len(peart[0]) - 33
    assert span.text == peart[1].strip()
    # Neither supporting sentence names the other page and the question names neither; the song
    # page's full text credits "Neil Peart", so the song is hop 1.
    assert [e.bridge_value for e in case.edges] == ["Neil Peart"]


def test_hotpot_comparison_has_parallel_branches() -> None:
    case = next(c for c in import_dataset("hotpotqa", [HOTPOT]).cases if c.question_type == "comparison")
    assert case.edges == []
    assert set(case.fact_layers().values()) == {1}
    assert {f.grade for f in case.facts.values()} == {2}


def test_bridge_order_masks_a_paragraphs_own_title() -> None:
    # HotpotQA train 5ae61951...: "Darkon Wargaming Club" contains "Darkon", the film's title sans "(film)".
    support = {
        "Darkon (film)": "Darkon is an award-winning feature-length documentary film that follows the real-life "
        "adventures of the Darkon Wargaming Club in Baltimore, Maryland, a group of fantasy live-action "
        "role-playing (LARP) gamers.",
        "Darkon Wargaming Club": "The Darkon Wargaming Club is a non-profit battle gaming and live-action "
        "role-playing (LARP) club in the United States based in the Baltimore/Washington/Virginia area.",
    }
    question = "The film Darkon follows the Darkon Wargaming Club based in Baltimore, Maryland, a group that ..."
    assert bridge_order(question, support, support) == ("Darkon (film)", "Darkon Wargaming Club")


def test_bridge_order_falls_back_to_the_question_then_gives_up() -> None:
    support = {"Alpha": "Alpha is a town.", "Beta": "Beta is a river."}
    assert bridge_order("Which river flows through Beta's town?", support, support) == ("Beta", "Alpha")
    assert bridge_order("Which river?", support, support) is None


def test_undecidable_bridge_is_flagged_not_guessed(tmp_path: Path) -> None:
    record = _records(HOTPOT)[2]
    record["question"] = "Which other country?"
    record["context"] = [
        ["Taylor Kemp", ["Taylor Eric Kemp (born July 23, 1990) is an American footballer."]],
        ["Major League Soccer", ["It represents the sport's highest level in both the United States and Canada."]],
    ]
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    result = import_dataset("hotpotqa", [path])
    [case] = result.cases
    assert case.edges == [] and case.uncertain
    assert "undecidable" in case.warnings[0] and result.stats["warnings"] == 1


def test_missing_title_and_out_of_range_sentence_become_warned_spanless_facts(tmp_path: Path) -> None:
    record = _records(HOTPOT)[2]
    record["supporting_facts"] = [["Taylor Kemp", 0], ["Taylor Kemp", 7], ["D.C. United", 0]]
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    result = import_dataset("hotpotqa", [path])
    [case] = result.cases
    kemp = _doc_id(record, "Taylor Kemp")
    assert case.facts[f"{kemp}:s7"].spans == [] and case.facts[f"{kemp}:s7"].source_id == kemp
    missing = case.facts["missing:D.C. United:s0"]
    assert missing.source_id == "missing:D.C. United" and missing.spans == []
    assert len(case.warnings) == 3 and result.stats["warnings"] == 3
    assert "out of range" in case.warnings[0] and "not in the record's context" in case.warnings[1]
    assert "1 located supporting paragraphs" in case.warnings[2] and case.edges == []
    assert all(w.startswith("hotpot.json record 1 (5a8268215542995ce29dccfb): ") for w in result.warnings)
    assert "D.C. United" in case.valid_chains[0][-1]


def test_dedup_across_files_and_records(tmp_path: Path) -> None:
    records = _records(HOTPOT)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(records[:4]), encoding="utf-8")
    second.write_text(json.dumps(records[4:]), encoding="utf-8")
    split = import_dataset("hotpotqa", [first, second])
    whole = import_dataset("hotpotqa", [HOTPOT])
    # Records 4 (Caesalpinia/Achimenes) and 5 (Pothos/Tibouchina) share four distractor paragraphs
    # (Austrobaileyales, Psychotria, Cyrtandra (plant), Zeltnera).
    assert split.stats["duplicates_removed"] == whole.stats["duplicates_removed"] == 4
    assert split.stats["documents"] == 5 * 10 - 4
    assert [d.id for d in split.documents] == [d.id for d in whole.documents]
    shared = {d.source_id for d in split.cases[3].distractors} & {d.source_id for d in split.cases[4].distractors}
    assert {doc.title for doc in split.documents if doc.id in shared} == {
        "Austrobaileyales", "Psychotria", "Cyrtandra (plant)", "Zeltnera"
    }


def test_same_paragraph_in_two_bundled_files_is_one_document() -> None:
    files = [DATA.parents[1] / "data" / "hotpotqa" / n for n in
             ("hotpot_dev_distractor_migres_part1.json", "hotpot_dev_distractor_hoprag.json")]
    result = import_dataset("hotpotqa", files)
    mls = [d for d in result.documents if d.title == "Major League Soccer"]
    assert len(mls) == 1 and mls[0].source == "hotpotqa" and mls[0].metadata == {}
    users = [c.case_id for c in result.cases if any(f.source_id == mls[0].id for f in c.facts.values())]
    assert set(users) == {"5a8268215542995ce29dccfb", "5ade063d5542995b365fabcd"}


def test_same_case_id_twice_is_skipped_and_counted() -> None:
    result = import_dataset("hotpotqa", [HOTPOT, HOTPOT])
    assert result.stats["records"] == 10 and result.stats["cases"] == 5 and result.stats["skipped"] == 5
    assert "already imported" in result.warnings[0]


# --- MuSiQue ----------------------------------------------------------------------------------------


def test_musique_4hop_edges_follow_hash_references() -> None:
    result = import_dataset("musique", [MUSIQUE])
    case = next(c for c in result.cases if c.case_id == "4hop1__709382_146811_31223_91015")
    record = json.loads(MUSIQUE.read_text(encoding="utf-8").splitlines()[4])
    paragraphs = {p["idx"]: p for p in record["paragraphs"]}
    fact = {
        i: f"{doc_id_for(paragraphs[i]['title'], paragraphs[i]['paragraph_text'])}:p{i}" for i in (15, 14, 6, 16)
    }
    # Steps: "Hello Love >> performer" (p15), "What city did #1 live ..." (p14),
    # "Which state borders #2 to the east?" (p6), "how many publix stores are in #3" (p16).
    assert [(e.from_fact, e.to_fact, e.bridge_field, e.bridge_value) for e in case.edges] == [
        (fact[15], fact[14], "answer_of_step_1", "Hank Snow"),
        (fact[14], fact[6], "answer_of_step_2", "Tennessee"),
        (fact[6], fact[16], "answer_of_step_3", "North Carolina"),
    ]
    assert case.fact_layers() == {fact[15]: 1, fact[14]: 2, fact[6]: 3, fact[16]: 4}
    assert [case.facts[fact[i]].grade for i in (15, 14, 6, 16)] == [1, 1, 1, 2]
    assert case.question_type == "4hop1" and case.answers == ["35"]
    assert case.facts[fact[16]].spans[0].text == paragraphs[16]["paragraph_text"]
    assert len(case.distractors) == 20 - 4


def test_musique_relation_after_arrow_is_the_bridge_field() -> None:
    case = next(c for c in import_dataset("musique", [MUSIQUE]).cases if c.case_id == "3hop1__404363_705261_126049")
    # "#1 >> country of citizenship" then "Who was in charge of #2 ?"
    assert [(e.bridge_field, e.bridge_value) for e in case.edges] == [
        ("country of citizenship", "Johann Strauss II"),
        ("answer_of_step_2", "Austria"),
    ]
    aliases = next(c for c in import_dataset("musique", [MUSIQUE]).cases if c.case_id == "2hop__335418_279684")
    assert aliases.aliases == ["Orioles", "Pirates", "Baltimore Orioles", "New York Mets", "Mets"]


def test_musique_unanswerable_and_extra_supporting_paragraphs_are_noted(tmp_path: Path) -> None:
    record = json.loads(MUSIQUE.read_text(encoding="utf-8").splitlines()[0])
    record["answerable"] = False
    record["paragraphs"][0]["is_supporting"] = True  # "Port Blair", used by no step
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = import_dataset("musique", [path])
    [case] = result.cases
    port_blair = doc_id_for("Port Blair", record["paragraphs"][0]["paragraph_text"])
    assert case.metadata["answerable"] is False
    assert case.metadata["supporting_not_in_decomposition"] == [port_blair]
    assert port_blair not in {d.source_id for d in case.distractors}
    assert port_blair in {d.id for d in result.documents}
    assert len(case.warnings) == 2 and "answerable=false" in case.warnings[0]


# --- 2Wiki ------------------------------------------------------------------------------------------


def test_2wiki_bridge_comparison_edges_from_evidence_triples() -> None:
    record = _records(TWOWIKI)[0]  # Forbidden Ground / Free Guy, directors Pál Gábor / Shawn Levy
    case = import_dataset("2wiki", [TWOWIKI]).cases[0]
    f = {t: f"{_doc_id(record, t)}:s0" for t in ("Forbidden Ground", "Free Guy", "Pál Gábor", "Shawn Levy")}
    assert [(e.from_fact, e.to_fact, e.bridge_field, e.bridge_value) for e in case.edges] == [
        (f["Forbidden Ground"], f["Pál Gábor"], "director", "Pál Gábor"),
        (f["Free Guy"], f["Shawn Levy"], "director", "Shawn Levy"),
    ]  # the two "date of birth" triples end in values: no edge
    assert case.question_type == "bridge_comparison" and case.answers == ["Free Guy"]
    assert case.fact_layers() == {f["Forbidden Ground"]: 1, f["Free Guy"]: 1, f["Pál Gábor"]: 2, f["Shawn Levy"]: 2}


def test_2wiki_inexact_evidence_names_and_no_back_edges() -> None:
    # Evidences [["Empress Wang", "spouse", "Gaozong"], ["Gaozong", "mother", "Empress Zhangsun"]] for
    # pages "Empress Wang (Gaozong)" and "Emperor Gaozong of Tang".
    record = _records(TWOWIKI)[3]
    case = import_dataset("2wiki", [TWOWIKI]).cases[3]
    wang, gaozong = f"{_doc_id(record, 'Empress Wang (Gaozong)')}:s1", f"{_doc_id(record, 'Emperor Gaozong of Tang')}:s1"
    assert [(e.from_fact, e.to_fact, e.bridge_field, e.bridge_value) for e in case.edges] == [
        (wang, gaozong, "spouse", "Gaozong")
    ]


def test_2wiki_without_evidences_has_no_edges_and_says_so(tmp_path: Path) -> None:
    record = _records(TWOWIKI)[2]
    del record["evidences"]
    path = tmp_path / "w.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    [case] = import_dataset("2wiki", [path]).cases
    assert case.edges == [] and case.warnings == ["record has no 'evidences'; no edges derived"]
    assert case.question_type == "compositional"


def test_extra_corpus_is_appended_and_deduplicated() -> None:
    result = import_dataset("2wiki", [TWOWIKI], [DATA / "passages_list.json"])
    # passages_list.json: 7 HippoRAG passages, 4 of them paragraphs of the first slice record.
    # The slice's records 1 and 2 share 3 paragraphs (La Bestia humana, Miloš Zličić, Vadim Vlasov).
    assert result.stats["extra_documents"] == 3
    assert result.stats["duplicates_removed"] == 3 + 4
    assert result.stats["documents"] == 50 - 3 + 3
    assert [d.title for d in result.documents[-3:]] == ["Teutberga", "Theodred II (Bishop of Elmham)",
                                                        "Lambert, Margrave of Tuscany"]
    assert {d.source for d in result.documents} == {"2wiki"}


# --- BEIR -------------------------------------------------------------------------------------------


def test_beir_folder_gives_single_hop_cases() -> None:
    result = import_dataset("beir", [BEIR])
    assert result.stats == {"records": 3, "cases": 2, "skipped": 1, "documents": 5, "duplicates_removed": 0,
                            "extra_documents": 0, "warnings": 1}
    kemp, league = result.cases[0], result.cases[1]
    assert kemp.case_id == "5a8268215542995ce29dccfb" and kemp.question_type == "single-hop"
    assert list(kemp.facts) == ["1001:doc", "1002:doc"]  # 1003 is judged 0: not relevant
    assert kemp.valid_chains == [["1001:doc"], ["1002:doc"]]
    assert kemp.answers == [] and kemp.edges == []
    fact = kemp.facts["1001:doc"]
    doc = next(d for d in result.documents if d.id == "1001")
    assert fact.grade == 1 and fact.source_id == "1001" and fact.spans[0].text == doc.text
    assert (fact.spans[0].start, fact.spans[0].end) == (0, len(doc.text))
    assert league.split_keys.entities == ["Caesalpinia", "Achimenes"]
    assert "no qrels with score > 0" in result.warnings[0]


def test_beir_explicit_files_match_the_folder() -> None:
    files = [BEIR / "queries.jsonl", BEIR / "qrels" / "test.tsv", BEIR / "corpus.jsonl"]
    explicit, folder = import_dataset("beir", files), import_dataset("beir", [BEIR])
    assert [c.to_json() for c in explicit.cases] == [c.to_json() for c in folder.cases]
    assert explicit.documents == folder.documents


# --- writing -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "path"), [("hotpotqa", HOTPOT), ("musique", MUSIQUE), ("2wiki", TWOWIKI), ("beir", BEIR)]
)
def test_write_import_reads_back(tmp_path: Path, fmt: str, path: Path) -> None:
    result = import_dataset(fmt, [path])
    assert set(result.stats) == set(STAT_KEYS)
    write_import(result, tmp_path / "out")
    assert [c.model_dump() for c in load_cases(tmp_path / "out" / "cases.jsonl")] == [
        c.model_dump() for c in result.cases
    ]
    assert read_records(tmp_path / "out" / "corpus.jsonl", Document) == result.documents
    assert load_passage_corpus(tmp_path / "out" / "corpus.jsonl") == result.documents
