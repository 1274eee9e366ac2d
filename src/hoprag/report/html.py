"""A self-contained HTML evaluation report: inline CSS and SVG, no script, no network.

Sections: headline metrics; per-hop recall bars (free-running, and conditional when an oracle run
was given); earliest-failure breakdown; latency distribution (histogram) and per-hop latency;
chain coverage by question type and by template; fallback / stopping counts; the worst cases with
their trails (each step's hop, query and selected documents, gold documents marked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.evaluation.failures import EXTRA_CLASSES, FAILURE_CLASSES, not_assessable_note
from hoprag.records import Trace

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1100px;color:#1d232a;padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #dde;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #dde;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f8}td.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:flex;align-items:center;margin:2px 0}.bar .l{width:260px;font-size:12px}.bar .t{height:14px;background:#4a7bd0;border-radius:2px}
.bar .t.c{background:#d08a4a}.bar .t.f{background:#c94f4f}.bar .v{margin-left:6px;font-size:12px;color:#445}
.muted{color:#667;font-size:12px}.gold{background:#e3f4e1}.trail{font-size:12px;margin:0;padding-left:16px}
"""
HEADLINE = ("cases", "missing_traces", "chain_coverage@2", "chain_coverage@5", "chain_coverage@10", "path_precision@10",
            "hop1_recall@10", "hop2_recall@10", "hop3_recall@10", "answer_em", "answer_f1", "citation_support",
            "claim_recall", "pass_rate", "latency_ms_p50", "latency_ms_p95", "uncertain_cases", "unknown_traces")


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return escape(str(value))


def _bar(label: str, value: float | None, scale: float = 1.0, cls: str = "", text: str | None = None) -> str:
    width = 0 if value is None or scale <= 0 else max(0.0, min(1.0, value / scale)) * 520
    shown = text if text is not None else _fmt(value)
    return (f'<div class="bar"><span class="l">{escape(label)}</span><span class="t {cls}" style="width:{width:.1f}px"></span>'
            f'<span class="v">{shown}</span></div>')


def _histogram(values: Sequence[float], bins: int = 20) -> str:
    if not values:
        return '<p class="muted">no latency values</p>'
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / span * bins))] += 1
    top = max(counts)
    w, h = 560, 140
    bw = w / bins
    rects = "".join(
        f'<rect x="{i * bw:.1f}" y="{h - c / top * (h - 20):.1f}" width="{bw - 2:.1f}" height="{c / top * (h - 20):.1f}" fill="#4a7bd0">'
        f"<title>{lo + i * span / bins:.1f}–{lo + (i + 1) * span / bins:.1f} ms: {c}</title></rect>"
        for i, c in enumerate(counts)
    )
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 18}" role="img" aria-label="latency histogram">{rects}'
            f'<text x="0" y="{h + 14}" font-size="11">{lo:.1f} ms</text><text x="{w - 60}" y="{h + 14}" font-size="11">{hi:.1f} ms</text></svg>')


def _table(rows: list[list[str]], head: list[str]) -> str:
    out = "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
    for row in rows:
        out += "<tr>" + "".join(f'<td class="n">{c}</td>' if c[:1].isdigit() or c == "–" else f"<td>{c}</td>" for c in row) + "</tr>"
    return out + "</table>"


def _trail(case: Case | None, trace: Trace | None) -> str:
    if trace is None:
        return '<span class="muted">no trace</span>'
    gold = {f.source_id for f in case.facts.values()} if case else set()
    items = []
    for step in trace.steps:
        docs = []
        for chunk_id in step.selected[:6]:
            hit = next((h for h in step.hits if h.chunk_id == chunk_id), None)
            doc = hit.doc_id if hit else chunk_id
            docs.append(f'<span class="{"gold" if doc in gold else ""}">{escape(doc)}</span>')
        query = escape((step.sub_query or step.issued_query)[:80])
        items.append(f"<li>hop {step.hop} · {escape(step.step_id)} · “{query}” → {', '.join(docs) or '–'}</li>")
    answer = escape(trace.answer.text[:80]) if not trace.answer.abstained else "(abstained)"
    items.append(f"<li>answer: {answer} · stop: {escape(trace.stop_reason or '–')}</li>")
    return f'<ul class="trail">{"".join(items)}</ul>'


