"""The LLM contract: a backend implements ``_complete``; the base builds ``complete`` on it.

``complete`` adds what every backend needs the same way: message validation, retries with
exponential backoff and seeded jitter for retryable errors (rate limits, 5xx, timeouts), wall-clock
latency, cost from a :class:`~hoprag.llm.pricing.PriceTable`, and JSON output checked against a
schema with one repair round before :class:`~hoprag.llm.errors.LLMJSONError`.

A caller may give ``complete`` a ``deadline`` (a ``time.monotonic()`` instant, e.g. the end of a
question's model budget). Each attempt runs inside one wall-clock bound of
:mod:`hoprag.llm.deadline`: ``timeout`` seconds from its start, never past the deadline, enforced on
every socket operation of the call (connect, each read, each write), so a server that trickles or
stalls cannot stretch it; no backoff wait runs past the deadline, and once it has passed no further
attempt is made. Subclasses cannot override ``complete`` or its attempt loop, so no backend skips
the bound. A context-length error is never
retried as is; the backend learns the context window from it (``context_window``) so callers can
fit the next prompt (:meth:`LLM.prompt_tokens` estimates a prompt's size).
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hoprag.errors import ConfigError
from hoprag.llm import deadline as call_deadline
from hoprag.llm.errors import LLMBudgetError, LLMContextLengthError, LLMError, LLMJSONError, LLMRateLimitError
from hoprag.llm.pricing import PriceTable
from hoprag.llm.schemas import ResolvedSchema, SchemaLike, parse_json_reply, resolve_schema
from hoprag.records import Usage

ROLES = ("system", "user", "assistant")
DEFAULT_MAX_TOKENS = 512
DEFAULT_TIMEOUT = 60.0
#: tokens per character assumed for a model whose tokenizer is not at hand (≈ 3.3 characters per
#: token: on the safe side for English, whose average is nearer 4)
TOKENS_PER_CHAR = 0.3
#: tokens a chat template adds around each message (role markers, separators)
MESSAGE_OVERHEAD_TOKENS = 8

@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


MessagesLike = str | Sequence[Message | Mapping[str, Any]]


@dataclass(frozen=True)
class Completion:
    """What one ``complete`` call returns.

    ``usage`` sums every call made for it (a JSON repair round included); ``latency_ms`` is wall
    time including retries; ``data`` is the parsed JSON (a pydantic instance when a model class was
    given) for JSON requests, else None; ``raw`` is the backend's last response, for debugging.
    """

    text: str
    usage: Usage
    model: str
    latency_ms: float = 0.0
    raw: Any = None
    data: Any = None
    attempts: int = 1
    finish_reason: str | None = None


class RetryPolicy(BaseModel):
    """Retries for retryable errors: delay_n = min(max_delay, initial_delay * multiplier**n) * (1 ± jitter).

    A server's Retry-After hint raises the delay up to ``max_delay``. The jitter comes from a
    ``random.Random(seed)`` owned by each LLM, so a run's delays are reproducible.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(default=3, ge=0)
    initial_delay: float = Field(default=0.5, ge=0.0)
    multiplier: float = Field(default=2.0, ge=1.0)
    max_delay: float = Field(default=8.0, ge=0.0)
    jitter: float = Field(default=0.25, ge=0.0, le=1.0)
    seed: int = 0


def normalize_messages(messages: MessagesLike) -> tuple[Message, ...]:
    """Accept a prompt string, Message objects or ``{"role", "content"}`` dicts; reject anything else."""
    if isinstance(messages, str):
        messages = [Message("user", messages)]
    out: list[Message] = []
    for i, item in enumerate(messages):
        if isinstance(item, Message):
            msg = item
        elif isinstance(item, Mapping) and "role" in item and "content" in item:
            msg = Message(str(item["role"]), item["content"])
        else:
            raise ConfigError(f"message {i} must be a Message or a dict with 'role' and 'content', got {item!r}")
        if msg.role not in ROLES:
            raise ConfigError(f"message {i} has role {msg.role!r}; valid roles: {', '.join(ROLES)}")
        if not isinstance(msg.content, str):
            raise ConfigError(f"message {i} content must be a string, got {type(msg.content).__name__}")
        out.append(msg)
    if not out:
        raise ConfigError("complete() needs at least one message")
    return tuple(out)


