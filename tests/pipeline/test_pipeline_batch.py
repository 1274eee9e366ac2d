from __future__ import annotations

import json

import pytest

from hoprag.io.traces import read_traces
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.batch import Question, questions_from_cases, run_questions
from hoprag.records import Trace

pytestmark = pytest.mark.unit


class FlakyEngine:
    """Raises on chosen case ids; otherwise answers with the wrapped engine."""

    name = "flaky"

    def __init__(self, inner, fail_on: set[str]):
        self.inner = inner
        self.fail_on = fail_on
        self.seen: list[str] = []

    def answer(self, question: str, *, case_id: str = "", run_id: str = "") -> Trace:
        self.seen.append(case_id)
        if case_id in self.fail_on:
            raise TimeoutError("retriever timed out")
        return self.inner.answer(question, case_id=case_id, run_id=run_id)


def test_questions_carry_no_gold_labels(hotpot_slice):
    questions = questions_from_cases(hotpot_slice.cases)
    assert [q.case_id for q in questions] == [c.case_id for c in hotpot_slice.cases]
    assert all(set(vars(q)) == {"case_id", "text"} for q in questions)


def test_every_question_gets_a_trace_even_when_the_engine_fails(hotpot_index, hotpot_slice, tmp_path):
    questions = questions_from_cases(hotpot_slice.cases)
    failing = questions[1].case_id
    engine = FlakyEngine(make_engine("multihop", hotpot_index), {failing})
    out = tmp_path / "traces.jsonl"
    summary = run_questions(engine, questions, out, run_id="run-1")
    traces = read_traces(out)
    assert [t.case_id for t in traces] == [q.case_id for q in questions]
    assert summary.written == len(questions) and summary.errors == 1
    broken = next(t for t in traces if t.case_id == failing)
    assert broken.stop_reason == "error" and "TimeoutError" in broken.error and broken.answer.abstained
    assert {t.run_id for t in traces} == {"run-1"}


def test_resume_skips_finished_cases_and_keeps_the_run_id(hotpot_index, hotpot_slice, tmp_path):
    questions = questions_from_cases(hotpot_slice.cases)
    out = tmp_path / "traces.jsonl"
    engine = FlakyEngine(make_engine("single", hotpot_index), set())
    first = run_questions(engine, questions[:2], out)  # a run that stopped half-way
    engine.seen.clear()
    second = run_questions(engine, questions, out)
    assert engine.seen == [q.case_id for q in questions[2:]]
    assert second.resumed == 2 and second.written == len(questions) - 2 and second.run_id == first.run_id
    header, *lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert header["hoprag_traces"] == 1 and header["run_id"] == first.run_id and header["engine"] == "flaky"
    assert sorted(line["case_id"] for line in lines) == sorted(q.case_id for q in questions)


def test_no_resume_starts_over(hotpot_index, tmp_path):
    out = tmp_path / "traces.jsonl"
    engine = make_engine("single", hotpot_index)
    run_questions(engine, [Question("a", "Rush drummer")], out)
    summary = run_questions(engine, [Question("b", "shrub genus")], out, resume=False)
    assert [t.case_id for t in read_traces(out)] == ["b"] and summary.resumed == 0
