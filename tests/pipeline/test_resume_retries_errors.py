"""Resuming a run answers again the questions whose trace is an error trace; a run that leaves any
exits 3 saying how many and how to retry them.

A real index over the bundled enterprise corpus is damaged part-way through a real ``hoprag run`` of
its 16 cases: its BM25 retrieval raises for the questions from the seventh on (as a corrupted index
would), then it is repaired and the run resumed.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from hoprag.datasets.schema import load_cases
from hoprag.errors import IndexLoadError
from hoprag.evaluation.runner import evaluate
from hoprag.index.bm25 import BM25Retriever
from hoprag.index.store import build_index
from hoprag.ingest.loaders import load_documents
from hoprag.io.traces import read_traces, read_traces_file
from hoprag.pipeline.multihop import MultiHopEngine
from hoprag.pipeline.batch import Question, run_questions
from hoprag.records import Trace

ENTERPRISE = Path(__file__).parents[2] / "data" / "enterprise"
TOTAL = 16  # the enterprise cases, 16 distinct questions (a repeated one would be answered from the cache)
HEALTHY = 6  # the questions answered before the index breaks
DAMAGED = TOTAL - HEALTHY


class IndexDamage:
    """Retrieval raises, as over a corrupted index, while answering the questions of ``cases``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, cases: set[str]) -> None:
        self.cases = cases
        self.current = ""
        answer, retrieve = MultiHopEngine.answer, BM25Retriever.retrieve
        damage = self

        def answering(engine, question, *, case_id="", run_id="", **options):  # type: ignore[no-untyped-def]
            damage.current = case_id
            return answer(engine, question, case_id=case_id, run_id=run_id, **options)

        def retrieving(retriever, query, *args, **options):  # type: ignore[no-untyped-def]
            if damage.current in damage.cases:
                raise IndexLoadError("index/bm25: the postings arrays are truncated. Fix: rebuild the index")
            return retrieve(retriever, query, *args, **options)

        monkeypatch.setattr(MultiHopEngine, "answer", answering)
        monkeypatch.setattr(BM25Retriever, "retrieve", retrieving)

    def repair(self) -> None:
        self.cases = set()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("resume-errors")
    build_index(load_documents(ENTERPRISE / "corpus.jsonl"), root / "index")
    shutil.copy(ENTERPRISE / "cases.jsonl", root / "cases.jsonl")
    assert len(load_cases(root / "cases.jsonl")) == TOTAL
    return root


