"""Fact matching: doc ids, span overlap, doc-level items, unlocatable sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.schema import Case, Fact, Span, case_from_dict, load_cases
from hoprag.evaluation.matching import covered_facts, fact_covered, overlaps
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit

CASES = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"


def hit(doc_id: str, start: int | None = None, end: int | None = None, rank: int = 1) -> Hit:
    return Hit(chunk_id=f"{doc_id}@{start}", doc_id=doc_id, score=1.0, rank=rank, retriever="t", start=start, end=end)


def ev(doc_id: str, start: int | None = None, end: int | None = None) -> Evidence:
    return Evidence(hit=hit(doc_id, start, end), text="", title="", hop=1, step_id="s1", sub_query="")


@pytest.fixture(scope="module")
def ent001() -> Case:
    return {c.case_id: c for c in load_cases(CASES)}["ent-001"]


def raw_case(case_id: str) -> dict:
    for line in CASES.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["case_id"] == case_id:
            return obj
    raise LookupError(case_id)


def test_overlap_is_half_open() -> None:
    span = Span(start=281, end=354, text="x" * 73)
    assert overlaps(256, 512, span)
    assert overlaps(353, 400, span)  # shares character 353
    assert not overlaps(0, 281, span)  # ends exactly where the span starts
    assert not overlaps(354, 600, span)  # starts exactly where the span ends


def test_empty_span_is_a_point() -> None:
    point = Span(start=10, end=10, text="")
    assert overlaps(10, 20, point)
    assert not overlaps(0, 10, point)


def test_single_span_fact(ent001: Case) -> None:
    fact = ent001.facts["contract-14:orion-plan"]  # contract-14 [281, 354)
    assert fact_covered(fact, [hit("contract-14", 256, 512)])
    assert not fact_covered(fact, [hit("contract-14", 0, 281)])
    assert not fact_covered(fact, [hit("memo-4", 256, 512)])  # same offsets, other document
    assert not fact_covered(fact, [])


def test_doc_level_item_covers_whole_document(ent001: Case) -> None:
    fact = ent001.facts["policy-8-v2:skyline-retention"]  # two spans in policy-8-v2
    assert fact_covered(fact, [ev("policy-8-v2")])
    assert not fact_covered(fact, [ev("policy-8-v1")])


def test_multi_span_fact_needs_every_span(ent001: Case) -> None:
    fact = ent001.facts["policy-8-v2:skyline-retention"]  # [0, 83) and [457, 528)
    assert not fact_covered(fact, [ev("policy-8-v2", 400, 600)])
    assert not fact_covered(fact, [ev("policy-8-v2", 528, 933), ev("policy-8-v2", 0, 100)])
    assert fact_covered(fact, [ev("policy-8-v2", 400, 600), ev("policy-8-v2", 0, 100)])
    assert fact_covered(fact, [ev("policy-8-v2", 0, 933)])


def test_fact_without_spans_is_covered_by_its_document() -> None:
    fact = Fact(source_id="memo-4")
    assert fact_covered(fact, [hit("memo-4", 700, 721)])
    assert not fact_covered(fact, [hit("memo-6", 0, 759)])


def test_missing_source_is_never_covered() -> None:
    data = raw_case("ent-014")
    data["facts"]["gap"] = {"source_id": "missing:Some Title", "spans": []}
    data["valid_chains"][0].append("gap")
    case = case_from_dict(data)
    items = [hit("missing:Some Title"), hit("catalog-3"), hit("policy-14-v2")]
    assert covered_facts(case, items) == {"catalog-3:kp420-family", "policy-14-v2:ironbark-region"}


def test_covered_facts_over_evidence(ent001: Case) -> None:
    items = [
        ev("memo-4", 128, 256),  # [167, 259): overlaps
        ev("faq-2", 100, 200),  # [121, 198)
        ev("policy-8-v2", 448, 576),  # only the second span of the retention fact
        ev("contract-14", 400, 600),  # after [281, 354)
    ]
    assert covered_facts(ent001, items) == {"memo-4:orion-plan", "faq-2:kp214-family"}
    assert covered_facts(ent001, items + [ev("policy-8-v2", 0, 128)]) == {
        "memo-4:orion-plan",
        "faq-2:kp214-family",
        "policy-8-v2:skyline-retention",
    }
