"""chain_coverage@k, hop1_recall@k and hop statistics on enterprise cases with hand-built traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.schema import Case, case_from_dict, load_cases
from hoprag.evaluation.hops import chain_coverage, evidence_count, hop1_recall, max_hop, step_count
from hoprag.records import Evidence, Hit, HopStep, Trace

pytestmark = pytest.mark.unit

CASES = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"


def hit(doc_id: str, start: int | None = None, end: int | None = None, rank: int = 1) -> Hit:
    return Hit(chunk_id=f"{doc_id}@{start}", doc_id=doc_id, score=1.0, rank=rank, retriever="t", start=start, end=end)


def ev(doc_id: str, start: int | None = None, end: int | None = None) -> Evidence:
    return Evidence(hit=hit(doc_id, start, end), text="", title="", hop=1, step_id="s1", sub_query="")


def step(step_id: str, hop: int, hits: list[Hit]) -> HopStep:
    return HopStep(step_id=step_id, hop=hop, sub_query=step_id, issued_query=step_id, hits=tuple(hits))


def trace(case_id: str, evidence: list[Evidence] = (), steps: list[HopStep] = ()) -> Trace:
    return Trace(run_id="r", case_id=case_id, question="q", steps=tuple(steps), evidence=tuple(evidence))


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {c.case_id: c for c in load_cases(CASES)}


def test_alternative_chain_satisfied(cases: dict[str, Case]) -> None:
    case = cases["ent-001"]
    # memo-4 + faq-2 + policy-8-v2 is the fourth valid chain; required_facts (the first) lacks contract-14.
    t = trace("ent-001", [ev("memo-4", 128, 256), ev("faq-2", 100, 200), ev("policy-8-v2", 0, 933)])
    assert chain_coverage(case, t, 3) == 1.0


def test_fact_at_rank_k_plus_one(cases: dict[str, Case]) -> None:
    case = cases["ent-001"]
    # policy-8-v2's fact needs [0, 83) and [457, 528): the fourth entry brings the second span.
    t = trace(
        "ent-001",
        [ev("memo-4", 128, 256), ev("faq-2", 100, 200), ev("policy-8-v2", 0, 128), ev("policy-8-v2", 448, 576)],
    )
    assert chain_coverage(case, t, 3) == 0.0
    assert chain_coverage(case, t, 4) == 1.0
    assert chain_coverage(case, t, 10) == 1.0


def test_non_overlapping_chunk_of_right_doc_does_not_count(cases: dict[str, Case]) -> None:
    case = cases["ent-003"]  # contract-31 [388, 436) or ticket-2290 [209, 265), then policy-11 [503, 544)
    near_miss = trace("ent-003", [ev("contract-31", 436, 600), ev("policy-11", 448, 576)])
    hit_it = trace("ent-003", [ev("contract-31", 384, 512), ev("policy-11", 448, 576)])
    assert chain_coverage(case, near_miss, 2) == 0.0
    assert chain_coverage(case, hit_it, 2) == 1.0


def test_doc_level_evidence(cases: dict[str, Case]) -> None:
    case = cases["ent-003"]
    assert chain_coverage(case, trace("ent-003", [ev("ticket-2290"), ev("policy-11")]), 2) == 1.0
    assert chain_coverage(case, trace("ent-003", [ev("ticket-2290"), ev("policy-17")]), 2) == 0.0


def test_case_without_chains_is_not_applicable(cases: dict[str, Case]) -> None:
    data = json.loads(cases["ent-014"].to_json())
    data["valid_chains"], data["required_facts"] = [], []
    case = case_from_dict(data)
    t = trace("ent-014", [ev("catalog-3")], [step("s1", 1, [hit("catalog-3")])])
    assert chain_coverage(case, t, 5) is None
    assert hop1_recall(case, t, 5) is None


def _comparison_steps(stored_out_of_order: bool = True) -> list[HopStep]:
    meridian = [hit("contract-27", 128, 256, rank=2), hit("memo-6", 128, 256, rank=1)]
    if not stored_out_of_order:
        meridian.reverse()
    return [
        step("halyard", 1, [hit("email-3", 256, 384, rank=1), hit("contract-22", 192, 320, rank=2)]),
        step("meridian", 1, meridian),
        step("families", 2, [hit("catalog-3", 512, 640, rank=1), hit("contract-27", 128, 256, rank=2)]),
    ]


def test_hop1_recall_parallel_branches(cases: dict[str, Case]) -> None:
    case = cases["ent-005"]
    # Starting facts per chain: {contract-22, contract-27}, {email-3, contract-27},
    # {contract-22, memo-6}, {contract-22, contract-27}.
    t = trace("ent-005", steps=_comparison_steps())
    # k=1: email-3 (branch 1) and memo-6 (rank 1 of branch 2, stored second) -> best chain 1/2.
    assert hop1_recall(case, t, 1) == 1 / 2
    # k=2: all four plans found -> every chain complete.
    assert hop1_recall(case, t, 2) == 1.0


def test_hop1_recall_ignores_later_hops(cases: dict[str, Case]) -> None:
    case = cases["ent-005"]
    # Only the Halyard branch at hop 1; contract-27 appears at hop 2 and must not count.
    steps = [_comparison_steps()[0], _comparison_steps()[2]]
    assert hop1_recall(case, trace("ent-005", steps=steps), 2) == 1 / 2
    assert hop1_recall(case, trace("ent-005"), 5) == 0.0


def test_hop1_recall_single_start_chain(cases: dict[str, Case]) -> None:
    case = cases["ent-014"]  # one chain; its starting fact is catalog-3 [638, 690)
    t = trace("ent-014", steps=[step("s1", 1, [hit("policy-14-v2", 0, 804, 1), hit("catalog-3", 600, 700, 2)])])
    assert hop1_recall(case, t, 1) == 0.0
    assert hop1_recall(case, t, 2) == 1.0


def test_cutoff_is_required(cases: dict[str, Case]) -> None:
    with pytest.raises(ValueError, match="k >= 1"):
        chain_coverage(cases["ent-001"], trace("ent-001"), None)


def test_hop_statistics(cases: dict[str, Case]) -> None:
    case = cases["ent-005"]
    t = trace("ent-005", [ev("email-3"), ev("catalog-3"), ev("memo-6")], _comparison_steps())
    assert max_hop(case, t) == 2.0
    assert step_count(case, t) == 3.0
    assert evidence_count(case, t) == 3.0
    assert (max_hop(case, trace("ent-005")), step_count(case, trace("ent-005"))) == (0.0, 0.0)
