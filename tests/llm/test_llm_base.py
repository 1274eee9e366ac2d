"""What the LLM base class adds to every backend: retries, backoff, cost, JSON repair."""

from __future__ import annotations

import random

import pytest
from pydantic import BaseModel

from hoprag.errors import ConfigError
from hoprag.llm import (
    Completion,
    LLMError,
    LLMJSONError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnavailableError,
    Message,
    ModelPrice,
    PriceTable,
    RetryPolicy,
    ScriptedLLM,
    normalize_messages,
    sum_usage,
)
from hoprag.records import Usage

pytestmark = pytest.mark.unit


class Verdict(BaseModel):
    sufficient: bool
    missing: list[str]


def test_string_prompt_becomes_one_user_message() -> None:
    assert normalize_messages("hi") == (Message("user", "hi"),)
    assert normalize_messages([{"role": "system", "content": "s"}, Message("user", "u")]) == (
        Message("system", "s"),
        Message("user", "u"),
    )


def test_invalid_role_error_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="valid roles: system, user, assistant"):
        normalize_messages([{"role": "bot", "content": "x"}])


def test_retryable_errors_are_retried_with_seeded_backoff(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue([LLMRateLimitError("busy"), LLMServerError("boom", status=503), LLMTimeoutError("slow"), "ok"])
    result = scripted_llm.complete("q")
    assert result.text == "ok" and result.attempts == 4
    assert len(scripted_llm.history) == 4
    rng = random.Random(0)  # RetryPolicy(): seed 0, initial 0.5 s, x2, jitter 0.25
    expected = [base * (1 + 0.25 * (2 * rng.random() - 1)) for base in (0.5, 1.0, 2.0)]
    assert scripted_llm.sleeps == pytest.approx(expected)


def test_backoff_is_capped_and_reproducible() -> None:
    policy = RetryPolicy(initial_delay=1.0, multiplier=3.0, max_delay=5.0, jitter=0.0, seed=7)
    llm = ScriptedLLM(retry=policy)
    assert [llm.backoff_delay(n) for n in range(4)] == [1.0, 3.0, 5.0, 5.0]
    a, b = ScriptedLLM(retry=RetryPolicy(seed=3)), ScriptedLLM(retry=RetryPolicy(seed=3))
    assert [a.backoff_delay(n) for n in range(5)] == [b.backoff_delay(n) for n in range(5)]


def test_retry_after_raises_the_delay_up_to_the_cap() -> None:
    llm = ScriptedLLM(retry=RetryPolicy(jitter=0.0, max_delay=4.0))
    assert llm.backoff_delay(0, LLMRateLimitError("busy", retry_after=2.0)) == 2.0
    assert llm.backoff_delay(0, LLMRateLimitError("busy", retry_after=30.0)) == 4.0


def test_retries_run_out_with_the_last_error() -> None:
    llm = ScriptedLLM(retry=RetryPolicy(max_retries=2))
    llm.enqueue([LLMServerError("a"), LLMServerError("b"), LLMServerError("c"), "never"])
    with pytest.raises(LLMServerError, match="c") as info:
        llm.complete("q")
    assert info.value.attempts == 3 and llm.pending == 1


def test_errors_that_cannot_heal_are_not_retried(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(LLMUnavailableError("http://127.0.0.1:9/v1", "connection refused"))
    with pytest.raises(LLMUnavailableError, match="127.0.0.1:9"):
        scripted_llm.complete("q")
    assert scripted_llm.sleeps == []


def test_cost_comes_from_the_price_table() -> None:
    prices = PriceTable(models={"scripted": ModelPrice(input_per_million=3.0, output_per_million=15.0)})
    llm = ScriptedLLM(prices=prices)
    llm.enqueue(Completion(text="x", usage=Usage(1000, 200), model="scripted"))
    # 1000 * 3 / 1e6 + 200 * 15 / 1e6
    assert llm.complete("q").usage == Usage(1000, 200, pytest.approx(0.003 + 0.003))


def test_json_reply_is_parsed_into_the_model(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue('```json\n{"sufficient": false, "missing": ["bridge"]}\n```')
    result = scripted_llm.complete("Enough evidence?", json_schema=Verdict)
    assert result.data == Verdict(sufficient=False, missing=["bridge"])
    call = scripted_llm.history[0]
    assert call.json_schema == Verdict.model_json_schema()
    assert call.messages[0].role == "system" and '"sufficient"' in call.messages[0].content


def test_json_instruction_is_appended_to_an_existing_system_message(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue('{"sufficient": true, "missing": []}')
    scripted_llm.complete([{"role": "system", "content": "You judge."}, {"role": "user", "content": "?"}],
                          json_schema=Verdict)
    messages = scripted_llm.history[0].messages
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].content.startswith("You judge.\n\nReply with a single JSON value")


def test_one_repair_round_sends_the_error_back(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue([
        Completion(text='{"sufficient": "maybe"}', usage=Usage(10, 5), model="scripted"),
        Completion(text='{"sufficient": true, "missing": []}', usage=Usage(30, 8), model="scripted"),
    ])
    result = scripted_llm.complete("Enough?", json_schema=Verdict)
    assert result.data == Verdict(sufficient=True, missing=[])
    assert result.usage == Usage(40, 13, 0.0) and result.attempts == 2
    repair = scripted_llm.history[1].messages
    assert repair[-2] == Message("assistant", '{"sufficient": "maybe"}')
    assert repair[-1].role == "user"
    assert "$.sufficient: Input should be a valid boolean" in repair[-1].content
    assert "$.missing: Field required" in repair[-1].content


def test_still_invalid_json_raises_naming_model_and_problem() -> None:
    llm = ScriptedLLM(model="tiny-model")
    llm.enqueue(["not json", '{"sufficient": 1, "missing": "x"}'])
    with pytest.raises(LLMJSONError) as info:
        llm.complete("Enough?", json_schema={"type": "object", "properties": {"sufficient": {"type": "boolean"}},
                                             "required": ["sufficient", "missing"]})
    error = info.value
    assert error.model == "tiny-model" and error.attempts == 2
    assert error.problem == "$.sufficient: expected boolean, got integer"
    assert error.text == '{"sufficient": 1, "missing": "x"}'
    assert str(error).startswith("tiny-model: reply is not valid JSON for the requested schema after 2 attempt(s)")
    assert "$.sufficient: expected boolean, got integer (reply: '{\"sufficient\": 1" in str(error)
    assert "Fix:" in str(error)


def test_sum_usage_adds_tokens_and_cost() -> None:
    assert sum_usage(Usage(1, 2, 0.5), Usage(3, 4, 0.25)) == Usage(4, 6, 0.75)
    assert sum_usage() == Usage()


def test_non_positive_timeout_is_refused() -> None:
    with pytest.raises(ConfigError, match="timeout"):
        ScriptedLLM(timeout=0)


def test_llm_error_names_model_and_fix() -> None:
    assert str(LLMError("failed", model="m", fix="do x")) == "m: failed. Fix: do x"
