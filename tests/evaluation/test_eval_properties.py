"""Metric invariants: bounds, monotonicity in k, permutation invariance, EM/F1 relations."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.answers import exact_match, f1, normalize
from hoprag.evaluation.hops import chain_coverage, hop1_recall
from hoprag.evaluation.runner import evaluate
from hoprag.records import Evidence, Hit, HopStep, Trace

pytestmark = pytest.mark.unit

CASES = load_cases(Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl")
# Documents the labels point at, plus a few that no fact uses.
DOCS = sorted({f.source_id for c in CASES for f in c.facts.values()} | {"contract-09", "memo-16", "faq-10"})


@st.composite
def hits(draw: st.DrawFn) -> Hit:
    doc = draw(st.sampled_from(DOCS))
    if draw(st.booleans()):
        start, end = None, None
    else:
        start = draw(st.integers(0, 900))
        end = start + draw(st.integers(1, 400))
    return Hit(chunk_id=f"{doc}@{start}", doc_id=doc, score=0.0, rank=draw(st.integers(1, 20)), retriever="h", start=start, end=end)


def as_evidence(hit: Hit) -> Evidence:
    return Evidence(hit=hit, text="", title="", hop=1, step_id="s", sub_query="")


@st.composite
def traces(draw: st.DrawFn, case_id: str) -> Trace:
    evidence = tuple(as_evidence(h) for h in draw(st.lists(hits(), max_size=12)))
    steps = tuple(
        HopStep(step_id=f"s{i}", hop=draw(st.integers(1, 3)), sub_query="", issued_query="", hits=tuple(draw(st.lists(hits(), max_size=6))))
        for i in range(draw(st.integers(0, 3)))
    )
    return Trace(run_id="r", case_id=case_id, question="q", steps=steps, evidence=evidence)


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(CASES), data=st.data())
def test_chain_coverage_bounded_and_monotone(case, data) -> None:
    trace = data.draw(traces(case.case_id))
    values = [chain_coverage(case, trace, k) for k in range(1, 14)]
    assert all(v in (0.0, 1.0) for v in values)
    assert values == sorted(values)
    recalls = [hop1_recall(case, trace, k) for k in range(1, 8)]
    assert all(0.0 <= r <= 1.0 for r in recalls)
    assert recalls == sorted(recalls)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_aggregate_invariant_to_trace_order(data) -> None:
    chosen = data.draw(st.lists(st.sampled_from(CASES), min_size=1, max_size=6, unique_by=lambda c: c.case_id))
    written = [data.draw(traces(c.case_id)) for c in chosen if data.draw(st.booleans())]
    shuffled = data.draw(st.permutations(written))
    a = evaluate(CASES, written, ks=(1, 3, 10)).to_json()
    b = evaluate(CASES, shuffled, ks=(1, 3, 10)).to_json()
    assert a == b
    for key in ("chain_coverage@1", "chain_coverage@3", "chain_coverage@10", "hop1_recall@3"):
        assert 0.0 <= a["aggregate"][key] <= 1.0
    assert a["aggregate"]["chain_coverage@1"] <= a["aggregate"]["chain_coverage@3"] <= a["aggregate"]["chain_coverage@10"]


WORDS = ["the", "a", "an", "The", "yes", "no", "noanswer", "7", "years", "Cat", "cat", "dog,", "!", "-", "KR-West", ""]
answers_text = st.one_of(st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join), st.text(max_size=20))


@settings(max_examples=400, deadline=None)
@given(prediction=answers_text, gold=answers_text)
def test_f1_bounds_and_identity(prediction: str, gold: str) -> None:
    score = f1(prediction, gold)
    assert 0.0 <= score <= 1.0
    same_tokens = Counter(normalize(prediction).split()) == Counter(normalize(gold).split())
    assert (score == 1.0) == same_tokens
    assert exact_match(prediction, gold) <= score
    assert f1(prediction, gold) == f1(gold, prediction)
