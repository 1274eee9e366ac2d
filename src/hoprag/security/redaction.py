"""Replace PII in what is stored by typed placeholders, and credentials by ``***``, keeping every id and offset.

Each finding of the package's one detector set (:func:`hoprag.security.pii.scan_text`) becomes
``<KIND_n>`` (``<EMAIL_1>``, ``<PHONE_2>``, ``<CARD_1>``, ``<IBAN_1>``, ``<NATIONAL_ID_1>``),
numbered per trace, so a value reads as the same placeholder wherever it occurs in that trace:
the answer's ``<EMAIL_1>`` is the evidence's ``<EMAIL_1>``. The table from values to
placeholders lives only while one trace is redacted and holds digests, not values; it is never
stored, so a stored trace cannot be turned back into the raw one.

Ids (run, case, document, chunk, step), hits' offsets, ranks and scores are kept as they are:
evaluation joins traces to labels on them, so redaction does not change a score. ``Evidence.text``
no longer equals ``document.text[start:end]`` once a value in it was replaced; the trace records
where lengths changed (``Trace.redaction_shifts``), and :func:`source_offset` places any position
of the redacted text in the source, for a scorer that cuts evidence text (supporting facts).
Ids are never rewritten, even one that looks like an address.

Credentials (:mod:`hoprag.security.credentials`: a URL's password, ``api_key=`` values, bearer
tokens, ``sk-…`` keys) become ``***`` whether or not PII is redacted (``pii=False`` keeps PII, as
``--no-redact`` asks, but never a credential). Writers do not call this module directly: they go
through :mod:`hoprag.security.boundary`, which records that they did.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from hoprag.errors import ConfigError
from hoprag.security.credentials import MASK, find_secrets, might_hold_secret
from hoprag.security.pii import PII_KINDS, PiiFinding, might_hold_pii, scan_text
from hoprag.records import Answer, Evidence, Hit, HopStep, Trace

__all__ = ["PLACEHOLDER", "PLACEHOLDER_NAMES", "PlaceholderTable", "RedactPattern", "parse_patterns", "redact_text",
           "redact_trace", "source_length", "source_offset"]

PLACEHOLDER_NAMES = {kind: kind.upper() for kind in PII_KINDS}
SECRET = "secret"  # the kind of a credential's finding: masked as ***, never numbered or counted
_KIND_OF_NAME = {name: kind for kind, name in PLACEHOLDER_NAMES.items()}
PLACEHOLDER = re.compile(r"<(" + "|".join(PLACEHOLDER_NAMES.values()) + r")_([1-9][0-9]*)>")
# any placeholder, the detectors' and those of user patterns: what redaction never touches again
_ANY_PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]{0,31}?)(?:_([1-9][0-9]*))?>")
_PATTERN_NAME = re.compile(r"[A-Z][A-Z0-9]{0,31}")


@dataclass(frozen=True)
class RedactPattern:
    """A user pattern redacted beside the detectors: matches become ``<NAME_n>`` (e.g. ``<TICKET_1>``)."""

    name: str
    regex: str

    def compiled(self) -> re.Pattern[str]:
        return _compile(self.regex)


@functools.lru_cache(maxsize=64)
def _compile(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def parse_patterns(specs: Iterable[str]) -> tuple[RedactPattern, ...]:
    """``NAME=REGEX`` strings (``--pattern``) as patterns; a bad name or regex is a ConfigError with the fix."""
    out: list[RedactPattern] = []
    for spec in specs:
        name, sep, regex = spec.partition("=")
        name = name.strip().upper()
        if not sep or not regex:
            raise ConfigError(f"--pattern {spec!r} is not NAME=REGEX; e.g. --pattern 'TICKET=KD-[0-9]{{4}}'")
        if not _PATTERN_NAME.fullmatch(name) or name in _KIND_OF_NAME or name == SECRET.upper():
            raise ConfigError(f"--pattern name {name!r} must be letters and digits (A-Z0-9, starting with a letter) "
                              f"and not one of the detectors' ({', '.join(PLACEHOLDER_NAMES.values())})")
        try:
            compiled = _compile(regex)
        except re.error as exc:
            raise ConfigError(f"--pattern {name}: {regex!r} is not a valid regular expression ({exc})") from None
        if compiled.search(""):
            raise ConfigError(f"--pattern {name}: {regex!r} matches the empty string; make it match something")
        out.append(RedactPattern(name, regex))
    return tuple(out)

# Keys of the free-form dicts (step bridges and filters, the plan) whose values are ids: kept as is,
# like the id fields of the records, because other parts of the trace point at them.
_ID_KEYS = frozenset({"from_chunk", "chunk", "chunks", "exclude", "include", "selected", "depends_on"})
# A placeholder holds no "@" and no digit a detector can use (the digits follow an underscore), so
# each pass removes material; passes after the first only find what an overlap hid in the one before.
_MAX_PASSES = 8

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
        for match in _ANY_PLACEHOLDER.finditer(text):
            if match.group(2) is None:
                continue
            kind = _KIND_OF_NAME.get(match.group(1), match.group(1))
            self._highest[kind] = max(self._highest[kind], int(match.group(2)))

    def placeholder(self, kind: str, value: str) -> str:
        """``<KIND_n>`` for ``value``: the same ``n`` for the same value, the next free one for a new one."""
        digest = hashlib.sha256(_normalise(kind, value).encode("utf-8")).hexdigest()
        key = (kind, digest)
        found = self._assigned.get(key)
        if found is None:
            self._highest[kind] += 1
            found = self._assigned[key] = f"<{_name(kind)}_{self._highest[kind]}>"
        return found

    def counts(self) -> dict[str, int]:
        """Per kind, the highest placeholder number in use (= distinct values replaced)."""
        return {kind: n for kind, n in sorted(self._highest.items()) if n}


def _name(kind: str) -> str:
    """The placeholder name of a detector kind (``email`` → ``EMAIL``) or of a user pattern (its name)."""
    return PLACEHOLDER_NAMES.get(kind, kind)


@functools.lru_cache(maxsize=8192)
def _findings(text: str, patterns: tuple[RedactPattern, ...] = (), pii: bool = True) -> tuple[PiiFinding, ...]:
    # The traces of one run retrieve the same passages over and over: scan each text once per process.
    # Credentials first: the password of http://user:pw@example.com must not be read as an address.
    found = [PiiFinding(SECRET, "", start, end) for start, end in find_secrets(text)]
    if pii:
        secrets = list(found)
        found += [f for f in scan_text(text) if not any(f.start < e.end and e.start < f.end for e in secrets)]
    if not patterns:
        return tuple(sorted(found, key=lambda f: (f.start, f.end)))
    # a user pattern never reaches into a placeholder (or the detectors' findings): that keeps
    # redaction idempotent and ends the passes below even for a pattern that matches placeholder text
    taken = [(m.start(), m.end()) for m in _ANY_PLACEHOLDER.finditer(text)] + [(f.start, f.end) for f in found]
    for pattern in patterns:
        for m in pattern.compiled().finditer(text):
            if m.end() > m.start() and not any(m.start() < e and s < m.end() for s, e in taken):
                taken.append((m.start(), m.end()))
                found.append(PiiFinding(pattern.name, "", m.start(), m.end()))
    return tuple(sorted(found, key=lambda f: (f.start, f.end)))


def _may_hold(text: str, patterns: tuple[RedactPattern, ...], pii: bool = True) -> bool:
    return bool(patterns) or (pii and might_hold_pii(text)) or might_hold_secret(text)


def redact_text(text: str, table: PlaceholderTable | None = None, patterns: Iterable[RedactPattern] = (), *,
                pii: bool = True) -> str:
    """``text`` with every PII finding (and match of ``patterns``) replaced by its typed placeholder,
    every credential by ``***``; ``pii=False`` masks the credentials only.

    Without a table the numbering is local to this one text. Redacting redacted text changes nothing.
    """
    patterns = tuple(patterns)
    if not _may_hold(text, patterns, pii):
        return text
    return _redact(text, table if table is not None else PlaceholderTable(), patterns=patterns, pii=pii)[0]


def _redact(text: str, table: PlaceholderTable, origin: list[int] | None = None,
            patterns: tuple[RedactPattern, ...] = (), pii: bool = True) -> tuple[str, list[int] | None]:
    """The redacted text and, when anything was replaced, ``origin``: for each position of the new
    text (and its end), the position in the source text. Inside a placeholder it keeps the shift in
    force before it; the shift jumps at the placeholder's end."""
    table.reserve(text)
    passes = 0
    while findings := _findings(text, patterns, pii):
        # Past _MAX_PASSES (not reached by any input we know of) values get an unnumbered mask, which
        # holds no digit: every pass then removes "@" or digits, so the loop ends.
        numbered = passes < _MAX_PASSES
        passes += 1
        if origin is None:
            origin = list(range(len(text) + 1))
        parts: list[str] = []
        moved: list[int] = []
        last = 0
        for finding in findings:
            value = text[finding.start:finding.end]
            if finding.kind == SECRET:
                mark = MASK
            else:
                mark = table.placeholder(finding.kind, value) if numbered else f"<{_name(finding.kind)}>"
            parts += [text[last:finding.start], mark]
            moved += origin[last:finding.start]
            moved += [origin[finding.start] + i for i in range(len(mark))]
            last = finding.end
        parts.append(text[last:])
        moved += origin[last:]
        text, origin = "".join(parts), moved
    return text, (origin if passes else None)


