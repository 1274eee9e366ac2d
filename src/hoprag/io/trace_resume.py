"""What a run finds in its ``--out`` before it appends: is it a traces file at all, and what does it hold
(headers, finished cases, cases whose last trace is an error, a line cut off by a killed run).

``hoprag run`` and the recorder call :func:`check_traces_file` before they delete or append to a file,
so a cases file, a corpus or a binary file given as ``--out`` is never touched; a resume reads the
file with :func:`scan_traces_file`, through the one reader of :mod:`hoprag.io.traces`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.gc_pause import collector_paused
from hoprag.io.kinds import TRACE_KEYS, TRACES_HEADER_KEY
from hoprag.io.traces import (
    WHAT,
    NotTracesFileError,
    TracesHeader,
    cases_refusal,
    is_error_trace,
    is_header,
    looks_like_case,
    read_records,
    reason_of,
)
from hoprag.jsonl import TornLine, read_jsonl_dicts, torn_last_line

__all__ = ["TracesFileState", "check_traces_file", "scan_traces_file"]


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
        if torn is not None and torn.offset == 0 and exc.line == 1 and torn.head.startswith(b'{"' + TRACES_HEADER_KEY.encode() + b'"'):
            return  # only a cut-off header: a run killed at its very start
        reason = reason_of(exc)
        reason = f"it {reason[len(WHAT) + 1:]}" if reason.startswith(WHAT + " ") else f"its first line: {reason}"
        raise NotTracesFileError(f"not a traces file ({reason})", source=str(path), fix=_NOT_TRACES_FIX) from None


def _check_first(path: Path, number: int, obj: dict[str, Any]) -> None:
    if is_header(obj):
        return
    if looks_like_case(obj):
        raise cases_refusal(path, number, writing=True)
    if "case_id" not in obj or not TRACE_KEYS & obj.keys():
        keys = ", ".join(sorted(obj)[:6]) or "none"
        raise NotTracesFileError(
            f"not a traces file (its first record is neither a traces header nor a trace; keys: {keys})",
            source=str(path), line=number, fix=_NOT_TRACES_FIX,
        )


_NOT_TRACES_FIX = "pass another --out for the traces (e.g. --out traces.jsonl); hoprag run never overwrites a file that is not its own"


def scan_traces_file(path: str | Path) -> TracesFileState:
    """Read an existing traces file before appending: headers, finished case ids, a torn last line.

    Refuses (:class:`NotTracesFileError`) a file that is not a traces file; a bad line other than a
    cut-off last one is an error naming it, with the fix a resume offers.
    """
    path = Path(path)
    check_traces_file(path)
    try:
        with collector_paused():
            read = read_records(path, lenient=False, resume=True)
    except NotTracesFileError:
        raise
    except InputError as exc:
        raise InputError(
            f"{reason_of(exc)}; only a cut-off last line is repaired on resume, this one is followed by others",
            source=str(path), line=exc.line,
            fix=f"fix or delete line {exc.line}, or start over with --no-resume (which replaces the file)",
        ) from None
    return TracesFileState(
        path=path,
        headers=read.headers,
        case_ids=frozenset(t.case_id for t in read.traces),
        # the reader kept an error trace only where nothing followed it: a resume answers these again
        errored=frozenset(t.case_id for t in read.traces if is_error_trace(t)),
        engines=frozenset(t.engine for t in read.traces if t.engine),
        config_hashes=frozenset(t.config_hash for t in read.traces if t.config_hash),
        run_ids=tuple(h.run_id for h in read.headers if h.run_id)
        + tuple(dict.fromkeys(t.run_id for t in read.traces if t.run_id)),
        torn=read.torn,
    )
