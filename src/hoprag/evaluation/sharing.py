"""Traces prepared for sharing: a redacted copy of a traces file that still evaluates the same.

PII (the one detector set of :mod:`hoprag.security.pii`) and any user patterns become typed placeholders
(``<EMAIL_1>``, ``<TICKET_2>``), credentials ``***``, through :mod:`hoprag.security.boundary`, the
mechanism every stored trace goes through; case, document and chunk ids, ranks, scores and span offsets stay, so the chain
and hop metrics of the copy equal those of the original.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hoprag.errors import InputError
from hoprag.evaluation.runner import read_traces
from hoprag.files import open_text, read_text
from hoprag.jsonl import iter_jsonl_dicts
from hoprag.security.boundary import trace_for_storage
from hoprag.security.redaction import RedactPattern, parse_patterns
from hoprag.traces_file import is_header

__all__ = ["RedactionSummary", "read_pattern_file", "redact_traces_file"]


@dataclass(frozen=True)
class RedactionSummary:
    traces: int
    changed: int
    counts: dict[str, int]
    out: Path


def read_pattern_file(path: str | Path) -> tuple[RedactPattern, ...]:
    """One ``NAME=REGEX`` per line; blank lines and lines starting with ``#`` are skipped."""
    lines = [line.strip() for line in read_text(path, "patterns file").splitlines()]
    return parse_patterns(line for line in lines if line and not line.startswith("#"))


def redact_traces_file(src: str | Path, dst: str | Path, patterns: tuple[RedactPattern, ...] = ()) -> RedactionSummary:
    """Write ``dst``: every trace of ``src`` redacted (its run header kept as is), atomically."""
    src, dst = Path(src), Path(dst)
    if dst.is_dir():
        raise InputError("is a directory", source=str(dst), fix="give --out a file path, e.g. traces.redacted.jsonl")
    traces = read_traces(src)
    with open_text(src, "traces file") as handle:
        first = next(iter_jsonl_dicts([next(iter(handle), "")], source=str(src)), None)
    header = first[1] if first is not None and is_header(first[1]) else None
    counts: dict[str, int] = {}
    changed = 0
    redacted = []
    for trace in traces:
        clean = trace_for_storage(trace, "shared-traces", patterns=patterns)
        changed += clean.to_dict() != trace.to_dict()
        for kind, n in clean.redactions.items():
            counts[kind] = counts.get(kind, 0) + n
        redacted.append(clean)
    from hoprag.io.kinds import TRACES_JSONL
    from hoprag.io.outputs import atomic_writer

    with atomic_writer(dst, TRACES_JSONL) as handle:  # a copy is complete or absent, never half-written
        if header is not None:
            handle.write(json.dumps(header, ensure_ascii=False) + "\n")
        for trace in redacted:
            handle.write(json.dumps(trace.to_dict(), ensure_ascii=False) + "\n")
    return RedactionSummary(traces=len(redacted), changed=changed, counts=dict(sorted(counts.items())), out=dst)