def _shifts(origin: list[int]) -> tuple[tuple[int, int], ...]:
    """``origin`` as its change points: ``(position, shift)``, the shift applying from there on."""
    out: list[tuple[int, int]] = []
    for pos, src in enumerate(origin):
        shift = src - pos
        if not out or out[-1][1] != shift:
            out.append((pos, shift))
    return tuple(p for p in out if p != (0, 0))


def _origin(length: int, shifts: tuple[tuple[int, int], ...]) -> list[int]:
    return [pos + _shift_at(shifts, pos) for pos in range(length + 1)]


def _shift_at(shifts: tuple[tuple[int, int], ...], pos: int) -> int:
    shift = 0
    for at, value in shifts:
        if at > pos:
            break
        shift = value
    return shift


def source_offset(trace: Trace, chunk_id: str, pos: int) -> int:
    """Where position ``pos`` of an evidence entry's text lies in its source text.

    The same position unless redaction replaced a value before it: a placeholder is seldom as long
    as the value. Add ``entry.hit.start`` for the position in the document. Exact outside placeholders.
    """
    return pos + _shift_at(trace.redaction_shifts.get(chunk_id, ()), pos)


def source_length(trace: Trace, entry: Evidence) -> int:
    """The length of the source text of ``entry`` (``len(entry.text)`` unless values were replaced)."""
    return source_offset(trace, entry.chunk_id, len(entry.text))


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


