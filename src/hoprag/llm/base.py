"""The LLM contract: a backend implements ``_complete`` (and ``_stream`` to stream); the base builds the rest.

``complete`` adds what every backend needs the same way: message validation, retries with
exponential backoff and seeded jitter for retryable errors (rate limits, 5xx, timeouts), wall-clock
latency, cost from a :class:`~hoprag.llm.pricing.PriceTable`, and JSON output checked against a
schema with one repair round before :class:`~hoprag.llm.errors.LLMJSONError`.

A caller may give ``complete`` a ``deadline`` (a ``time.monotonic()`` instant, e.g. the end of a
question's model budget). Each attempt runs inside one wall-clock bound of
:mod:`hoprag.llm.deadline`: ``timeout`` seconds from its start, never past the deadline, enforced on
every socket operation of the call (connect, each read, each write), so a server that trickles or
stalls cannot stretch it; no backoff wait runs past the deadline, and once it has passed no further
attempt is made. Subclasses cannot override ``complete``, ``stream`` or their attempt loops, so no
backend skips the bound.

``stream`` returns the reply as it arrives (:class:`~hoprag.llm.streaming.CompletionStream`: text
pieces, then the whole :class:`Completion`) with the same validation, deadline, retries and usage and
cost accounting as ``complete``; an error is retried only before the first piece was handed out,
and the stream is ended with :class:`~hoprag.llm.errors.LLMTimeoutError` once its attempt's bound
has passed (time the caller spends between pieces counts). A backend streams by yielding
:class:`~hoprag.llm.streaming.Delta` pieces from ``_stream``; one that does not gets its ``_complete``
reply as one piece. Streams are text only (a JSON reply is validated whole, so use ``complete``).
A context-length error is never
retried as is; the backend learns the context window from it (``context_window``) so callers can
fit the next prompt (:meth:`LLM.prompt_tokens` estimates a prompt's size).
"""

from __future__ import annotations

import math
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hoprag.errors import ConfigError
from hoprag.llm import deadline as call_deadline
from hoprag.llm.errors import (
    LLMBudgetError,
    LLMContextLengthError,
    LLMError,
    LLMJSONError,
    LLMRateLimitError,
    LLMTimeoutError,
)
from hoprag.llm.messages import (  # noqa: F401 - the request side, re-exported where it always was
    ROLES,
    Message,
    MessagesLike,
    json_instruction,
    normalize_messages,
    repair_prompt,
    sum_usage,
    with_system,
)
from hoprag.llm.pricing import PriceTable
from hoprag.llm.retry import RetryPolicy
from hoprag.llm.schemas import ResolvedSchema, SchemaLike, parse_json_reply, resolve_schema
from hoprag.llm.streaming import CompletionStream, Delta
from hoprag.records import Usage

