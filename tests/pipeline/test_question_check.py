"""One question limit for every entry point: the engines refuse, the runner records, nothing stalls."""

from __future__ import annotations

import inspect
import json
import time

import pytest

import hoprag.pipeline as pipeline_package
from hoprag.errors import InputError
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.question_check import MAX_QUESTION_CHARS, check_question
from hoprag.pipeline.batch import Question, run_questions

pytestmark = pytest.mark.unit


class CountingRetriever:
    """Wraps a retriever and counts the calls that reach it."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0
        self.name = getattr(inner, "name", "bm25")

    def retrieve(self, *args, **kwargs):
        self.calls += 1
        return self.inner.retrieve(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_the_limit_and_what_is_refused() -> None:
    at_limit = "why " * (MAX_QUESTION_CHARS // 4)
    assert len(at_limit) == MAX_QUESTION_CHARS
    assert check_question(at_limit) is at_limit  # returned unchanged: traces of valid questions are as before
    with pytest.raises(InputError, match=r"10,001 characters long; a question may hold at most 10,000\. Fix: "):
        check_question(at_limit + "?")
    with pytest.raises(InputError, match=r"the question is empty\. Fix: "):
        check_question(" \n\t")
    # a byte that was not UTF-8 on the command line arrives as a lone surrogate (Python's surrogateescape)
    with pytest.raises(InputError, match=r"bytes that are not UTF-8 text \(at character 5\)\. Fix: "):
        check_question("who \udcff founded it?")
    assert check_question("Wer gründete Kestrel? 谁") == "Wer gründete Kestrel? 谁"


def _engine_classes() -> list[type]:
    """Every class in hoprag.pipeline with an ``answer(question, *, case_id, run_id)`` entry."""
    import importlib
    import pkgutil

    found = []
    for module in pkgutil.iter_modules(pipeline_package.__path__):
        mod = importlib.import_module(f"hoprag.pipeline.{module.name}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            answer = getattr(cls, "answer", None)
            if cls.__module__ != mod.__name__ or answer is None or not callable(answer):
                continue
            params = inspect.signature(answer).parameters
            if "case_id" in params and "run_id" in params and not getattr(cls, "_is_protocol", False):
                found.append(cls)
    return found


@pytest.mark.parametrize("engine_name", ["single", "multihop"])
def test_every_engine_refuses_before_any_work(hotpot_index, engine_name) -> None:
    engine = make_engine(engine_name, hotpot_index)
    counting = CountingRetriever(engine.retriever)
    engine.retriever = counting
    with pytest.raises(InputError, match="may hold at most 10,000"):
        engine.answer("x" * (MAX_QUESTION_CHARS + 1), case_id="long")
    assert counting.calls == 0
    engine.answer("Which magazine was started first?", case_id="ok")
    assert counting.calls >= 1


def test_no_engine_class_bypasses_the_check(hotpot_index) -> None:
    """A new engine class must be built by the factory and refuse like the others."""
    classes = {cls.__name__ for cls in _engine_classes()}
    built = {type(make_engine(name, hotpot_index)).__name__ for name in ("single", "multihop")}
    assert classes <= built, f"engine classes the limit test does not cover: {sorted(classes - built)}"


def test_run_records_an_over_long_question_and_goes_on(hotpot_index, tmp_path) -> None:
    engine = make_engine("multihop", hotpot_index)
    questions = [Question("long", "who " * 50_000), Question("short", "Which magazine was started first?")]
    out = tmp_path / "traces.jsonl"
    start = time.perf_counter()
    summary = run_questions(engine, questions, out, resume=False)
    assert time.perf_counter() - start < 10  # 200,000 characters used to stall a run for minutes
    assert (summary.written, summary.errors) == (2, 1)
    traces = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    long, short = traces
    assert long["case_id"] == "long" and long["stop_reason"] == "error"
    assert "200,000 characters long; a question may hold at most 10,000. Fix: " in long["error"]
    assert short["stop_reason"] != "error"
