"""Coverage computed once per case and trace gives what the per-measure definitions give.

``first_cover`` answers every prefix at once; it must agree with ``fact_covered`` (the definition)
on every prefix, and an evaluation with the memo on must give the rows each measure gives on its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.datasets.schema import Case, Fact, Span, load_cases
from hoprag.evaluation.chain_eval import chain_measures, evaluate_chains
from hoprag.evaluation.graph import evidence_cover, step_candidates, step_cover
from hoprag.evaluation.hops import hop1_candidates
from hoprag.evaluation.matching import covered_facts, covered_within, fact_covered, first_cover
from hoprag.evaluation.memo import evaluation_memo, memoized
from hoprag.io.traces import read_traces
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
CASES = ROOT / "data" / "enterprise" / "cases.jsonl"
TRACES = ROOT / "tests" / "data" / "eval_traces.jsonl"

DOCS = ("a", "b", "missing:c")
spans = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)).map(lambda p: Span(start=p[0], end=p[0] + p[1], text="")),
                 max_size=3)
facts = st.dictionaries(st.sampled_from(["f1", "f2", "f3", "f4"]),
                        st.builds(lambda doc, s: Fact(source_id=doc, spans=s), st.sampled_from(DOCS), spans),
                        min_size=1)
offsets = st.one_of(st.none(), st.tuples(st.integers(0, 50), st.integers(1, 20)))
items = st.lists(st.tuples(st.sampled_from(DOCS + ("z",)), offsets, st.booleans()), max_size=8)


def _item(doc: str, where: tuple[int, int] | None, as_evidence: bool) -> Hit | Evidence:
    start, end = (None, None) if where is None else (where[0], where[0] + where[1])
    hit = Hit(chunk_id=f"{doc}#{start}", doc_id=doc, score=1.0, rank=1, retriever="t", start=start, end=end)
    return Evidence(hit=hit, text="", title="", hop=1, step_id="s1", sub_query="") if as_evidence else hit


@settings(max_examples=300, deadline=None)
@given(facts, items)
def test_first_cover_agrees_with_the_definition_on_every_prefix(case_facts, raw) -> None:
    case = Case(case_id="c", query="q", facts=case_facts)
    listed = [_item(*r) for r in raw]
    cover = first_cover(case, enumerate(listed, start=1))
    for k in range(len(listed) + 1):
        expected = {f for f, fact in case.facts.items() if fact_covered(fact, listed[:k])}
        assert covered_within(cover, k) == expected == covered_facts(case, listed[:k])


@pytest.fixture(scope="module")
def scored() -> tuple[list[Case], list]:
    cases = load_cases(CASES)
    traces = read_traces(TRACES)
    known = {c.case_id for c in cases}
    return cases, [t for t in traces if t.case_id in known]


def test_step_and_evidence_covers_match_their_candidate_lists(scored) -> None:
    cases, traces = scored
    by_id = {c.case_id: c for c in cases}
    for trace in traces:
        case = by_id[trace.case_id]
        for k in (1, 2, 5, 10):
            assert covered_within(evidence_cover(case, trace), k) == covered_facts(case, trace.evidence[:k])
            assert covered_within(step_cover(case, trace, hop=1), k) == covered_facts(case, hop1_candidates(trace, k))
            assert covered_within(step_cover(case, trace), k) == covered_facts(case, step_candidates(trace, k))


def test_an_evaluation_gives_the_rows_each_measure_gives_on_its_own(scored) -> None:
    cases, traces = scored
    report = evaluate_chains(cases, traces, ks=(2, 5, 10))
    last = {t.case_id: t for t in traces}
    rows = {r["case_id"]: r for r in report.cases}
    for measure in chain_measures((2, 5, 10)):
        for case in cases:
            # outside an evaluation nothing is memoised: each call computes from the definitions
            assert rows[case.case_id][str(measure)] == measure.compute(case, last.get(case.case_id)), (case.case_id, str(measure))


def test_memo_keeps_values_only_inside_an_evaluation() -> None:
    calls: list[int] = []
    key = object()

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert memoized("x", (key,), compute) == 1 and memoized("x", (key,), compute) == 2
    with evaluation_memo():
        assert memoized("x", (key,), compute) == 3
        assert memoized("x", (key,), compute) == 3
        with evaluation_memo():  # a nested evaluation shares the outer memo
            assert memoized("x", (key,), compute) == 3
    assert memoized("x", (key,), compute) == 4
