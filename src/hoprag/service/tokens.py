"""Bearer tokens for the service: who a caller is, their clearance, and whether they may write.

``tokens.yaml`` takes either shape::

    tokens:
      - {token: "s3cret", name: alice, clearance: internal, can_write: true}
    # or
    tokens:
      s3cret: {name: alice, clearance: internal}

Tokens are compared in constant time (:func:`hmac.compare_digest` over SHA-256 digests, every
entry checked), so the time a check takes says nothing about how much of a guess was right.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoprag.security.acl import ClearancePolicy
from hoprag.errors import ConfigError
from hoprag.validation_messages import quote

__all__ = ["Caller", "TokenTable", "load_tokens"]


@dataclass(frozen=True)
class Caller:
    """Who is asking: ``clearance`` limits retrieval, ``can_write`` allows stored asks and feedback."""

    name: str
    clearance: str
    can_write: bool
    authenticated: bool = False



@dataclass(frozen=True)
class _Entry:
    digest: bytes
    caller: Caller


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenTable:
    """Maps bearer tokens to callers; :meth:`lookup` returns ``None`` for an unknown token."""

    def __init__(self, entries: list[tuple[str, Caller]]) -> None:
        self._entries = tuple(_Entry(_digest(token), caller) for token, caller in entries)

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, token: str) -> Caller | None:
        wanted = _digest(token)
        found: Caller | None = None
        for entry in self._entries:  # no early exit: every entry costs the same
            if hmac.compare_digest(entry.digest, wanted):
                found = entry.caller
        return found


def _entries_of(raw: Any, source: str) -> list[tuple[str, dict[str, Any]]]:
    items = raw.get("tokens") if isinstance(raw, dict) else None
    if isinstance(items, dict):
        return [(str(token), spec if isinstance(spec, dict) else {}) for token, spec in items.items()]
    if isinstance(items, list):
        out = []
        for n, spec in enumerate(items, start=1):
            if not isinstance(spec, dict) or not spec.get("token"):
                raise ConfigError(f"{source}: tokens entry {n} has no 'token'. Fix: write "
                                  "- {token: \"…\", name: alice, clearance: internal, can_write: true}")
            out.append((str(spec["token"]), spec))
        return out
    raise ConfigError(f"{source}: no 'tokens' list or mapping. Fix: start the file with 'tokens:' and one "
                      "entry per caller ({token: …, name: …, clearance: public|internal|confidential|restricted})")


def load_tokens(path: str | Path, policy: ClearancePolicy | None = None) -> TokenTable:
    """Read ``tokens.yaml``; every error names the file, the entry and the fix."""
    from hoprag.errors import InputError
    from hoprag.yaml_input import read_yaml

    policy = policy or ClearancePolicy()
    source = str(path)
    if not Path(path).exists():
        raise ConfigError(f"token file {source} does not exist. Fix: pass --tokens with an existing tokens.yaml")
    try:
        raw = read_yaml(path, what="token file", fix="correct the file")
    except InputError as exc:  # a token file is configuration: its errors are ConfigErrors
        raise ConfigError(str(exc)) from None
    entries: list[tuple[str, Caller]] = []
    seen: set[bytes] = set()
    for n, (token, spec) in enumerate(_entries_of(raw, source), start=1):
        if len(token) < 8:
            raise ConfigError(f"{source}: token of entry {n} is shorter than 8 characters. Fix: use a long random "
                              "token, e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))'")
        if _digest(token) in seen:
            raise ConfigError(f"{source}: entry {n} repeats a token. Fix: give every caller its own token")
        seen.add(_digest(token))
        wanted = spec.get("clearance") or "public"
        try:
            clearance = policy.parse(wanted if isinstance(wanted, str) else "")
        except ConfigError:  # its own message names --clearance, a flag of the commands, not of this file
            raise ConfigError(f"{source}: entry {n} has unknown clearance '{wanted}'; valid (lowest first): "
                              f"{', '.join(policy.levels)}. Fix: give the entry one of them") from None
        can_write = spec.get("can_write", True)
        if not isinstance(can_write, bool):
            raise ConfigError(f"{source}: entry {n} can_write must be true or false, got {quote(can_write)}. "
                              "Fix: write can_write: true or can_write: false")
        name = str(spec.get("name") or f"caller-{n}")
        entries.append((token, Caller(name=name, clearance=clearance, can_write=can_write, authenticated=True)))
    if not entries:
        raise ConfigError(f"{source}: the token file lists no tokens. Fix: add at least one entry under 'tokens:'")
    return TokenTable(entries)
