"""Replace PII in what is stored by typed placeholders, keeping every id and offset.

Each finding of the package's one detector set (:func:`hoprag.pii.scan_text`) becomes
``<KIND_n>`` (``<EMAIL_1>``, ``<PHONE_2>``, ``<CARD_1>``, ``<IBAN_1>``, ``<NATIONAL_ID_1>``),
numbered per trace, so a value reads as the same placeholder wherever it occurs in that trace:
the answer's ``<EMAIL_1>`` is the evidence's ``<EMAIL_1>``. The table from values to
placeholders lives only while one trace is redacted and holds digests, not values; it is never
stored, so a stored trace cannot be turned back into the raw one.

Ids (run, case, document, chunk, step), hits' offsets, ranks and scores are kept as they are:
evaluation joins traces to labels on them, so redaction does not change a score that is computed
from them. ``Evidence.text`` no longer equals ``document.text[start:end]`` once a value in it was
replaced; the offsets still point at the source.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hoprag.pii import PII_KINDS, might_hold_pii, scan_text
from hoprag.records import Answer, Evidence, Hit, HopStep, Trace

__all__ = ["PLACEHOLDER", "PLACEHOLDER_NAMES", "PlaceholderTable", "redact_text", "redact_trace"]

PLACEHOLDER_NAMES = {kind: kind.upper() for kind in PII_KINDS}
_KIND_OF_NAME = {name: kind for kind, name in PLACEHOLDER_NAMES.items()}
PLACEHOLDER = re.compile(r"<(" + "|".join(PLACEHOLDER_NAMES.values()) + r")_([1-9][0-9]*)>")

# Keys of the free-form dicts (step bridges and filters, the plan) whose values are ids: kept as is,
# like the id fields of the records, because other parts of the trace point at them.
_ID_KEYS = frozenset({"from_chunk", "chunk", "chunks", "exclude", "include", "selected", "depends_on"})
# A placeholder holds no "@" and no digit a detector can use (the digits follow an underscore), so
# each pass removes material; passes after the first only find what an overlap hid in the one before.
_MAX_PASSES = 16

TextFn = Callable[[str], str]


def _normalise(kind: str, value: str) -> str:
    """One spelling per value: an address in any case, a number with or without separators."""
    if kind == "email":
        return value.casefold()
    if kind in ("phone", "card"):
        return ("+" if value.lstrip().startswith("+") else "") + re.sub(r"\D", "", value)
    return re.sub(r"\s", "", value).upper()


class PlaceholderTable:
    """The numbering of one trace's values, per kind. In memory only; keyed by digest, not value."""

    def __init__(self) -> None:
        self._assigned: dict[tuple[str, str], str] = {}
        self._highest: Counter[str] = Counter()

    def reserve(self, text: str) -> None:
        """Number new values after the placeholders ``text`` already holds (so they never collide)."""
        if "<" not in text:
            return
        for match in PLACEHOLDER.finditer(text):
            kind = _KIND_OF_NAME[match.group(1)]
            self._highest[kind] = max(self._highest[kind], int(match.group(2)))

    def placeholder(self, kind: str, value: str) -> str:
        """``<KIND_n>`` for ``value``: the same ``n`` for the same value, the next free one for a new one."""
        digest = hashlib.sha256(_normalise(kind, value).encode("utf-8")).hexdigest()
        key = (kind, digest)
        found = self._assigned.get(key)
        if found is None:
            self._highest[kind] += 1
            found = self._assigned[key] = f"<{PLACEHOLDER_NAMES[kind]}_{self._highest[kind]}>"
        return found

    def counts(self) -> dict[str, int]:
        """Per kind, the highest placeholder number in use (= distinct values replaced)."""
        return {kind: n for kind, n in sorted(self._highest.items()) if n}


def redact_text(text: str, table: PlaceholderTable | None = None) -> str:
    """``text`` with every PII finding replaced by its typed placeholder from ``table``.

    Without a table the numbering is local to this one text. Redacting redacted text changes nothing.
    """
    if not might_hold_pii(text):
        return text
    table = table if table is not None else PlaceholderTable()
    table.reserve(text)
    for _ in range(_MAX_PASSES):
        findings = scan_text(text)
        if not findings:
            return text
        parts: list[str] = []
        last = 0
        for finding in findings:
            parts.append(text[last:finding.start])
            parts.append(table.placeholder(finding.kind, text[finding.start:finding.end]))
            last = finding.end
        parts.append(text[last:])
        text = "".join(parts)
    # Not reached by any input we know of; an unnumbered mask holds no digit, so this loop ends.
    while findings := scan_text(text):
        for finding in reversed(findings):
            text = text[:finding.start] + f"<{PLACEHOLDER_NAMES[finding.kind]}>" + text[finding.end:]
    return text


def _free(value: Any, fn: TextFn, key: str = "") -> Any:
    """Apply ``fn`` to every string inside a free-form value, except under id keys."""
    if key in _ID_KEYS or key.endswith(("_id", "_ids")):
        return value
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _free(v, fn, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_free(v, fn, key) for v in value)
    return value


def _hit(hit: Hit, fn: TextFn) -> Hit:
    return replace(hit, title=fn(hit.title)) if hit.title else hit


def _step(step: HopStep, fn: TextFn) -> HopStep:
    return replace(
        step,
        sub_query=fn(step.sub_query),
        issued_query=fn(step.issued_query),
        hits=tuple(_hit(h, fn) for h in step.hits),
        filters=_free(step.filters, fn),
        bridge=_free(step.bridge, fn),
        error=None if step.error is None else fn(step.error),
    )


def _evidence(item: Evidence, fn: TextFn) -> Evidence:
    return replace(item, hit=_hit(item.hit, fn), text=fn(item.text), title=fn(item.title), sub_query=fn(item.sub_query))


def _answer(answer: Answer, fn: TextFn) -> Answer:
    return replace(answer, text=fn(answer.text), claims=tuple(replace(c, text=fn(c.text)) for c in answer.claims))


def _map_text(trace: Trace, fn: TextFn) -> Trace:
    """``trace`` with ``fn`` applied to every text it holds; ids, offsets, ranks and scores untouched."""
    return replace(
        trace,
        question=fn(trace.question),
        steps=tuple(_step(s, fn) for s in trace.steps),
        evidence=tuple(_evidence(e, fn) for e in trace.evidence),
        answer=_answer(trace.answer, fn),
        error=None if trace.error is None else fn(trace.error),
        plan=_free(trace.plan, fn),
        warnings=tuple(fn(w) for w in trace.warnings),
    )


def redact_trace(trace: Trace) -> Trace:
    """``trace`` with PII in all its text replaced, numbered across the whole trace, marked redacted.

    Redacting a redacted trace returns an equal trace: placeholders are not PII, and new values
    (if any were added since) are numbered after the ones already there.
    """
    table = PlaceholderTable()

    def reserve(text: str) -> str:
        table.reserve(text)
        return text

    _map_text(trace, reserve)
    done: dict[str, str] = {}

    def redact(text: str) -> str:
        if text not in done:
            done[text] = redact_text(text, table)
        return done[text]

    redacted = _map_text(trace, redact)
    counts = dict(trace.redactions)
    for kind, n in table.counts().items():
        counts[kind] = max(counts.get(kind, 0), n)
    return replace(redacted, redacted=True, redactions=dict(sorted(counts.items())))
