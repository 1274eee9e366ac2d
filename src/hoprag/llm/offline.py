"""A deterministic backend with no model: rule-based replies, schema-valid JSON, zero cost.

Roles plug their offline logic in as *responders*: ``llm.register("Plan", plan_rules)`` answers every
JSON request whose schema ``title`` is ``Plan`` (a pydantic model's class name), and
``llm.add_responder(fn)`` sees every request. A responder gets an :class:`OfflineRequest` and returns
None (pass), a string (the reply text) or a JSON-able value / pydantic instance (serialised).
Unclaimed JSON requests get :func:`~hoprag.llm.schemas.minimal_instance` of the schema; unclaimed
text requests get the first line of the last user message, cut to ``max_tokens`` tokens.
Token counts are words and punctuation marks (``\\w+|[^\\w\\s]``), so usage is stable across runs.
A streamed reply is the same text handed out word by word.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hoprag.errors import ConfigError
from hoprag.llm import deadline as call_deadline
from hoprag.llm.base import Completion, LLM, Message
from hoprag.llm.errors import LLMError, LLMTimeoutError
from hoprag.llm.schemas import minimal_instance
from hoprag.llm.streaming import Delta, text_deltas
from hoprag.records import Usage

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Words and punctuation marks: the offline and scripted backends' token count."""
    return len(_TOKEN.findall(text))


def prompt_tokens(messages: Sequence[Message]) -> int:
    return sum(count_tokens(m.content) for m in messages)


@dataclass(frozen=True)
class OfflineRequest:
    """What a responder sees: the messages and the request's options."""

    messages: tuple[Message, ...]
    json_schema: dict[str, Any] | None
    max_tokens: int
    temperature: float

    @property
    def prompt(self) -> str:
        """The content of the last user message."""
        for msg in reversed(self.messages):
            if msg.role == "user":
                return msg.content
        return ""

    @property
    def system(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def schema_title(self) -> str | None:
        return None if self.json_schema is None else self.json_schema.get("title")

    @property
    def is_repair(self) -> bool:
        """True on the repair round that follows an invalid JSON reply."""
        return any(m.role == "assistant" for m in self.messages)


Responder = Callable[[OfflineRequest], Any]


class OfflineLLM(LLM):
    """Deterministic rule-based backend; ``delay`` (seconds) simulates a slow model for benchmarks."""

    name = "offline"

    def __init__(self, model: str = "rules", *, delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if delay < 0:
            raise ConfigError(f"delay must be >= 0 seconds, got {delay}")
        self.delay = delay
        self._by_title: dict[str, Responder] = {}
        self._responders: list[Responder] = []
        self._lock = threading.Lock()

    @property
    def spec(self) -> str:
        return "offline" if self.model == "rules" else f"offline:{self.model}"

    def register(self, title: str, responder: Responder) -> None:
        """Answer JSON requests whose schema ``title`` is ``title`` with ``responder`` (replaces any)."""
        with self._lock:
            self._by_title[title] = responder

    def add_responder(self, responder: Responder) -> None:
        """Offer every request to ``responder``, after title-specific ones, in the order added."""
        with self._lock:
            self._responders.append(responder)

    def _complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None,
    ) -> Completion:
        if self.delay and not call_deadline.wait(self.delay):  # a slow model still ends by the call's bound
            raise LLMTimeoutError(f"no reply before the call's deadline (simulated delay {self.delay:g} s)",
                                  model=self.model, timeout=self.attempt_timeout())
        request = OfflineRequest(tuple(messages), json_schema, max_tokens, temperature)
        reply = self._respond(request)
        claimed = reply is not None
        if not claimed:
            reply = self._default(request)
        text = _as_text(reply, self.model)
        return Completion(
            text=text,
            usage=Usage(prompt_tokens(messages), count_tokens(text)),
            model=self.model,
            raw={"responder": claimed},
            finish_reason="stop",
        )

    def _stream(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Iterator[Delta]:
        yield from text_deltas(self._complete(messages, max_tokens=max_tokens, temperature=temperature, json_schema=None))

    def _respond(self, request: OfflineRequest) -> Any:
        with self._lock:
            chain = list(self._responders)
            titled = self._by_title.get(request.schema_title or "") if request.json_schema else None
        if titled is not None:
            chain.insert(0, titled)
        for responder in chain:
            reply = responder(request)
            if reply is not None:
                return reply
        return None

    def _default(self, request: OfflineRequest) -> Any:
        if request.json_schema is not None:
            try:
                return minimal_instance(request.json_schema)
            except ConfigError as exc:
                raise LLMError(
                    str(exc),
                    model=self.model,
                    fix=f"register an offline responder for schema {request.schema_title!r}",
                ) from exc
        first_line = request.prompt.strip().split("\n", 1)[0]
        return _cut(first_line, request.max_tokens)


def _as_text(reply: Any, model: str) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    try:
        return json.dumps(reply, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise LLMError(f"offline responder returned a value that is not JSON-able: {exc}", model=model) from exc


def _cut(text: str, max_tokens: int) -> str:
    matches = list(_TOKEN.finditer(text))
    if len(matches) <= max_tokens:
        return text
    return text[: matches[max_tokens - 1].end()]