def _changed(record: Any, **fields: Any) -> Any:
    """``record`` with ``fields`` replaced, or ``record`` itself when none differs (most hold no PII)."""
    if all(getattr(record, name) == value for name, value in fields.items()):
        return record
    return replace(record, **fields)


def _hit(hit: Hit, fn: TextFn) -> Hit:
    return _changed(hit, title=fn(hit.title)) if hit.title else hit


def _step(step: HopStep, fn: TextFn) -> HopStep:
    return _changed(
        step,
        sub_query=fn(step.sub_query),
        issued_query=fn(step.issued_query),
        hits=tuple(_hit(h, fn) for h in step.hits),
        filters=_free(step.filters, fn),
        bridge=_free(step.bridge, fn),
        error=None if step.error is None else fn(step.error),
    )


def _evidence(item: Evidence, fn: TextFn) -> Evidence:
    return _changed(item, hit=_hit(item.hit, fn), text=fn(item.text), title=fn(item.title), sub_query=fn(item.sub_query))


def _answer(answer: Answer, fn: TextFn) -> Answer:
    return _changed(answer, text=fn(answer.text), claims=tuple(_changed(c, text=fn(c.text)) for c in answer.claims))


def _map_text(trace: Trace, fn: TextFn) -> Trace:
    """``trace`` with ``fn`` applied to every text it holds; ids, offsets, ranks and scores untouched."""
    return _changed(
        trace,
        question=fn(trace.question),
        steps=tuple(_step(s, fn) for s in trace.steps),
        evidence=tuple(_evidence(e, fn) for e in trace.evidence),
        answer=_answer(trace.answer, fn),
        error=None if trace.error is None else fn(trace.error),
        plan=_free(trace.plan, fn),
        warnings=tuple(fn(w) for w in trace.warnings),
    )


def redact_trace(trace: Trace, patterns: Iterable[RedactPattern] = (), *, pii: bool = True) -> Trace:
    """``trace`` with PII in all its text replaced, numbered across the whole trace, marked redacted.

    Credentials become ``***`` in any case; with ``pii=False`` only they do, the trace is not marked
    redacted and, when it holds none, is returned as it is.

    An evidence entry whose text changed gets its shifts recorded (``trace.redaction_shifts``), so
    :func:`source_offset` still places each of its characters in the source; the shifts hold the
    lengths of replaced values, never the values. Redacting a redacted trace returns an equal trace:
    placeholders are not PII, and values added since are numbered after the ones already there.
    ``patterns`` (:func:`parse_patterns`) are redacted beside the detectors, as ``<NAME_n>``.
    """
    patterns = tuple(patterns)
    table = PlaceholderTable()

    def reserve(text: str) -> str:
        table.reserve(text)
        return text

    _map_text(trace, reserve)  # unchanged text builds no new records: this pass only reads
    done: dict[str, str] = {}

    def redact(text: str) -> str:
        if text not in done:
            done[text] = redact_text(text, table, patterns, pii=pii)
        return done[text]

    shifts = dict(trace.redaction_shifts)
    for entry in trace.evidence:  # located text: redact it keeping the map back to the source
        if _may_hold(entry.text, patterns, pii):
            old = shifts.get(entry.chunk_id, ())
            text, origin = _redact(entry.text, table, _origin(len(entry.text), old) if old else None, patterns, pii)
            done.setdefault(entry.text, text)
            if origin is not None:
                shifts[entry.chunk_id] = _shifts(origin)
    redacted = _map_text(trace, redact)
    if not pii:
        if redacted is trace:
            return trace
        return replace(redacted, redaction_shifts={k: v for k, v in shifts.items() if v})
    counts = dict(trace.redactions)
    for kind, n in table.counts().items():
        counts[kind] = max(counts.get(kind, 0), n)
    return replace(redacted, redacted=True, redactions=dict(sorted(counts.items())),
                   redaction_shifts={k: v for k, v in shifts.items() if v})
