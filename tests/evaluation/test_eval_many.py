"""A measure's values at several cutoffs in one call (``Measure.many``) equal its definition at each
cutoff, on every bundled case and random traces (missing sources, unlocated hits, duplicates,
empty steps included); the runner's rows are the same with and without the one-call path; and a
forked evaluation's report equals the in-process one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from single_thread import in_single_threaded_process

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import CASES_PER_PROCESS, evaluate_chains
from hoprag.evaluation.chain_scoring import chain_measures
from hoprag.evaluation.runner import evaluate
from hoprag.executors import LocalExecutor
from hoprag.forks import ProcessExecutor, fork_supported
from hoprag.records import Answer, Citation, Claim, Evidence, Hit, HopStep, Trace

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
ENTERPRISE = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")


def _with_missing_source(case):
    """The case with its first chain's first fact marked as not found in the corpus by an importer."""
    fact_id = case.valid_chains[0][0]
    fact = case.facts[fact_id].model_copy(update={"source_id": f"missing:{case.facts[fact_id].source_id}"})
    return case.model_copy(update={"case_id": case.case_id + "-missing", "facts": {**case.facts, fact_id: fact}})


CASES = ENTERPRISE + [_with_missing_source(c) for c in ENTERPRISE[:4]]
DOCS = sorted({f.source_id for c in CASES for f in c.facts.values()} | {"contract-09", "faq-10"})
MEASURES = [m for m in chain_measures((1, 2, 3, 5, 10, 40)) if m.many is not None]


@st.composite
def hits(draw: st.DrawFn) -> Hit:
    doc = draw(st.sampled_from(DOCS))
    start = end = None
    if draw(st.integers(0, 4)):  # mostly located
        start = draw(st.integers(0, 900))
        end = start + draw(st.integers(0, 400))
    return Hit(f"{doc}@{start}", doc, 0.0, draw(st.integers(0, 12)), "h", start, end)


@st.composite
def traces(draw: st.DrawFn, case_id: str) -> Trace:
    evidence = tuple(Evidence(h, "", "", 1, "s0", "q") for h in draw(st.lists(hits(), max_size=14)))
    steps = tuple(HopStep(f"s{i}", draw(st.integers(1, 4)), "q", "q", tuple(draw(st.lists(hits(), max_size=8))))
                  for i in range(draw(st.integers(0, 4))))
    cited = (Citation(evidence[0].chunk_id, evidence[0].doc_id, 1),) if evidence else ()
    return Trace("r", case_id, "q", steps, evidence, Answer("x", (Claim("x", cited),)))


def test_the_measures_with_one_call_for_several_cutoffs() -> None:
    names = {m.name for m in MEASURES}
    assert names == {"chain_coverage", "hop1_recall", "path_precision", "hop2_recall", "hop3_recall",
                     "passage_recall", "all_passages"}


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(CASES), data=st.data(), ks=st.lists(st.integers(1, 30), min_size=1, max_size=6))
def test_many_equals_the_definition_at_every_cutoff(case, data, ks) -> None:
    trace = data.draw(traces(case.case_id))
    for measure in {m.name: m for m in MEASURES}.values():
        assert measure.many(case, trace, ks) == [measure.fn(case, trace, k) for k in ks], measure.name
        assert measure.compute_many(case, trace, ks) == [measure.at(k).compute(case, trace) for k in ks]
        assert measure.compute_many(case, None, ks) == [measure.at(k).compute(case, None) for k in ks]


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_rows_are_the_same_without_the_one_call_path(data) -> None:
    written = [data.draw(traces(c.case_id)) for c in CASES if data.draw(st.booleans())]
    measures = chain_measures((1, 3, 10))
    plain = [replace(m, many=None) for m in measures]
    fast = evaluate(CASES, written, measures=measures).to_json()
    slow = evaluate(CASES, written, measures=plain).to_json()
    assert json.dumps(fast) == json.dumps(slow)  # values and key order


@pytest.mark.skipif(not fork_supported(), reason="forks only on Linux")
def test_a_forked_evaluation_reports_exactly_what_one_process_does(request: pytest.FixtureRequest, monkeypatch) -> None:
    import os
    import random

    in_single_threaded_process(request)

    rng = random.Random(3)
    n = 2 * CASES_PER_PROCESS  # enough cases for two scoring processes
    cases = [c.model_copy(update={"case_id": f"{c.case_id}-{i}"}) for i, c in
             ((i, ENTERPRISE[i % len(ENTERPRISE)]) for i in range(n))]
    written = []
    for case in cases:
        gold = [case.facts[f] for f in case.valid_chains[0]]
        hits = [Hit(f"{fact.source_id}#{i}", fact.source_id, 1.0, i + 1, "h", fact.spans[-1].start, fact.spans[-1].end)
                for i, fact in enumerate(rng.sample(gold, rng.randint(0, len(gold))))]
        evidence = tuple(Evidence(h, "", "", 1, "s1", "q") for h in hits)
        written.append(Trace("r", case.case_id, case.query, (HopStep("s1", 1, "q", "q", tuple(hits)),), evidence,
                             Answer(case.answers[0] if case.answers and rng.random() < 0.5 else "no idea")))
    one = evaluate_chains(cases, written, executor=LocalExecutor())
    forks = []
    real_fork = os.fork

    def counted_fork() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted_fork)
    forked = evaluate_chains(cases, written, executor=ProcessExecutor(workers=2))
    monkeypatch.undo()
    assert len(forks) == 2  # two scoring processes really ran
    assert json.dumps(forked.to_json()) == json.dumps(one.to_json())
    assert forked.failures == one.failures and forked.stopping == one.stopping
