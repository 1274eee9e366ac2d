"""The Server-Sent Events of a streamed chat completion (OpenAI's wire format) as :class:`Delta` pieces.

Each ``data:`` line holds a ``chat.completion.chunk``; its choices' ``delta.content`` is the text, a
``finish_reason`` ends the choice, a ``usage`` object (sent last when the request asked for it) gives
the token counts, and ``data: [DONE]`` ends the stream. Comment lines (keep-alives) and event names
are skipped. An event that is not JSON, or one carrying ``error``, is an LLM error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hoprag.finite_numbers import loads as json_loads
from hoprag.llm.errors import LLMResponseError, LLMServerError
from hoprag.llm.streaming import Delta
from hoprag.records import Usage

__all__ = ["chat_deltas"]


def chat_deltas(lines: Iterable[str], *, url: str, model: str) -> Iterator[Delta]:
    """The content deltas of the event stream's ``lines``, then one Delta with its usage and finish reason."""
    usage = None
    finish = named = None
    for line in lines:
        if not line.startswith("data:"):
            continue  # comments (keep-alives), event names, blank separators
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json_loads(data)
        except (ValueError, RecursionError):
            raise LLMResponseError(f"{url} streamed an event that is not JSON: {data[:200]!r}", model=model) from None
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            error = chunk["error"]
            detail = error.get("message") if isinstance(error, dict) else error
            raise LLMServerError(f"{url} failed mid-stream: {str(detail)[:300]}", model=model, status=500)
        if isinstance(chunk.get("usage"), dict):
            reported = chunk["usage"]
            usage = Usage(_count(reported.get("prompt_tokens")), _count(reported.get("completion_tokens")))
        named = chunk.get("model") or named
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            finish = choice.get("finish_reason") or finish
            piece = (choice.get("delta") or {}).get("content")
            if isinstance(piece, str) and piece:
                yield Delta(piece)
    yield Delta(usage=usage, finish_reason=finish, model=str(named) if named else None)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
