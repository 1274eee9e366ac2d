"""Traces files: the one reader, the one writer, the run header and what a resume finds in a file.

``hoprag run`` starts every traces file with one header record naming the run that writes it::

    {"hoprag_traces": 1, "run_id": "...", "engine": "multihop", "config_hash": "...",
     "index_artifact_id": "...", "created": "2026-01-01T00:00:00Z"}

then appends one :class:`~hoprag.records.Trace` per line (:func:`append_trace`); every other writer
(``traces import``, ``traces redact``, ``ablate``) writes a whole file at once (:func:`write_traces`),
atomically through the output guard (:mod:`hoprag.io.outputs`). A file without a header (another
pipeline's traces, an older hoprag) reads as before.

:func:`read_traces_file` is the one reader; ``eval``, ``compare``, ``release``, ``export-trec``,
``redact``, the gates, the demo and a resume (:func:`hoprag.io.trace_resume.scan_traces_file`) all
read through it.

- **Strict** (the default): the first bad line refuses the file, naming file, line and field, with
  the fix; a number :mod:`hoprag.finite_numbers` refuses (NaN, Infinity, ``1e400``) is a bad line.
- **Lenient** (``hoprag eval --lenient``): each bad line is left out and reported as an exclusion
  (source, line, reason); a file with not one readable trace is still refused.
- Either way a file whose first record is a case is refused (:class:`NotTracesFileError`), and a
  last line cut off by a killed run (no line end, not JSON) is named as such, with the fix.

**Retries and duplicates.** A question whose engine call failed has an *error trace*
(``stop_reason: "error"`` and ``error`` set); resuming answers it again and appends the new trace.
An error trace followed by a later trace of the same case is superseded by that retry and not read
(:func:`drop_retried`); any other repeat of a case is a real duplicate, read as written, and the
evaluation scores the last one and reports the others. A file without error traces reads exactly
as written.

**Speed.** A well-formed line is parsed and validated in one pydantic-core call
(:func:`trace_from_json_line`, in :mod:`hoprag.io.trace_lines`) that builds the same frozen records ``Trace.from_dict`` builds; any
other line is read the slow way, so it gets the same records and every bad line the same error.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.files import open_text
from hoprag.finite_numbers import NumberError
from hoprag.gc_pause import collector_paused
from hoprag.io.kinds import TRACE_KEYS, TRACES_HEADER_KEY, TRACES_JSONL
from hoprag.io.outputs import atomic_writer, open_for_append
from hoprag.io.trace_lines import trace_from_json_line
from hoprag.jsonl import TornLine, decode_line, read_jsonl_dicts, torn_last_line
from hoprag.records import Trace

__all__ = [
    "BadTraceError",
    "NotTracesFileError",
    "TracesHeader",
    "TracesRead",
    "append_trace",
    "drop_retried",
    "is_error_trace",
    "is_header",
    "normalize_case_id",
    "read_traces",
    "read_traces_file",
    "trace_from_json_line",
    "write_traces",
]

HEADER_VERSION = 1
WHAT = "traces file"
TORN_FIX = ("resume the run to repair it (`hoprag run INDEX CASES --out {path}` drops the cut-off line), "
            "or skip it with `hoprag eval --lenient`")


class NotTracesFileError(InputError):
    """A file given as traces (to write or to read) holds something else: cases, a corpus, binary data."""


class BadTraceError(InputError):
    """A line that parses but is not a valid trace (no ``case_id``, a missing or bad field); ``short``
    is its reason in a lenient read's exclusions."""

    def __init__(self, message: str, *, short: str, case_id: str | None, **where: Any) -> None:
        super().__init__(message, **where)
        self.short, self.case_id = short, case_id


