"""Terminal rendering (rich) of hits, traces and metric tables. Pure functions: records in, renderables out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from hoprag.records import Chunk, Hit, Trace

def _snippet(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def fallback_counts(counts: Mapping[str, int], *, traces: int | None = None) -> str:
    """``0 model fallbacks`` or ``5 model fallbacks in 2 traces (planner 2, judge 3)``."""
    total = sum(counts.values())
    noun = "model fallback" if total == 1 else "model fallbacks"
    if not total:
        return f"0 {noun}"
    where = f" in {traces} trace{'s' if traces != 1 else ''}" if traces is not None else ""
    roles = ", ".join(f"{role} {n}" for role, n in sorted(counts.items()))
    return f"{total} {noun}{where} ({roles})"


def hits_table(hits: Sequence[Hit], chunks: Mapping[str, Chunk], *, title: str = "") -> Table:
    table = Table(title=title, show_lines=False)
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("title", ratio=1)
    table.add_column("text", ratio=3)
    for hit in hits:
        chunk = chunks.get(hit.chunk_id)
        table.add_row(str(hit.rank), f"{hit.score:.3f}", escape(hit.title), escape(_snippet(chunk.text if chunk else "", 160)))
    return table


#: why the evidence is partial, by the stop reason the trace records
PARTIAL_WHY = {
    "max_hops": "the hop limit was reached",
    "time_budget": "the time budget ran out",
    "token_budget": "the token budget ran out",
    "loop_detected": "the search went in a loop",
    "no_new_evidence": "a hop found nothing new",
    "no_bridge": "no bridge to the next hop was found",
    "no_evidence": "nothing was found",
}


def trace_report(trace: Trace, *, hits_per_step: int = 3) -> list[Any]:
    """The answer first, then the evidence trail (one row per retrieval call), the context, the citations."""
    parts: list[Any] = []
    answer = trace.answer
    headline = "(abstained: no supported answer)" if answer.abstained else answer.text
    cited = list(dict.fromkeys(f"[{c.doc_id}, hop {c.hop}]" for claim in answer.claims for c in claim.citations))
    if cited and not answer.abstained:
        headline += " " + " ".join(cited)
    if answer.partial:
        headline += f"  (partial evidence: {PARTIAL_WHY.get(trace.stop_reason, 'the search stopped')} before the chain was complete)"
    parts.append(
        Panel(
            Text(headline, style="bold"),
            title="answer",
            subtitle=f"confidence {answer.confidence:.2f} · stop: {trace.stop_reason} · {trace.latency_ms:.1f} ms",
        )
    )
    if trace.fallbacks:
        parts.append(Text(f"{fallback_counts(trace.fallbacks)}: those roles answered offline", style="bold yellow"))
    for warning in trace.warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    trail = Table(title="evidence trail (one row per retrieval call; ✓ = kept)", show_lines=True)
    trail.add_column("step")
    trail.add_column("hop", justify="right")
    trail.add_column("issued query", ratio=2)
    trail.add_column("top hits (rank · score · title)", ratio=3)
    for step in trace.steps:
        selected = set(step.selected)
        label = step.step_id + (f" ← {', '.join(step.depends_on)}" if step.depends_on else "")
        query = escape(_snippet(step.issued_query, 120))  # corpus and user text is never markup
        if step.bridge.get("value"):
            query = f"[bold]bridge {escape(repr(step.bridge['value']))}[/]\n{query}"
        shown = [h for h in step.hits[:hits_per_step]] + [
            h for h in step.hits[hits_per_step:] if h.chunk_id in selected
        ]
        lines = [
            f"{'✓' if h.chunk_id in selected else ' '} {h.rank} · {h.score:.2f} · {escape(h.title or h.doc_id)}" for h in shown
        ]
        if step.error:
            lines.append(f"[red]error: {escape(str(step.error))}[/]")
        trail.add_row(label, str(step.hop), query, "\n".join(lines) or "(no hits)")
    parts.append(trail)
    context = Table(title="evidence handed to the answerer (best first)")
    context.add_column("#", justify="right")
    context.add_column("hop", justify="right")
    context.add_column("title", ratio=1)
    context.add_column("text", ratio=3)
    for position, item in enumerate(trace.evidence, start=1):
        context.add_row(str(position), str(item.hop), escape(item.title), escape(_snippet(item.text, 140)))
    parts.append(context)
    if answer.claims:
        cites = Table(title="reasoning chain: claims and the evidence they cite")
        cites.add_column("claim", ratio=3)
        cites.add_column("cites [doc, hop]", ratio=1)
        for claim in answer.claims:
            refs = ", ".join(f"[{c.doc_id}, hop {c.hop}]" for c in claim.citations)
            cites.add_row(escape(_snippet(claim.text, 160)), escape(refs))
        parts.append(cites)
    return parts


def _format(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def comparison_table(
    aggregates: Mapping[str, Mapping[str, Any]], metrics: Sequence[str], *, title: str = "", baseline: str | None = None
) -> Table:
    """Metrics as rows, runs as columns (fits a terminal), plus the gain of the last run over ``baseline``."""
    labels = list(aggregates)
    table = Table(title=title)
    table.add_column("metric")
    for label in labels:
        table.add_column(label, justify="right")
    gain_of = labels[-1] if baseline in aggregates and len(labels) > 1 else None
    if gain_of:
        table.add_column(f"{gain_of} − {baseline}", justify="right")
    for name in metrics:
        values = [aggregates[label].get(name) for label in labels]
        row = [name, *[_format(v) for v in values]]
        if gain_of:
            a, b = aggregates[gain_of].get(name), aggregates[baseline].get(name)
            row.append(f"{a - b:+.3f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) else "–")
        table.add_row(*row)
    return table
