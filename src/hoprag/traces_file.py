"""A traces file on disk: its run header, how to tell it from other JSONL, and reading it back.

``hoprag run`` starts every traces file with one header record naming the run that writes it::

    {"hoprag_traces": 1, "run_id": "...", "engine": "multihop", "config_hash": "...",
     "index_artifact_id": "...", "created": "2026-01-01T00:00:00Z"}

then appends one :class:`~hoprag.records.Trace` per line. Every reader here skips header records;
a file without one (another pipeline's traces, an older hoprag) reads as before. Resuming compares
the header with the run about to append (:mod:`hoprag.pipeline.runner`), so two configurations
never share one file.

A question whose engine call failed has an *error trace* (``stop_reason: "error"`` and ``error``
set). Resuming answers it again and appends the new trace, so the file keeps the whole history;
:func:`read_trace_dicts`, which every trace reader goes through, reads an error trace followed by a
later trace of the same case as superseded by that retry: only the last one is read (and it is
not a duplicate). A file without error traces reads exactly as written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.jsonl import TornLine, read_jsonl_dicts, torn_last_line

__all__ = [
    "HEADER_KEY",
    "NotTracesFileError",
    "TracesFileState",
    "TracesHeader",
    "check_traces_file",
    "drop_retried",
    "is_error_trace",
    "is_header",
    "read_trace_dicts",
    "scan_traces_file",
]

HEADER_KEY = "hoprag_traces"
HEADER_VERSION = 1
#: keys only a trace has; a record with ``query`` and none of these is a case
TRACE_KEYS = frozenset({"question", "answer", "evidence", "steps", "stop_reason", "run_id"})
WHAT = "traces file"
TORN_FIX = "resume the run to repair it (`hoprag run INDEX CASES --out {path}` drops the cut-off line), or skip it with `hoprag eval --lenient`"


class NotTracesFileError(InputError):
    """A file given as traces (to write or to read) holds something else: cases, a corpus, binary data."""


@dataclass(frozen=True)
class TracesHeader:
    """The first line of a traces file written by ``hoprag run``: which run, engine, config and index."""

    run_id: str
    engine: str
    config_hash: str = ""
    index_artifact_id: str = ""
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def to_dict(self) -> dict[str, Any]:
        return {HEADER_KEY: HEADER_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TracesHeader:
        return cls(
            run_id=str(data.get("run_id") or ""),
            engine=str(data.get("engine") or ""),
            config_hash=str(data.get("config_hash") or ""),
            index_artifact_id=str(data.get("index_artifact_id") or ""),
            created=str(data.get("created") or ""),
        )


def is_header(obj: dict[str, Any]) -> bool:
    return HEADER_KEY in obj


def is_error_trace(obj: Any) -> bool:
    """A trace (a :class:`~hoprag.records.Trace` or its dict) left by an engine call that raised."""
    if isinstance(obj, dict):
        return obj.get("stop_reason") == "error" and bool(obj.get("error"))
    return getattr(obj, "stop_reason", None) == "error" and bool(getattr(obj, "error", None))


def _case_id_of(obj: Any) -> str:
    return str(obj.get("case_id") if isinstance(obj, dict) else getattr(obj, "case_id", ""))


def drop_retried(records: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """``records`` without the error traces that a later trace of the same case supersedes (a retry)."""
    if not any(is_error_trace(obj) for _, obj in records):
        return records
    last = {_case_id_of(obj): i for i, (_, obj) in enumerate(records)}
    return [record for i, record in enumerate(records)
            if not (is_error_trace(record[1]) and last[_case_id_of(record[1])] != i)]


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


def _cases_refusal(path: Path, line: int, *, writing: bool) -> NotTracesFileError:
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


def read_trace_dicts(
    path: str | Path, *, lenient: bool = False, fast: Callable[[str], Any] | None = None
) -> tuple[list[tuple[int, Any]], list[dict[str, Any]]]:
    """``(line, record)`` of every trace in ``path`` (headers skipped, case ids as strings, an error
    trace superseded by a retry left out: :func:`drop_retried`), and what was excluded.

    A cut-off last line is an error naming it, or with ``lenient`` excluded and reported; a file
    whose first record is a case is refused. Other bad lines raise (the caller decides about records
    that parse but are not valid traces). ``fast`` (e.g. :func:`hoprag.trace_json.trace_from_json_line`)
    is offered every line after the first record: a line it reads comes back as its result instead of
    a dict, any other line (``fast`` returns ``None``) is read as without it.
    """
    path = Path(path)
    torn = torn_last_line(path) if path.is_file() else None
    records: list[tuple[int, Any]] = []
    excluded: list[dict[str, Any]] = []

    def after_first(line: str) -> Any:  # the first record is read as a dict: is it a case?
        return fast(line) if records else None  # type: ignore[misc]

    try:
        for number, obj in read_jsonl_dicts(path, WHAT, allow_empty=False, fast=after_first if fast else None):
            if type(obj) is not dict:
                records.append((number, obj))
                continue
            if is_header(obj):
                continue
            if not records and looks_like_case(obj):
                raise _cases_refusal(path, number, writing=False)
            records.append((number, normalize_case_id(obj)))
    except NotTracesFileError:
        raise
    except InputError as exc:
        if torn is None or exc.line != torn.line:
            raise
        if not lenient:
            raise _torn_error(path, torn) from None
        excluded.append({"source": str(path), "line": torn.line, "reason": f"cut-off last line ({torn.size} bytes)"})
    return drop_retried(records), excluded


@dataclass(frozen=True)
class TracesFileState:
    """What an existing traces file holds, read before a run appends to it."""

    path: Path
    headers: tuple[TracesHeader, ...]
    case_ids: frozenset[str]
    #: case ids whose last trace is an error trace (a resume answers them again)
    errored: frozenset[str]
    #: ``engine`` and ``config_hash`` values of the traces themselves (for files without a header)
    engines: frozenset[str]
    config_hashes: frozenset[str]
    run_ids: tuple[str, ...]
    torn: TornLine | None


def check_traces_file(path: str | Path) -> None:
    """Refuse ``path`` unless it is empty or its first record is a traces header or a trace.

    Called before a run deletes or appends to an existing ``--out``: a cases file, a corpus or a
    binary file given there by mistake is never touched.
    """
    path = Path(path)
    torn = torn_last_line(path)
    try:
        for number, obj in read_jsonl_dicts(path, WHAT):
            _check_first(path, number, obj)
            return
    except NotTracesFileError:
        raise
    except InputError as exc:
        if torn is not None and torn.offset == 0 and exc.line == 1 and torn.head.startswith(b'{"' + HEADER_KEY.encode()):
            return  # only a cut-off header: a run killed at its very start
        reason = _reason(exc)
        reason = f"it {reason[len(WHAT) + 1:]}" if reason.startswith(WHAT + " ") else f"its first line: {reason}"
        raise NotTracesFileError(f"not a traces file ({reason})", source=str(path), fix=_not_traces_fix()) from None


def _check_first(path: Path, number: int, obj: dict[str, Any]) -> None:
    if is_header(obj):
        return
    if looks_like_case(obj):
        raise _cases_refusal(path, number, writing=True)
    if "case_id" not in obj or not TRACE_KEYS & obj.keys():
        keys = ", ".join(sorted(obj)[:6]) or "none"
        raise NotTracesFileError(
            f"not a traces file (its first record is neither a traces header nor a trace; keys: {keys})",
            source=str(path), line=number, fix=_not_traces_fix(),
        )


def _not_traces_fix() -> str:
    return "pass another --out for the traces (e.g. --out traces.jsonl); hoprag run never overwrites a file that is not its own"


def _reason(exc: InputError) -> str:
    text = str(exc)
    if exc.source and text.startswith(exc.source):
        text = text[len(exc.source):].lstrip(":0123456789 ")
    return text.split(". Fix: ")[0]


def scan_traces_file(path: str | Path) -> TracesFileState:
    """Read an existing traces file before appending: headers, finished case ids, a torn last line.

    Refuses (:class:`NotTracesFileError`) a file that is not a traces file; a malformed line other
    than a cut-off last one is an error naming it.
    """
    path = Path(path)
    check_traces_file(path)
    torn = torn_last_line(path)
    headers: list[TracesHeader] = []
    case_ids: set[str] = set()
    errored: set[str] = set()
    engines: set[str] = set()
    hashes: set[str] = set()
    run_ids: list[str] = []
    try:
        for number, obj in read_jsonl_dicts(path, WHAT):
            if is_header(obj):
                headers.append(TracesHeader.from_dict(obj))
                continue
            case_id = normalize_case_id(obj).get("case_id")
            if case_id is None or not str(case_id).strip():
                raise NotTracesFileError(
                    "this line is not a trace (no case_id)", source=str(path), line=number,
                    fix="remove the line, or start over with --no-resume (which replaces the file)",
                )
            case_ids.add(str(case_id))
            if is_error_trace(obj):
                errored.add(str(case_id))
            else:
                errored.discard(str(case_id))
            engines.update([str(obj["engine"])] if obj.get("engine") else [])
            hashes.update([str(obj["config_hash"])] if obj.get("config_hash") else [])
            if obj.get("run_id") and str(obj["run_id"]) not in run_ids:
                run_ids.append(str(obj["run_id"]))
    except NotTracesFileError:
        raise
    except InputError as exc:
        if torn is None or exc.line != torn.line:
            raise _not_last(path, exc) from None
    return TracesFileState(
        path=path,
        headers=tuple(headers),
        case_ids=frozenset(case_ids),
        errored=frozenset(errored),
        engines=frozenset(engines),
        config_hashes=frozenset(hashes),
        run_ids=tuple(h.run_id for h in headers if h.run_id) + tuple(run_ids),
        torn=torn,
    )


def _not_last(path: Path, exc: InputError) -> InputError:
    return InputError(
        f"{_reason(exc)}; only a cut-off last line is repaired on resume, this one is followed by others",
        source=str(path), line=exc.line,
        fix=f"fix or delete line {exc.line}, or start over with --no-resume (which replaces the file)",
    )
