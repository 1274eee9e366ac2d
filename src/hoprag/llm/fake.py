"""A scripted backend for tests: queue the replies (or errors) it gives, read back what it was asked.

::

    llm = ScriptedLLM()
    llm.enqueue([LLMRateLimitError("busy"), '{"answer": "Paris"}'])
    result = llm.complete("Capital of France?", json_schema=Answer)
    assert llm.history[-1].prompt == "Capital of France?" and llm.sleeps  # one backoff

A reply is a string (the text), a dict/list or pydantic instance (sent as JSON), a
:class:`~hoprag.llm.base.Completion` (returned as is), an exception instance or class (raised), or
a callable taking the :class:`Call` and returning one of those. Backoff waits are recorded in
``sleeps`` instead of slept unless ``sleep=`` is given. ``stream`` hands a text reply out word by
word (one queued reply per streamed call, as for ``complete``). Safe to call from several threads.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hoprag.errors import ConfigError
from hoprag.llm.base import Completion, LLM, Message
from hoprag.llm.errors import LLMTimeoutError
from hoprag.llm.offline import count_tokens, prompt_tokens
from hoprag.llm.streaming import Delta, text_deltas
from hoprag.records import Usage


class ScriptExhausted(AssertionError):
    """A ScriptedLLM was called with no reply queued and no default (a test-script mistake)."""


@dataclass(frozen=True)
class Call:
    """One call the backend received (one entry per attempt, repair rounds included)."""

    messages: tuple[Message, ...]
    max_tokens: int
    temperature: float
    json_schema: dict[str, Any] | None

    @property
    def prompt(self) -> str:
        """The content of the last user message."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    @property
    def system(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system")


Reply = Any  # str | dict | list | BaseModel | Completion | BaseException | type | Callable[[Call], Reply]


class ScriptedLLM(LLM):
    """Replies from a queue; ``default`` (a reply or callable) answers when the queue is empty."""

    name = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        model: str = "scripted",
        default: Reply | None = None,
        delay: float = 0.0,
        sleep: Callable[[float], None] | None = None,
        **kwargs: Any,
    ) -> None:
        if delay < 0:
            raise ConfigError(f"delay must be >= 0 seconds, got {delay}")
        self.sleeps: list[float] = []
        super().__init__(model, sleep=sleep or self.sleeps.append, **kwargs)
        self.default = default
        self.delay = delay
        self.history: list[Call] = []
        self._queue: deque[Reply] = deque(replies)
        self._lock = threading.Lock()

    def enqueue(self, replies: Reply | Iterable[Reply]) -> ScriptedLLM:
        """Append replies (a list, or one string/reply) to the queue; returns self for chaining."""
        if isinstance(replies, (str, bytes, dict, BaseModel, BaseException)) or not isinstance(replies, Iterable):
            replies = [replies]
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    def assert_consumed(self) -> None:
        """Fail when queued replies were never asked for."""
        if self.pending:
            raise AssertionError(f"ScriptedLLM: {self.pending} queued reply(ies) were never used")

    def _complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None,
    ) -> Completion:
        call = Call(tuple(messages), max_tokens, temperature, json_schema)
        with self._lock:
            self.history.append(call)
            if self._queue:
                reply = self._queue.popleft()
            elif self.default is not None:
                reply = self.default
            else:
                raise ScriptExhausted(
                    f"ScriptedLLM: no reply queued for call {len(self.history)} (prompt {call.prompt[:80]!r});"
                    " enqueue([...]) more replies or pass default="
                )
        if self.delay:
            limit = self.attempt_timeout()  # like a real backend, never wait past the attempt's timeout
            if limit is not None and self.delay > limit:
                time.sleep(max(0.0, limit))
                raise LLMTimeoutError(f"no reply within {limit:.3g} s (scripted delay {self.delay:g} s)",
                                      model=self.model, timeout=limit)
            time.sleep(self.delay)
        return self._materialise(reply, call)

    def _stream(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Iterator[Delta]:
        yield from text_deltas(self._complete(messages, max_tokens=max_tokens, temperature=temperature, json_schema=None))

    def _materialise(self, reply: Reply, call: Call) -> Completion:
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, type) and issubclass(reply, BaseException):
            raise reply("scripted failure")
        if isinstance(reply, Completion):
            return reply
        if callable(reply):
            return self._materialise(reply(call), call)
        if isinstance(reply, BaseModel):
            text = reply.model_dump_json()
        elif isinstance(reply, str):
            text = reply
        elif isinstance(reply, (dict, list)):
            text = json.dumps(reply, ensure_ascii=False)
        else:
            raise ConfigError(f"ScriptedLLM cannot reply with a {type(reply).__name__}: {reply!r}")
        return Completion(
            text=text,
            usage=Usage(prompt_tokens(call.messages), count_tokens(text)),
            model=self.model,
            raw={"scripted": True},
            finish_reason="stop",
        )