def hoprag(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``hoprag ARGS`` in this process through the console entry point: code, stdout, stderr (folded)."""
    from hoprag.cli import main

    capsys.readouterr()
    saved, sys.argv = sys.argv, ["hoprag", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = saved
    captured = capsys.readouterr()
    return code, " ".join(captured.out.split()), " ".join(captured.err.split())


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.integration
def test_a_run_damaged_half_way_exits_3_and_its_resume_after_repair_answers_the_errors_again(
        work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)
    ids = [c.case_id for c in load_cases(work / "cases.jsonl")]
    code, _, err = hoprag(capsys, "run", "index", "cases.jsonl", "--out", "clean.jsonl", "-q")
    assert code == 0, err
    damage = IndexDamage(monkeypatch, set(ids[HEALTHY:]))

    code, out, err = hoprag(capsys, "run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q")
    assert code == 3 and "Traceback" not in err
    assert f"wrote {TOTAL} traces (0 already done, {DAMAGED} errors" in out
    assert err.count("error:") == 1
    assert f"error: {DAMAGED} of {TOTAL} questions failed (their traces in traces.jsonl have 'error' set" in err
    assert "Fix: remove the cause the 'error' field names, then run the same command again" in err
    written = lines_of(work / "traces.jsonl")[1:]
    assert [t["case_id"] for t in written if t["stop_reason"] == "error"] == ids[HEALTHY:]
    assert all("IndexLoadError: index/bm25" in t["error"] for t in written if t["stop_reason"] == "error")

    # --keep-errors keeps them as done: nothing to answer
    code, out, _ = hoprag(capsys, "run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q", "--keep-errors")
    assert code == 0 and f"wrote 0 traces ({TOTAL} already done, 0 errors" in out

    # resumed while still damaged: answered again, failed again, still exit 3
    code, out, err = hoprag(capsys, "run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q")
    assert code == 3
    assert f"wrote {DAMAGED} traces ({HEALTHY} already done, {DAMAGED} answered again after an error, " \
           f"{DAMAGED} errors" in out

    damage.repair()
    code, out, err = hoprag(capsys, "run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q")
    assert code == 0, err
    assert f"wrote {DAMAGED} traces ({HEALTHY} already done, {DAMAGED} answered again after an error, 0 errors" in out

    # nothing lost: the header, the first run, both retries
    header, *everything = lines_of(work / "traces.jsonl")
    assert len(everything) == TOTAL + 2 * DAMAGED
    assert {t["run_id"] for t in everything} == {header["run_id"]}
    # every reader takes the last trace of a retried case: one per case, no duplicate, none an error
    traces = read_traces(work / "traces.jsonl")
    assert sorted(t.case_id for t in traces) == sorted(ids)
    assert not any(t.error for t in traces)
    result = evaluate(load_cases(work / "cases.jsonl"), traces, ks=(2,))
    assert result.aggregate["duplicate_traces"] == 0 and result.duplicate_case_ids == ()
    code, _, err = hoprag(capsys, "eval", "cases.jsonl", "traces.jsonl", "--k", "2", "--strict")
    assert code == 0, err
    # and the retried traces are the ones an undamaged run writes
    clean = {t.case_id: t for t in read_traces(work / "clean.jsonl")}
    for trace in traces:
        assert trace.answer.text == clean[trace.case_id].answer.text
        assert [e.chunk_id for e in trace.evidence] == [e.chunk_id for e in clean[trace.case_id].evidence]

    code, out, _ = hoprag(capsys, "run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q")
    assert code == 0 and f"wrote 0 traces ({TOTAL} already done, 0 errors" in out


class FailingOn:
    """An engine that raises on chosen case ids (changed between runs), else answers with ``inner``."""

    name = "failing-on"

    def __init__(self, inner, fail_on: set[str]) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.fail_on, self.seen = inner, fail_on, []

    def answer(self, question: str, *, case_id: str = "", run_id: str = "") -> Trace:
        self.seen.append(case_id)
        if case_id in self.fail_on:
            raise TimeoutError("retriever timed out")
        return self.inner.answer(question, case_id=case_id, run_id=run_id)


@pytest.mark.unit
def test_the_library_retries_errors_unless_asked_to_keep_them(hotpot_index, hotpot_slice, tmp_path: Path) -> None:
    from hoprag.pipeline.factory import make_engine

    questions = [Question(c.case_id, c.query) for c in hotpot_slice.cases]
    failing = {questions[1].case_id, questions[3].case_id}
    engine = FailingOn(make_engine("single", hotpot_index), set(failing))
    out = tmp_path / "traces.jsonl"
    first = run_questions(engine, questions, out)
    assert (first.written, first.errors, first.retried) == (5, 2, 0)

    engine.seen.clear()
    kept = run_questions(engine, questions, out, retry_errors=False)
    assert engine.seen == [] and (kept.written, kept.resumed, kept.retried) == (0, 5, 0)

    engine.fail_on = {questions[3].case_id}  # one of the two is fixed
    again = run_questions(engine, questions, out)
    assert engine.seen == [questions[1].case_id, questions[3].case_id]
    assert (again.written, again.resumed, again.retried, again.errors) == (2, 3, 2, 1)
    assert again.run_id == first.run_id

    engine.seen.clear()
    engine.fail_on = set()
    last = run_questions(engine, questions, out)
    assert engine.seen == [questions[3].case_id] and (last.retried, last.errors) == (1, 0)
    assert len(out.read_text().splitlines()) == 1 + 5 + 2 + 1  # header, first run, two retries: nothing lost
    traces = read_traces(out)
    assert sorted(t.case_id for t in traces) == sorted(q.case_id for q in questions)
    assert not any(t.error for t in traces)


@pytest.mark.unit
def test_only_an_error_trace_followed_by_its_retry_is_left_out(tmp_path: Path) -> None:
    def trace(case_id: str, answer: str, error: str | None = None) -> str:
        data = {"run_id": "r", "case_id": case_id, "question": "q?", "answer": {"text": answer},
                "stop_reason": "error" if error else "sufficient", "error": error}
        return json.dumps(data)

    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([
        trace("a", "", "IndexLoadError: x"), trace("b", "one"), trace("a", "retried"),  # a: a retry
        trace("b", "two"),  # b: a real duplicate, both kept (the evaluation counts it)
        trace("c", "", "TimeoutError: y"),  # c: still an error, nothing after it
    ]) + "\n", encoding="utf-8")
    read = read_traces_file(path, lenient=True)  # a superseded error trace is no exclusion either
    assert [t.case_id for t in read.traces] == ["b", "a", "b", "c"] and read.exclusions == ()
    traces = read_traces(path)
    assert [(t.case_id, t.answer.text) for t in traces] == [("b", "one"), ("a", "retried"), ("b", "two"), ("c", "")]
