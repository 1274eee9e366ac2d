"""Leakage by case: paraphrases from one graph path are named as a pair; the splitter keeps them together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.cli import app
from hoprag.datasets.leakage import leakage_report
from hoprag.datasets.schema import Case, SplitKeys, load_cases, write_cases
from hoprag.datasets.similarity import content_words, jaccard, paraphrase_pairs, similar_pairs
from hoprag.datasets.splits import grouped_split

pytestmark = pytest.mark.unit
CASES = load_cases(Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl")
BY_ID = {c.case_id: c for c in CASES}
ORION = BY_ID["ent-001"]
REWORDED = "How many years is the customer data of the plan Project Orion acquired retained under the current retention policy?"


def paraphrase(case_id: str = "ent-001p", *, keep_keys: bool = True) -> Case:
    """The same graph path (identical facts, answers and seed), asked in other words."""
    keys = ORION.split_keys if keep_keys else SplitKeys()
    return ORION.model_copy(update={"case_id": case_id, "query": REWORDED, "split_keys": keys})


def only_pair(report: dict, a: str, b: str) -> dict:
    (entry,) = [p for p in report["pairs"]["train|test"]["case_pairs"] if (p["a"], p["b"]) == (a, b)]
    return entry


def test_paraphrases_of_one_path_are_named_as_a_pair() -> None:
    report = leakage_report({"train": [ORION], "test": [paraphrase()]})
    entry = report["pairs"]["train|test"]
    assert entry["near_duplicates"] == []  # shingled MinHash misses a reworded question
    pair = only_pair(report, "ent-001", "ent-001p")
    assert {"seed", "evidence", "paraphrase"} <= set(pair["reasons"]) and pair["strong"]
    assert pair["shared"]["seed"] == ["path-01"] and pair["evidence"] == {"fact_jaccard": 1.0, "source_jaccard": 1.0}
    # content words, stemmed: 9 shared of 13 -> 9/13
    assert pair["question"]["content_jaccard"] == pytest.approx(9 / 13, abs=1e-4)
    assert pair["summary"].startswith("case ent-001 (train) and case ent-001p (test) share seed 'path-01'")
    assert "have identical evidence" in pair["summary"] and "paraphrased questions" in pair["summary"]
    assert report["case_leaks"] == 1 and entry["case_leaks"] == 1


def test_named_without_any_shared_key() -> None:
    twin = paraphrase(keep_keys=False)  # no seed, template, family or split entity to give it away
    pair = only_pair(leakage_report({"train": [ORION], "test": [twin]}), "ent-001", "ent-001p")
    assert set(pair["shared"]) == {"bridge_entity"}  # only the edges' bridge values are still shared
    assert set(pair["reasons"]) == {"bridge_entity", "evidence", "paraphrase"} and pair["strong"]


def test_identical_evidence_is_a_leak_whatever_the_wording() -> None:
    other = ORION.model_copy(update={"case_id": "ent-001x", "query": "Which retention period governs Orion's telemetry?",
                                     "split_keys": SplitKeys()})
    pair = only_pair(leakage_report({"train": [ORION], "test": [other]}), "ent-001", "ent-001x")
    assert "evidence" in pair["reasons"] and "paraphrase" not in pair["reasons"]
    # facts are compared by source and offsets, not by their local names
    name = {old: f"f{i}" for i, old in enumerate(ORION.facts)}
    renamed = other.model_copy(update={"facts": {name[k]: f for k, f in ORION.facts.items()}, "edges": [],
                                       "required_facts": [name[f] for f in ORION.required_facts],
                                       "valid_chains": [[name[f] for f in chain] for chain in ORION.valid_chains]})
    assert only_pair(leakage_report({"train": [ORION], "test": [renamed]}), "ent-001", "ent-001x")["reasons"] == ["evidence"]


def test_unrelated_cases_sharing_only_a_template_are_listed_but_not_strong() -> None:
    report = leakage_report({"train": [ORION], "test": [BY_ID["ent-011"]]})  # same template and family
    pair = only_pair(report, "ent-001", "ent-011")
    assert pair["reasons"] == ["template", "source_family"] and not pair["strong"]
    assert pair["evidence"] is None and "content_jaccard" not in pair["question"]


def test_template_instances_about_different_things_are_not_paraphrases() -> None:
    film = [Case(case_id=f"w{i}", query=f"Where was the place of death of the director of film {name}?")
            for i, name in enumerate(["The Hi-Jackers", "The Singer Of My City"])]
    words = [content_words(c.query) for c in film]
    assert jaccard(*words) >= 0.5  # the template's words dominate ...
    assert paraphrase_pairs(film[:1], film[1:], threshold=0.5) == []  # ... but the films differ
    lower = [ORION, ORION.model_copy(update={"case_id": "x", "query": REWORDED.lower()})]
    assert paraphrase_pairs(lower[:1], lower[1:], threshold=0.6)  # a lower-case paraphrase still matches


def test_similar_pairs_is_exact() -> None:
    sets = [frozenset(s.split()) for s in ["a b c d", "a b c e", "x y", "a b", "x y z"]]
    brute = sorted((i, j, jaccard(sets[i], sets[j])) for i in range(5) for j in range(i + 1, 5)
                   if jaccard(sets[i], sets[j]) >= 0.6)
    assert similar_pairs(sets, threshold=0.6) == brute == [(0, 1, 0.6), (2, 4, 2 / 3)]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_grouped_split_keeps_paraphrases_together(seed: int) -> None:
    twin = paraphrase(keep_keys=False)
    cases = [*CASES, twin]
    result = grouped_split(cases, ["template"], [0.5, 0.25, 0.25], seed=seed)
    where = {c.case_id: name for name, cs in result.partitions.items() for c in cs}
    assert where["ent-001p"] == where["ent-001"]
    assert result.links["evidence"] == 1 and result.links["paraphrase"] == 1
    report = leakage_report(result.partitions)
    assert not any(p["a"] in ("ent-001", "ent-001p") and p["b"] in ("ent-001", "ent-001p")
                   for entry in report["pairs"].values() for p in entry["case_pairs"])


def test_without_the_links_a_split_can_separate_them() -> None:
    cases = [*CASES, paraphrase(keep_keys=False)]
    apart = []
    for seed in range(1, 30):
        result = grouped_split(cases, ["template"], [0.5, 0.25, 0.25], seed=seed,
                               evidence_threshold=None, paraphrase_threshold=None)
        where = {c.case_id: name for name, cs in result.partitions.items() for c in cs}
        apart.append(where["ent-001p"] != where["ent-001"])
    assert any(apart)


def test_cli_names_the_pair_and_strict_fails(tmp_path: Path) -> None:
    write_cases(tmp_path / "train.jsonl", [ORION, BY_ID["ent-002"]])
    write_cases(tmp_path / "test.jsonl", [paraphrase(), BY_ID["ent-003"]])
    out = tmp_path / "leaks.json"
    args = ["leakage", str(tmp_path / "train.jsonl"), str(tmp_path / "test.jsonl"), "--json", str(out)]
    result = CliRunner().invoke(app, [*args, "--strict"])
    assert result.exit_code == 1, result.output
    assert "case ent-001 (train) and case ent-001p (test) share seed 'path-01'" in result.output
    assert "identical evidence" in result.output
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert payload["case_leaks"] >= 1 and payload["pairs"]["train|test"]["case_pairs"][0]["b"] == "ent-001p"
    clean = CliRunner().invoke(app, ["leakage", str(tmp_path / "train.jsonl"), str(tmp_path / "train.jsonl"), "--strict"])
    assert clean.exit_code == 1  # the same file twice: every case id is shared