def sum_usage(*usages: Usage) -> Usage:
    """Add token counts and cost."""
    return Usage(
        prompt_tokens=sum(u.prompt_tokens for u in usages),
        completion_tokens=sum(u.completion_tokens for u in usages),
        cost=sum(u.cost for u in usages),
    )


def json_instruction(schema: Mapping[str, Any]) -> str:
    """The system text that asks for JSON; sent with every JSON request, constrained or not."""
    return (
        "Reply with a single JSON value and nothing else (no prose, no code fence). "
        "It must be valid against this JSON Schema:\n" + json.dumps(schema, separators=(",", ":"), sort_keys=True)
    )


def repair_prompt(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")
    return (
        f"Your reply was not valid: {shown}. Reply again with only the corrected JSON value, "
        "valid against the schema, and nothing else."
    )


class LLM(ABC):
    """Base of every backend. Subclasses set ``name`` and implement :meth:`_complete`.

    ``context_window`` is the model's context size in tokens when known (a local model knows it;
    an HTTP backend learns it from the first context-length error), else None.
    """

    name: str = "llm"
    context_window: int | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # every call must pass through the base's attempt loop, which holds the call's deadline
        own = sorted(name for name in _SEALED if name in vars(cls))
        if own:
            raise TypeError(f"{cls.__name__} overrides {', '.join(own)}: a backend implements _complete only, so"
                            " every call keeps the deadline of hoprag.llm.deadline")

    def __init__(
        self,
        model: str,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        prices: PriceTable | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"timeout must be positive seconds or None, got {timeout}")
        self.model = model
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.prices = prices or PriceTable()
        self._sleep = sleep
        self._rng = random.Random(self.retry.seed)
        self._rng_lock = threading.Lock()
        self.tokens_per_char = TOKENS_PER_CHAR

    @property
    def spec(self) -> str:
        """The identity of this backend and model, as ``make_llm`` reads it; use it in cache keys."""
        return f"{self.name}:{self.model}"

    def attempt_timeout(self) -> float | None:
        """The time limit of the attempt in progress: ``timeout``, cut to what the caller's deadline left
        when it started (``timeout`` outside an attempt). :mod:`hoprag.llm.deadline` holds the attempt to it."""
        allowed = call_deadline.allowed()
        return self.timeout if allowed is None else max(allowed, 1e-3)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``; an estimate from its length unless the backend has the model's tokenizer."""
        return math.ceil(len(text) * self.tokens_per_char)

    def prompt_tokens(self, messages: MessagesLike, json_schema: SchemaLike | None = None) -> int:
        """Tokens the prompt of ``complete(messages, json_schema=...)`` takes (the JSON instruction included)."""
        msgs = normalize_messages(messages)
        if json_schema is not None:
            msgs = _with_system(msgs, json_instruction(resolve_schema(json_schema).schema))
        return sum(self.count_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for m in msgs)

    @abstractmethod
    def _complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None,
    ) -> Completion:
        """Make one call. ``json_schema`` asks for constrained JSON where the backend can do it.

        Raise :class:`LLMError` subclasses only; set ``retryable`` errors for transient failures.
        ``latency_ms``, ``attempts`` and ``usage.cost`` of the result are filled in by the base.
        """

    def complete(
        self,
        messages: MessagesLike,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        json_schema: SchemaLike | None = None,
        deadline: float | None = None,
    ) -> Completion:
        """Complete a chat; with ``json_schema`` (a JSON Schema dict or pydantic model class) return JSON.

        ``deadline`` is a ``time.monotonic()`` instant no attempt, wait or repair round may pass.
        Raises LLMJSONError when the reply is not valid after one repair round, the backend's
        LLMError once retries (or the deadline) are spent, and LLMBudgetError when the deadline has
        passed before a call could be made.
        """
        msgs = normalize_messages(messages)
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {temperature}")
        start = time.perf_counter()
        if json_schema is None:
            result, attempts = self._call(msgs, max_tokens, temperature, None, deadline)
            return self._finish(result, start, attempts, [result.usage])
        resolved = resolve_schema(json_schema)
        msgs = _with_system(msgs, json_instruction(resolved.schema))
        first, attempts = self._call(msgs, max_tokens, temperature, resolved.schema, deadline)
        value, problems = _check(first.text, resolved)
        if not problems:
            return self._finish(first, start, attempts, [first.usage], data=value)
        repair = (*msgs, Message("assistant", first.text), Message("user", repair_prompt(problems)))
        second, more = self._call(repair, max_tokens, temperature, resolved.schema, deadline)
        value, problems = _check(second.text, resolved)
        if problems:
            raise LLMJSONError("; ".join(problems[:5]), model=self.model, text=second.text, attempts=2)
        return self._finish(second, start, attempts + more, [first.usage, second.usage], data=value)

    def _call(
        self,
        msgs: Sequence[Message],
        max_tokens: int,
        temperature: float,
        schema: dict[str, Any] | None,
        deadline: float | None = None,
    ) -> tuple[Completion, int]:
        attempt = 0
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise LLMBudgetError(
                    "the caller's deadline passed before "
                    + (f"retry {attempt} could be made" if attempt else "the call could be made"),
                    model=self.model,
                )
            try:
                end = call_deadline.attempt_end(deadline, self.timeout)
                limit = self.timeout if left is None or (self.timeout is not None and self.timeout <= left) else left
                with call_deadline.bounded(end, limit):
                    result = self._complete(msgs, max_tokens=max_tokens, temperature=temperature, json_schema=schema)
                return result, attempt + 1
            except LLMContextLengthError as exc:
                self._learn_context(exc, msgs)
                exc.attempts = attempt + 1
                raise
            except LLMError as exc:
                exc.attempts = attempt + 1
                if not exc.retryable or attempt >= self.retry.max_retries:
                    raise
                delay = self.backoff_delay(attempt, exc)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise  # the wait alone would spend what the deadline leaves
                self._sleep(delay)
                attempt += 1

    def _learn_context(self, exc: LLMContextLengthError, msgs: Sequence[Message]) -> None:
        """Remember the window a context-length error names, and how many tokens our characters make."""
        with self._rng_lock:
            if exc.window and (self.context_window is None or exc.window < self.context_window):
                self.context_window = exc.window
            chars = sum(len(m.content) for m in msgs)
            if exc.prompt_tokens and chars:
                overhead = MESSAGE_OVERHEAD_TOKENS * len(msgs)
                self.tokens_per_char = max(self.tokens_per_char, (exc.prompt_tokens - overhead) / chars)

    def backoff_delay(self, attempt: int, exc: LLMError | None = None) -> float:
        """Seconds to wait before retry ``attempt + 1`` (0-based ``attempt``)."""
        policy = self.retry
        base = min(policy.max_delay, policy.initial_delay * policy.multiplier**attempt)
        with self._rng_lock:
            u = self._rng.random()
        delay = base * (1.0 + policy.jitter * (2.0 * u - 1.0))
        if isinstance(exc, LLMRateLimitError) and exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        return max(0.0, min(policy.max_delay, delay))

    def _finish(
        self, result: Completion, start: float, attempts: int, usages: list[Usage], data: Any = None
    ) -> Completion:
        total = sum_usage(*usages)
        cost = self.prices.cost(self.model, total.prompt_tokens, total.completion_tokens)
        return replace(
            result,
            usage=Usage(total.prompt_tokens, total.completion_tokens, cost),
            latency_ms=(time.perf_counter() - start) * 1000.0,
            attempts=attempts,
            data=data,
        )

    def close(self) -> None:
        """Release connections or model memory; the default holds nothing."""

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


#: the methods of the call path a backend may not replace (see LLM.__init_subclass__)
_SEALED = ("complete", "_call")


def _with_system(msgs: tuple[Message, ...], text: str) -> tuple[Message, ...]:
    if msgs[0].role == "system":
        return (Message("system", msgs[0].content + "\n\n" + text), *msgs[1:])
    return (Message("system", text), *msgs)


def _check(text: str, resolved: ResolvedSchema) -> tuple[Any, list[str]]:
    value, error = parse_json_reply(text)
    if error is not None:
        return None, [error]
    return resolved.validate(value)
