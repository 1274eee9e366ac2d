"""``hoprag traces import``: another framework's OpenTelemetry spans as a traces file ``hoprag eval`` scores."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from hoprag.commands import group, renamed

out = Console()


def register(app: typer.Typer) -> None:
    @group(app, "traces").command("import")
    def otel_cmd(
        spans_file: Path = typer.Argument(..., help="OTLP JSON spans: one export request per line, or one document"),
        out_file: Path = typer.Option(..., "--out", help="traces JSONL to write (replaced)"),
        case_attr: Optional[list[str]] = typer.Option(
            None, "--case-attr", metavar="NAME",
            help="span attribute holding the case id, tried in order (default: hoprag.case_id, then session.id)"),
        run_id: str = typer.Option("otel-import", "--run-id", help="run id written into every trace"),
        redact: bool = typer.Option(
            True, "--redact/--no-redact",
            help="replace emails, phones, cards, IBANs and national ids in the written traces by <EMAIL_1>-style "
            "placeholders (ids and offsets kept); --no-redact keeps the raw text (credentials are masked either way)",
        ),
    ) -> None:
        """Read OpenInference retrieval and LLM spans (OTLP JSON) and write one Trace per trace id."""
        from rich.markup import escape

        from hoprag.otel_import import DEFAULT_CASE_ATTRS, import_otel_traces

        summary = import_otel_traces(spans_file, out_file, case_attrs=tuple(case_attr or DEFAULT_CASE_ATTRS),
                                     run_id=run_id, redact=redact)
        skipped = f", {summary.skipped} traces without retrieval or LLM spans skipped" if summary.skipped else ""
        out.print(f"read {summary.spans} spans: wrote {summary.traces} traces{skipped} → {escape(str(summary.out))}")

    renamed(app, "import-traces otel", otel_cmd, "traces import")
