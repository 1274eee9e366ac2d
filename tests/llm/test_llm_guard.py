"""The fault-containment pieces on their own: the question scope, the circuit breaker, the guard."""

from __future__ import annotations

import time

import pytest

from hoprag.errors import ConfigError
from hoprag.llm import CircuitBreaker, Fallback, LLMGuard, LLMSettings, current_scope, question_scope

pytestmark = pytest.mark.unit


def test_a_scope_keeps_the_first_budget_and_counts_fallbacks_per_role():
    with question_scope() as scope:
        assert current_scope() is scope and scope.remaining() is None
        deadline = scope.set_budget(30.0)
        assert scope.set_budget(5.0) == deadline and scope.budget == 30.0  # the first budget holds
        for role, message in (("judge", "down"), ("judge", "down"), ("planner", "down"), ("synthesizer", "slow")):
            scope.record(Fallback(role=role, backend="openai:m", cause="error", message=message))
        scope.note("fitted")
        scope.note("fitted")
    assert current_scope() is None
    assert scope.counts() == {"judge": 2, "planner": 1, "synthesizer": 1}
    assert scope.warnings() == (
        "judge ×2, planner (openai:m) fell back to offline: down",
        "synthesizer (openai:m) fell back to offline: slow",
        "fitted",
    )


def test_the_breaker_opens_after_consecutive_failures_only():
    breaker = CircuitBreaker("openai:m", threshold=3)
    assert breaker.failure("a") is False and breaker.failure("b") is False
    breaker.success()  # a success in between starts the count again
    assert breaker.failure("c") is False and breaker.failure("d") is False
    assert breaker.failure("e") is True and breaker.open and breaker.allow() is False
    assert "after 3 consecutive failed calls (last: e)" in (breaker.reason or "")
    assert breaker.failure("f") is False  # opened once, recorded once


def test_an_open_breaker_can_let_one_probe_through_after_reset_after():
    breaker = CircuitBreaker("openai:m", threshold=1, reset_after=0.05)
    breaker.failure("down")
    assert breaker.allow() is False
    time.sleep(0.06)
    assert breaker.allow() == "probe" and breaker.allow() is False  # one probe at a time
    assert breaker.failure("still down") is True and breaker.allow() is False  # reopened
    time.sleep(0.06)
    assert breaker.allow() == "probe"
    breaker.abandon()  # the probe was not made: another may try
    assert breaker.allow() == "probe"
    breaker.success()
    assert not breaker.open and breaker.allow() is True


def test_the_guard_shares_one_breaker_per_backend_and_reports_the_open_ones():
    guard = LLMGuard(breaker_threshold=1)
    a, b = object(), object()
    assert guard.breaker(a) is guard.breaker(a) and guard.breaker(a) is not guard.breaker(b)
    guard.breaker(b).failure("refused")
    assert len(guard.opened()) == 1 and "refused" in guard.opened()[0]
    assert LLMGuard(budget=0).budget is None  # 0 = no budget
    with pytest.raises(ConfigError, match="budget must be >= 0"):
        LLMGuard(budget=-1)
    with pytest.raises(ConfigError, match="threshold must be at least 1"):
        CircuitBreaker("x", threshold=0)


def test_settings_give_each_backend_only_what_applies_to_it():
    settings = LLMSettings(base_url="http://127.0.0.1:8080/v1", api_key="sk-secret", n_ctx=4096, retries=1, timeout=5)
    openai = settings.backend_options("openai:m")
    assert openai["base_url"] == "http://127.0.0.1:8080/v1" and openai["api_key"] == "sk-secret" and "n_ctx" not in openai
    local = settings.backend_options("llamacpp:m.gguf")
    assert local["n_ctx"] == 4096 and "base_url" not in local and local["retry"].max_retries == 1
    assert settings.make("offline") is None
    assert "sk-secret" not in repr(settings)  # the key is not printed
    guard = LLMSettings(budget=0, strict=True).guard()
    assert guard.budget is None and guard.strict