def render_html(
    payload: Mapping[str, Any],
    *,
    title: str = "hoprag evaluation",
    cases: Sequence[Case] = (),
    traces: Mapping[str, Trace] | None = None,
    worst: int = 15,
    k: int | None = None,
) -> str:
    """HTML for a :class:`~hoprag.evaluation.chain_eval.ChainReport` JSON payload."""
    agg = payload.get("aggregate", {})
    config = payload.get("config", {})
    ks = config.get("ks") or [10]
    k = k or max(ks)
    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f'<p class="muted">dataset version {_fmt(config.get("dataset_version"))} · metric config {_fmt(config.get("metric_config_hash"))} · '
             f'judge {_fmt((config.get("judge") or {}).get("model_id"))} / {_fmt((config.get("judge") or {}).get("prompt_version"))} · ks {ks}</p>']
    headline = [h.replace("@10", f"@{k}") for h in HEADLINE]
    parts.append("<h2>Headline</h2>" + _table([[escape(m), _fmt(agg.get(m))] for m in headline if m in agg], ["metric", "value"]))

    parts.append(f"<h2>Per-hop recall @{k} (hop = graph layer)</h2>")
    for layer in (1, 2, 3):
        free = agg.get(f"hop{layer}_recall@{k}")
        if free is None and layer > 1:
            continue
        parts.append(_bar(f"hop {layer} free-running", free))
        cond = agg.get(f"cond_hop{layer}_recall@{k}")
        if cond is not None:
            parts.append(_bar(f"hop {layer} conditional (oracle-hop)", cond, cls="c"))
    parts.append(_bar(f"complete chain coverage@{k}", agg.get(f"chain_coverage@{k}")))
    parts.append(_bar(f"path precision@{k}", agg.get(f"path_precision@{k}")))

    failures = payload.get("failures", {})
    failed = failures.get("failed", 0) or 0
    parts.append(f"<h2>Earliest failure ({failed} failing of {failed + (failures.get('passed') or 0)} cases)</h2>")
    unassessed = payload.get("not_assessable") or {}
    for name in FAILURE_CLASSES + EXTRA_CLASSES:
        if name in unassessed:
            continue
        count = failures.get(name, 0)
        parts.append(_bar(name.replace("_", " "), float(count), scale=float(max(failed, 1)), cls="f", text=str(count)))
    if unassessed:
        parts.append(f'<p class="muted">{escape(not_assessable_note(unassessed))}</p>')

    rows = payload.get("cases", [])
    latencies = [float(r["latency_ms"]) for r in rows if r.get("latency_ms") is not None]
    stopping = payload.get("stopping", {})
    parts.append("<h2>Latency</h2>" + _histogram(latencies))
    hop_lat = stopping.get("mean_hop_latency_ms") or {}
    if hop_lat:
        top = max(hop_lat.values()) or 1.0
        parts.extend(_bar(f"mean latency hop {h} (ms)", v, scale=top) for h, v in hop_lat.items())
    fb = stopping.get("fallbacks") or {}
    parts.append("<h2>Stopping and fallback</h2>" + _table(
        [[escape(n), str(c)] for n, c in fb.items()]
        + [["unsupported completion rate", _fmt(stopping.get("unsupported_completion_rate"))],
           ["timeouts", _fmt(stopping.get("timeouts"))], ["retries", _fmt(stopping.get("retries"))],
           ["max parallel branches", _fmt(stopping.get("max_parallel_branches"))],
           ["stop reasons", escape(", ".join(f"{a}: {b}" for a, b in (stopping.get("stop_reasons") or {}).items()))]],
        ["outcome", "count"]))

    for key in ("question_type", "template", "chain_hops", "answer_kind"):
        groups = (payload.get("groups") or {}).get(key) or {}
        if len(groups) <= 1 and "(none)" in groups:
            continue
        parts.append(f"<h2>Chain coverage@{k} by {key.replace('_', ' ')}</h2>")
        parts.extend(_bar(f"{name} ({g.get('cases')})", g.get(f"chain_coverage@{k}")) for name, g in groups.items())

    by_id = {c.case_id: c for c in cases}
    order = sorted(rows, key=lambda r: (bool(r.get("passed")), r.get(f"chain_coverage@{k}") or 0.0, r.get("answer_f1") or 0.0, r["case_id"]))
    table_rows = []
    for row in order[:worst]:
        trace = (traces or {}).get(row["case_id"])
        table_rows.append([escape(row["case_id"]), escape(str(row.get("failure") or "passed")), _fmt(row.get(f"chain_coverage@{k}")),
                           _fmt(row.get("answer_f1")), _fmt(row.get("latency_ms")), _trail(by_id.get(row["case_id"]), trace)])
    parts.append(f"<h2>Worst {len(table_rows)} cases</h2>" + _table(table_rows, ["case", "earliest failure", f"coverage@{k}", "F1", "ms", "trail (gold documents shaded)"]))
    exclusions = payload.get("exclusions") or []
    if exclusions:
        parts.append(f"<h2>Exclusions ({len(exclusions)})</h2>" + _table(
            [[escape(str(e.get("case_id", "–"))), escape(str(e.get("line", "–"))), escape(e["reason"])] for e in exclusions[:200]],
            ["case", "line", "reason"]))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(path: str | Path, payload: Mapping[str, Any], **kwargs: Any) -> Path:
    """Write the report page atomically through the output guard (:mod:`hoprag.io.outputs`)."""
    from hoprag.io.kinds import HTML_REPORT
    from hoprag.io.outputs import write_text

    return write_text(path, render_html(payload, **kwargs), HTML_REPORT)
