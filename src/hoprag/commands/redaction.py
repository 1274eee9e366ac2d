"""The ``traces redact`` command: a copy of a traces file fit to share (PII and user patterns replaced)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from hoprag.commands import group, renamed

out = Console()


def register(app: typer.Typer) -> None:
    @group(app, "traces").command("redact")
    def redact_cmd(
        traces_file: Path = typer.Argument(..., help="traces.jsonl (from hoprag run or any pipeline)"),
        out_file: Path = typer.Option(..., "--out", help="where the redacted copy goes (may be TRACES itself)"),
        pattern: list[str] = typer.Option(
            [], "--pattern", help="also replace matches of NAME=REGEX by <NAME_n>, e.g. 'TICKET=KD-[0-9]{4}' (repeatable)"
        ),
        patterns_file: Optional[Path] = typer.Option(None, "--patterns", help="a file of NAME=REGEX lines (# comments)"),
    ) -> None:
        """Redact a traces file for sharing: PII and your patterns become typed placeholders; ids and
        offsets stay, so the copy evaluates to the same chain and hop metrics."""
        from hoprag.evaluation.sharing import read_pattern_file, redact_traces_file
        from hoprag.security.redaction import parse_patterns

        patterns = parse_patterns(pattern) + (read_pattern_file(patterns_file) if patterns_file else ())
        summary = redact_traces_file(traces_file, out_file, patterns)
        kinds = ", ".join(f"{kind}={n}" for kind, n in summary.counts.items()) or "nothing to replace"
        out.print(f"redacted {summary.changed} of {summary.traces} traces ({kinds}) → {summary.out}")

    renamed(app, "redact", redact_cmd, "traces redact")