@dataclass(frozen=True)
class TracesHeader:
    """The first line of a traces file written by ``hoprag run``: which run, engine, config and index."""

    run_id: str
    engine: str
    config_hash: str = ""
    index_artifact_id: str = ""
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def to_dict(self) -> dict[str, Any]:
        return {TRACES_HEADER_KEY: HEADER_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TracesHeader:
        return cls(
            run_id=str(data.get("run_id") or ""),
            engine=str(data.get("engine") or ""),
            config_hash=str(data.get("config_hash") or ""),
            index_artifact_id=str(data.get("index_artifact_id") or ""),
            created=str(data.get("created") or ""),
        )


@dataclass(frozen=True)
class TracesRead:
    """What one traces file holds: its traces in file order (retried error traces left out), its run
    headers, the lines a lenient read left out, and a cut-off last line (excluded or, on resume, kept
    for the run to repair)."""

    path: Path
    traces: tuple[Trace, ...]
    headers: tuple[TracesHeader, ...] = ()
    exclusions: tuple[dict[str, Any], ...] = ()
    torn: TornLine | None = None


# ---------------------------------------------------------------------------------------------------
# reading


def read_traces(path: str | Path) -> list[Trace]:
    """The traces of ``path``, read strictly (:func:`read_traces_file`)."""
    return list(read_traces_file(path).traces)


def read_traces_file(path: str | Path, *, lenient: bool = False) -> TracesRead:
    """Read a traces file of hoprag or any other pipeline; see the module doc for the two modes.

    The header line is skipped (kept in ``headers``); a numeric ``case_id`` is read as its string.
    Strict: a malformed line (a cut-off last line included), a missing or empty ``case_id``, a bad
    field or a cases file given as traces raises :class:`InputError` naming the file and line.
    """
    path = Path(path)
    with collector_paused():  # 10,000 traces allocate millions of objects and none is garbage
        read = read_records(path, lenient=lenient, resume=False)
    if lenient and not read.traces and read.exclusions:
        raise InputError(
            f"no readable trace ({len(read.exclusions)} line(s) excluded, the first: line "
            f"{read.exclusions[0]['line']}, {read.exclusions[0]['reason']})", source=str(path),
            fix="write one trace per line, each with its 'case_id' and the fields hoprag.records.Trace.to_dict writes",
        )
    return read


def read_records(path: Path, *, lenient: bool, resume: bool) -> TracesRead:
    """The one loop over a traces file's lines. ``resume``: an empty file and a cut-off last line
    are not errors (a run about to append repairs the one and starts the other)."""
    source = str(path)
    torn = torn_last_line(path) if path.is_file() else None
    traces: list[Trace] = []
    headers: list[TracesHeader] = []
    excluded: list[dict[str, Any]] = []
    first = True  # the first record is read as a dict: is it a case?
    records = 0
    with open_text(path, WHAT, allow_empty=resume) as lines:
        for number, line in enumerate(lines, start=1):
            if not first:
                trace = trace_from_json_line(line)
                if trace is not None:  # a well-formed line, read in one call
                    traces.append(trace)
                    continue
            try:
                obj = decode_line(line, source=source, number=number)
                if obj is None:
                    continue
                records += 1
                if TRACES_HEADER_KEY in obj:
                    headers.append(TracesHeader.from_dict(obj))
                    continue
                if first and looks_like_case(obj):
                    raise cases_refusal(path, number, writing=False)
                first = False
                traces.append(_trace_from_dict(normalize_case_id(obj), source, number))
            except NotTracesFileError:
                raise
            except InputError as exc:
                if torn is not None and number == torn.line:
                    if not (lenient or resume):
                        raise _torn_error(path, torn) from None
                    if lenient:
                        excluded.append({"source": source, "line": number,
                                         "reason": f"cut-off last line ({torn.size} bytes)"})
                elif lenient:
                    excluded.append(_exclusion(exc, source, number))
                else:
                    raise
    if not (records or traces or excluded or torn or resume):
        raise InputError(f"{WHAT} holds no records (only blank lines)", source=source,
                         fix=f"pass a {WHAT} with one JSON object per line")
    return TracesRead(path, tuple(drop_retried(traces)), tuple(headers), tuple(excluded), torn)


def _trace_from_dict(obj: dict[str, Any], source: str, number: int) -> Trace:
    case_id = obj.get("case_id")
    if case_id is None or not str(case_id).strip():
        raise BadTraceError("trace has no case_id", short="trace has no case_id", case_id=None, source=source,
                            line=number, field="case_id", fix="give every trace the case_id of the case it answers")
    where = {"case_id": str(case_id), "source": source, "line": number}
    try:
        return Trace.from_dict(obj)
    except KeyError as exc:
        name = str(exc.args[0])
        raise BadTraceError(f"trace {case_id!r} is missing a field", short=f"missing field {name!r}", field=name,
                            fix=f"add '{name}' (hits and evidence need at least 'doc_id'; steps need 'step_id')",
                            **where) from None
    except NumberError as exc:
        raise BadTraceError(f"trace {case_id!r} is invalid: {exc.reason}", short=f"invalid: {exc}", field=exc.field,
                            fix=exc.fix, **where) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise BadTraceError(f"trace {case_id!r} is invalid: {exc}", short=f"invalid: {exc}",
                            fix="write traces with hoprag.records.Trace.to_dict or follow its field types",
                            **where) from None


def _exclusion(exc: InputError, source: str, number: int) -> dict[str, Any]:
    """A lenient read's record of a line it left out (the reasons ``hoprag eval --json`` has always listed)."""
    if not isinstance(exc, BadTraceError):  # a line that is not one JSON object, or a number the rule refuses
        return {"source": source, "line": number, "reason": reason_of(exc)}
    if exc.case_id is None:
        return {"source": source, "line": number, "reason": exc.short}
    return {"source": source, "line": number, "case_id": exc.case_id, "reason": exc.short}


def is_header(obj: dict[str, Any]) -> bool:
    return TRACES_HEADER_KEY in obj


def is_error_trace(trace: Trace) -> bool:
    """A trace left by an engine call that raised (``hoprag run`` answers it again on resume)."""
    return trace.stop_reason == "error" and bool(trace.error)


def drop_retried(traces: Sequence[Trace]) -> list[Trace]:
    """``traces`` without the error traces that a later trace of the same case supersedes (a retry)."""
    if not any(is_error_trace(t) for t in traces):
        return list(traces)
    last = {t.case_id: i for i, t in enumerate(traces)}
    return [t for i, t in enumerate(traces) if not (is_error_trace(t) and last[t.case_id] != i)]


def looks_like_case(obj: dict[str, Any]) -> bool:
    """A cases-file record (``case_id`` and ``query``) with nothing a trace would hold."""
    return "case_id" in obj and "query" in obj and not TRACE_KEYS & obj.keys()


def normalize_case_id(obj: dict[str, Any]) -> dict[str, Any]:
    """Other pipelines write numeric case ids: ``7`` and ``7.0`` both match the case ``"7"``."""
    value = obj.get("case_id")
    if isinstance(value, float) and value.is_integer():
        return {**obj, "case_id": str(int(value))}
    if isinstance(value, int) and not isinstance(value, bool):
        return {**obj, "case_id": str(value)}
    return obj


def cases_refusal(path: Path, line: int, *, writing: bool) -> NotTracesFileError:
    if writing:
        fix = "pass the traces file to write as --out (e.g. --out traces.jsonl); a cases file is never overwritten"
    else:
        fix = "pass the traces written by `hoprag run ... --out TRACES` (arguments: CASES TRACES)"
    return NotTracesFileError(
        "this is a cases file, not traces (its records have 'case_id' and 'query' but no 'question', "
        "'answer', 'evidence' or 'steps')", source=str(path), line=line, fix=fix,
    )


def _torn_error(path: Path, torn: TornLine) -> InputError:
    return InputError(
        f"the last line is cut off ({torn.size} bytes without a line end: a run stopped mid-write)",
        source=str(path), line=torn.line, fix=TORN_FIX.format(path=path),
    )


def reason_of(exc: InputError) -> str:
    """The message of ``exc`` without its file and line prefix and without its fix."""
    text = str(exc)
    if exc.source and text.startswith(exc.source):
        text = re.sub(r"^(:\d+)?: ", "", text[len(exc.source):])  # not lstrip: "1e400 is too large" keeps its 1
    return text.split(". Fix: ")[0]


# ---------------------------------------------------------------------------------------------------
# writing


def _line(record: Trace | TracesHeader) -> str:
    # the number rule holds on the way out too: a NaN is never written (allow_nan=False)
    return json.dumps(record.to_dict(), ensure_ascii=False, allow_nan=False) + "\n"


def write_traces(path: str | Path, traces: Iterable[Trace], *, header: TracesHeader | None = None,
                 what: str = "the output") -> int:
    """Write a whole traces file (``header`` first, if any), atomically through the output guard:
    complete or absent, never over an input or a file of another kind. Returns the traces written."""
    count = 0
    with atomic_writer(path, TRACES_JSONL, what=what) as handle:
        if header is not None:
            handle.write(_line(header))
        for trace in traces:
            handle.write(_line(trace))
            count += 1
    return count


def append_trace(path: str | Path, record: Trace | TracesHeader) -> None:
    """Append one trace (or a new file's header) and flush, so a run that dies keeps every trace
    written so far. The caller checked the file (:func:`scan_traces_file`) when it started; the
    output guard still refuses an input of the command on every append."""
    with open_for_append(path, None) as handle:
        handle.write(_line(record))
        handle.flush()
