"""The scripted fake: queued replies and errors, call history, defaults, thread safety."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import BaseModel

from hoprag.errors import ConfigError
from hoprag.llm import Call, Completion, LLMTimeoutError, ScriptedLLM
from hoprag.llm.fake import ScriptExhausted
from hoprag.records import Usage

pytestmark = pytest.mark.unit


class Answer(BaseModel):
    answer: str


def test_replies_come_out_in_order_and_history_records_each_call(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(["first", {"answer": "Paris"}, Answer(answer="Lyon")])
    assert scripted_llm.complete("one", max_tokens=5).text == "first"
    assert scripted_llm.complete("two").text == '{"answer": "Paris"}'
    assert scripted_llm.complete("three", temperature=0.5, json_schema=Answer).data == Answer(answer="Lyon")
    assert [c.prompt for c in scripted_llm.history] == ["one", "two", "three"]
    assert [(c.max_tokens, c.temperature) for c in scripted_llm.history] == [(5, 0.0), (512, 0.0), (512, 0.5)]
    assert scripted_llm.history[2].json_schema == Answer.model_json_schema()


def test_usage_counts_words_and_punctuation(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue("Paris, France.")
    assert scripted_llm.complete("Capital of France?").usage == Usage(4, 4, 0.0)


def test_exceptions_are_raised_as_queued(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.retry = scripted_llm.retry.model_copy(update={"max_retries": 0})
    scripted_llm.enqueue([LLMTimeoutError("slow", timeout=1.0), LLMTimeoutError])
    with pytest.raises(LLMTimeoutError, match="slow"):
        scripted_llm.complete("q")
    with pytest.raises(LLMTimeoutError, match="scripted failure"):
        scripted_llm.complete("q")


def test_completion_and_callable_replies(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue([
        Completion(text="raw", usage=Usage(1, 1), model="other", finish_reason="length"),
        lambda call: call.prompt.upper(),
    ])
    first = scripted_llm.complete("q")
    assert (first.text, first.model, first.finish_reason) == ("raw", "other", "length")
    assert scripted_llm.complete("shout").text == "SHOUT"


def test_empty_queue_is_a_test_failure_not_an_llm_error() -> None:
    llm = ScriptedLLM()
    with pytest.raises(ScriptExhausted, match="no reply queued for call 1"):
        llm.complete("q")


def test_default_answers_when_the_queue_is_empty() -> None:
    llm = ScriptedLLM(["queued"], default=lambda call: f"echo {call.prompt}")
    assert [llm.complete(p).text for p in ("a", "b")] == ["queued", "echo b"]


def test_assert_consumed_reports_leftovers() -> None:
    llm = ScriptedLLM(["a", "b"])
    llm.complete("q")
    with pytest.raises(AssertionError, match="1 queued reply"):
        llm.assert_consumed()


def test_unsupported_reply_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot reply with a int"):
        ScriptedLLM([42]).complete("q")


def test_concurrent_calls_each_get_one_reply() -> None:
    llm = ScriptedLLM([str(i) for i in range(50)])
    with ThreadPoolExecutor(max_workers=8) as pool:
        texts = list(pool.map(lambda i: llm.complete(f"p{i}").text, range(50)))
    assert sorted(texts, key=int) == [str(i) for i in range(50)]
    assert len(llm.history) == 50 and llm.pending == 0


def test_call_exposes_system_text() -> None:
    llm = ScriptedLLM(["x"])
    llm.complete([{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}])
    call: Call = llm.history[0]
    assert (call.system, call.prompt) == ("rules", "q")
