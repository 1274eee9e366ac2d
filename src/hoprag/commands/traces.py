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
        spans_file: Path = typer.Argument(..., help="OTLP spans: JSON (one export request per line, or one "
                                       "document) or protobuf (one request, or the Collector's length-prefixed stream)"),
        out_file: Path = typer.Option(..., "--out", help="traces JSONL to write (replaced)"),
        case_attr: Optional[list[str]] = typer.Option(
            None, "--case-attr", metavar="NAME",
            help="span attribute holding the case id, tried in order (default: hoprag.case_id, then session.id)"),
        run_id: str = typer.Option("otel-import", "--run-id", help="run id written into every trace"),
        corpus: Optional[Path] = typer.Option(
            None, "--corpus", help="corpus the cases cite: recorded documents become its documents, by the recorded "
            "id, a metadata key (--doc-key) or the recorded text; refused when fewer than --min-resolved resolve"),
        index: Optional[str] = typer.Option(
            None, "--index", help="an index (directory or postgresql:// URL) to resolve recorded documents against, "
            "its chunks too"),
        doc_key: Optional[list[str]] = typer.Option(
            None, "--doc-key", metavar="KEY", help="document metadata key holding the corpus id, tried in order "
            "(default: doc_id, document_id, source_id, corpus_id, id, _id, file_name, file_path, source, filename)"),
        min_resolved: float = typer.Option(
            0.9, "--min-resolved", min=0.0, max=1.0, metavar="SHARE",
            help="with --corpus/--index: refuse when fewer than this share of recorded documents resolve"),
        cases_file: Optional[Path] = typer.Option(
            None, "--cases", help="cases.jsonl: a trace naming no case is matched to a case by its question text, "
            "and only these case ids count"),
        lenient: bool = typer.Option(False, "--lenient", help="skip (and count) traces naming no case instead of failing"),
        redact: bool = typer.Option(
            True, "--redact/--no-redact",
            help="replace emails, phones, cards, IBANs and national ids in the written traces by <EMAIL_1>-style "
            "placeholders (ids and offsets kept); --no-redact keeps the raw text (credentials are masked either way)",
        ),
    ) -> None:
        """Read OpenInference or OTel GenAI retrieval and LLM spans and write one Trace per question.

        The spans file is OTLP JSON or OTLP protobuf (protobuf needs pip install 'hoprag\\[otel]').

        A retrieval call is the outermost retrieval span of a nest. The selected
        evidence is the retrieved documents whose recorded text the answering (last)
        LLM call's prompt holds, in the prompt's order; else the output documents of
        the RERANKER spans; else every retrieved document in call order, then rank
        (the route is kept as the trace's plan.evidence_from and counted).
        The answer is the last LLM output's text."""
        from rich.markup import escape

        from hoprag.otel_evidence import evidence_summary
        from hoprag.otel_import import DEFAULT_CASE_ATTRS, import_otel_traces

        from hoprag.otel_sources import cases_by_id, resolver_for

        resolver = resolver_for(corpus, index, doc_key)
        summary = import_otel_traces(spans_file, out_file, case_attrs=tuple(case_attr or DEFAULT_CASE_ATTRS),
                                     run_id=run_id, redact=redact, cases=cases_by_id(cases_file), resolver=resolver,
                                     min_resolved=min_resolved, lenient=lenient)
        skipped = "".join(f", {n} traces {why} skipped" for why, n in summary.skipped_by.items())
        out.print(f"read {summary.spans} spans: wrote {summary.traces} traces{skipped} → {escape(str(summary.out))}")
        if resolver is not None:
            out.print(escape(resolver.summary()))
        out.print(evidence_summary(summary.evidence_from), soft_wrap=True)

    renamed(app, "import-traces otel", otel_cmd, "traces import")
