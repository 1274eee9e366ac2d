"""Chat messages and the texts the base class adds to them: the request side of the LLM contract.

A request is a prompt string, :class:`Message` objects or ``{"role", "content"}`` dicts;
:func:`normalize_messages` turns any of them into messages or refuses them. A JSON request carries
:func:`json_instruction` in its system message, and a reply that is not valid is answered with
:func:`repair_prompt`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hoprag.errors import ConfigError
from hoprag.records import Usage

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


MessagesLike = str | Sequence[Message | Mapping[str, Any]]


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


def with_system(msgs: tuple[Message, ...], text: str) -> tuple[Message, ...]:
    """The messages with ``text`` added to their system message (one is put first when there is none)."""
    if msgs[0].role == "system":
        return (Message("system", msgs[0].content + "\n\n" + text), *msgs[1:])
    return (Message("system", text), *msgs)