DEFAULT_MAX_TOKENS = 512
DEFAULT_TIMEOUT = 60.0
#: tokens per character assumed for a model whose tokenizer is not at hand (≈ 3.3 characters per
#: token: on the safe side for English, whose average is nearer 4)
TOKENS_PER_CHAR = 0.3
#: tokens a chat template adds around each message (role markers, separators)
MESSAGE_OVERHEAD_TOKENS = 8

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
            raise TypeError(f"{cls.__name__} overrides {', '.join(own)}: a backend implements _complete and"
                            " _stream only, so every call keeps the deadline of hoprag.llm.deadline")

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
            msgs = with_system(msgs, json_instruction(resolve_schema(json_schema).schema))
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

    def _stream(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Iterator[Delta]:
        """Make one streamed call: yield the reply's text in pieces as it arrives, and the usage, finish
        reason and model the server reports on any piece (usually the last).

        The default hands out :meth:`_complete`'s reply as one piece; a backend with a real stream
        overrides it. Raise :class:`LLMError` subclasses only, as ``_complete`` does. Each piece is
        read within the attempt's bound; hold no lock between pieces that another call needs.
        """
        result = self._complete(messages, max_tokens=max_tokens, temperature=temperature, json_schema=None)
        yield Delta(result.text, usage=result.usage, finish_reason=result.finish_reason, model=result.model)

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
        msgs = _checked(messages, max_tokens, temperature)
        start = time.perf_counter()
        if json_schema is None:
            result, attempts = self._call(msgs, max_tokens, temperature, None, deadline)
            return self._finish(result, start, attempts, [result.usage])
        resolved = resolve_schema(json_schema)
        msgs = with_system(msgs, json_instruction(resolved.schema))
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

    def stream(
        self,
        messages: MessagesLike,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        deadline: float | None = None,
    ) -> CompletionStream[Completion]:
        """Complete a chat as a stream of text pieces; ``completion`` of the stream once it is read.

        The request is checked at once (as by ``complete``); the call is made when the first piece
        is asked for. Errors are those of ``complete``, raised while reading.
        """
        msgs = _checked(messages, max_tokens, temperature)
        return CompletionStream(self._stream_call(msgs, max_tokens, temperature, deadline))

    def _attempt_bound(self, deadline: float | None, attempt: int) -> tuple[float | None, float | None]:
        """(end, time limit) of the attempt about to start; LLMBudgetError once the deadline has passed."""
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise LLMBudgetError(
                "the caller's deadline passed before "
                + (f"retry {attempt} could be made" if attempt else "the call could be made"),
                model=self.model,
            )
        end = call_deadline.attempt_end(deadline, self.timeout)
        limit = self.timeout if left is None or (self.timeout is not None and self.timeout <= left) else left
        return end, limit

    def _may_retry(self, exc: LLMError, attempt: int, msgs: Sequence[Message], deadline: float | None) -> bool:
        """Whether the failed attempt ``attempt`` is tried again (after its backoff wait, done here)."""
        exc.attempts = attempt + 1
        if isinstance(exc, LLMContextLengthError):
            self._learn_context(exc, msgs)
            return False
        if not exc.retryable or attempt >= self.retry.max_retries:
            return False
        delay = self.backoff_delay(attempt, exc)
        if deadline is not None and time.monotonic() + delay >= deadline:
            return False  # the wait alone would spend what the deadline leaves
        self._sleep(delay)
        return True

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
            end, limit = self._attempt_bound(deadline, attempt)
            try:
                with call_deadline.bounded(end, limit):
                    result = self._complete(msgs, max_tokens=max_tokens, temperature=temperature, json_schema=schema)
                return result, attempt + 1
            except LLMError as exc:
                if not self._may_retry(exc, attempt, msgs, deadline):
                    raise
                attempt += 1

    def _stream_call(
        self, msgs: Sequence[Message], max_tokens: int, temperature: float, deadline: float | None
    ) -> Generator[str, None, Completion]:
        """The attempt loop of a stream: retried only while no piece has been handed out."""
        start = time.perf_counter()
        attempt = 0
        while True:
            end, limit = self._attempt_bound(deadline, attempt)
            parts: list[str] = []
            last = Delta()
            pieces = iter(self._stream(msgs, max_tokens=max_tokens, temperature=temperature))
            try:
                while True:
                    if end is not None and time.monotonic() >= end:
                        raise LLMTimeoutError(
                            f"the streamed reply did not finish within {_seconds(limit)} s and was abandoned"
                            f" after {len(parts)} pieces", model=self.model, timeout=limit)
                    # each read of the backend's stream keeps the attempt's bound (hoprag.llm.deadline)
                    with call_deadline.bounded(end, limit):
                        delta = next(pieces, None)
                    if delta is None:
                        break
                    last = Delta(last.text, delta.usage or last.usage, delta.finish_reason or last.finish_reason,
                                 delta.model or last.model)
                    if delta.text:
                        parts.append(delta.text)
                        yield delta.text
            except LLMError as exc:
                if parts or not self._may_retry(exc, attempt, msgs, deadline):
                    exc.attempts = attempt + 1
                    raise
                attempt += 1
                continue
            finally:
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()  # ends the request (and frees the model) however the stream ended
            text = "".join(parts)
            usage = last.usage or Usage(self.prompt_tokens(msgs), self.count_tokens(text) if text else 0)
            reply = Completion(text=text, usage=usage, model=last.model or self.model, finish_reason=last.finish_reason)
            return self._finish(reply, start, attempt + 1, [usage])

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
        with self._rng_lock:
            draw = self._rng.random()
        hint = exc.retry_after if isinstance(exc, LLMRateLimitError) else None
        return self.retry.delay(attempt, draw, hint)

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
_SEALED = ("complete", "stream", "_call", "_stream_call", "_attempt_bound", "_may_retry")


def _checked(messages: MessagesLike, max_tokens: int, temperature: float) -> tuple[Message, ...]:
    """The messages of a request whose options are valid (ConfigError otherwise)."""
    msgs = normalize_messages(messages)
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if temperature < 0:
        raise ConfigError(f"temperature must be >= 0, got {temperature}")
    return msgs


def _seconds(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:.3g}"


def _check(text: str, resolved: ResolvedSchema) -> tuple[Any, list[str]]:
    value, error = parse_json_reply(text)
    if error is not None:
        return None, [error]
    return resolved.validate(value)
