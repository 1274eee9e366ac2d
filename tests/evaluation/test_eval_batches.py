"""The chain evaluation scores cases in batches on an executor: the report must not depend on how
the cases are cut or how many threads score them (the Ray executor: tests/ray/test_ray_eval.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.labels import verify_labels
from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.chain_scoring import case_batches
from hoprag.io.traces import read_traces
from hoprag.executors import LocalExecutor
from hoprag.ingest.loaders import load_documents

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
DATA = ROOT / "data" / "enterprise"
CASES = load_cases(DATA / "cases.jsonl")
# ent-003, ent-012 and ent-007 are cases; ent-999 names none
TRACES = read_traces(ROOT / "tests" / "data" / "eval_traces.jsonl")


def test_case_batches_cut_the_cases_in_order() -> None:
    by_case = {t.case_id: t for t in TRACES}
    assert [len(b.cases) for b in case_batches(CASES, by_case, None)] == [16]  # one worker: one batch
    # two workers: about 4 batches each, ceil(16 / 8) = 2 cases per batch
    assert [len(b.cases) for b in case_batches(CASES, by_case, None, workers=2)] == [2] * 8
    batches = case_batches(CASES, by_case, by_case, size=5)
    assert [len(b.cases) for b in batches] == [5, 5, 5, 1]
    assert [c.case_id for b in batches for c in b.cases] == [c.case_id for c in CASES]
    first = batches[0]
    assert [c.case_id for c in first.cases] == ["ent-001", "ent-002", "ent-003", "ent-004", "ent-005"]
    assert [t is not None for t in first.traces] == [False, False, True, False, False]
    assert first.oracle == first.traces
    assert case_batches([], by_case, None) == []


def test_the_report_is_the_same_however_the_cases_are_batched_and_scored() -> None:
    traces = [*TRACES, TRACES[0]]  # a duplicate of ent-003 as well as the unknown ent-999
    documents = [d for d in load_documents(DATA / "corpus.jsonl") if d.id != "faq-2"]
    labels = verify_labels(CASES, documents)
    options = dict(ks=(2, 10), oracle_traces=TRACES, corpus_ids={d.id for d in documents}, label_report=labels)
    whole = evaluate_chains(CASES, traces, **options)
    assert whole.aggregate["duplicate_traces"] == 1 and whole.aggregate["unknown_traces"] == 1
    assert whole.unknown_case_ids == ("ent-999",) and whole.duplicate_case_ids == ("ent-003",)
    expected = json.dumps(whole.to_json())
    for executor, size in ((LocalExecutor(), 1), (LocalExecutor(workers=2), 3), (LocalExecutor(workers=3), None)):
        report = evaluate_chains(CASES, traces, executor=executor, batch_size=size, **options)
        assert json.dumps(report.to_json()) == expected, (executor, size)  # key order included
        assert (report.unknown_case_ids, report.duplicate_case_ids) == (whole.unknown_case_ids, whole.duplicate_case_ids)
        assert report.traces == whole.traces
