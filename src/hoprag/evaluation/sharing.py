"""Traces prepared for sharing: a redacted copy of a traces file that still evaluates the same.

PII (the one detector set of :mod:`hoprag.security.pii`) and any user patterns become typed placeholders
(``<EMAIL_1>``, ``<TICKET_2>``), credentials ``***``, through :mod:`hoprag.security.boundary`, the
mechanism every stored trace goes through; case, document and chunk ids, ranks, scores and span offsets stay, so the chain
and hop metrics of the copy equal those of the original.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hoprag.errors import InputError
from hoprag.files import read_text
from hoprag.io.traces import read_traces_file, write_traces
from hoprag.security.boundary import trace_for_storage
from hoprag.security.redaction import RedactPattern, parse_patterns

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
    read = read_traces_file(src)
    counts: dict[str, int] = {}
    changed = 0
    redacted = []
    for trace in read.traces:
        clean = trace_for_storage(trace, "shared-traces", patterns=patterns)
        changed += clean.to_dict() != trace.to_dict()
        for kind, n in clean.redactions.items():
            counts[kind] = counts.get(kind, 0) + n
        redacted.append(clean)
    # a copy is complete or absent, never half-written; the run header is kept
    write_traces(dst, redacted, header=read.headers[0] if read.headers else None)
    return RedactionSummary(traces=len(redacted), changed=changed, counts=dict(sorted(counts.items())), out=dst)
