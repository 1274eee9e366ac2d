"""JSON views of traces, documents and gated runs for the API, each limited to what a caller may see."""

from __future__ import annotations

import math
from typing import Any

from hoprag.records import HopStep, Trace
from hoprag.service.state import ServiceError, ServiceState
from hoprag.service.streaming import hit_view

__all__ = ["answer_view", "claim_span", "document_view", "gate_view", "metric_series", "report_html", "split_issued", "step_view",
           "trace_visible", "traces_visible"]

CONTEXT_CHARS = 400
_NOT_FOUND_FIX = "use a doc_id from an answer's citations"


def _doc_ids(trace: Trace) -> set[str]:
    ids = {h.doc_id for s in trace.steps for h in s.hits}
    ids |= {e.doc_id for e in trace.evidence}
    ids |= {c.doc_id for claim in trace.answer.claims for c in claim.citations}
    return ids


def trace_visible(trace: Trace, view: Any) -> bool:
    """Whether every document a trace mentions is visible in ``view`` (a cleared index)."""
    return all(doc_id in view.documents for doc_id in _doc_ids(trace))


def claim_span(claim_text: str, chunk: Any) -> tuple[int, int] | None:
    """Where a claim's text stands in its cited chunk, as document offsets (None when it is not a span of it)."""
    text = claim_text.strip()
    at = chunk.text.find(text) if chunk is not None and text else -1
    return None if at < 0 else (chunk.start + at, chunk.start + at + len(text))


def answer_view(trace: Trace, view: Any, *, stored: bool, clearance: str) -> dict[str, Any]:
    """What ``POST /api/ask`` returns: answer, numbered citations, claims, the trail and the evidence.

    A citation's ``sentence_start``/``sentence_end`` are the offsets of the first claim citing it
    that is a span of the passage (the offline answerer's claims are whole sentences): the page
    highlights that sentence rather than the whole passage (``start``/``end``)."""
    numbered: dict[str, dict[str, Any]] = {}
    for claim in trace.answer.claims:
        for c in claim.citations:
            chunk = view.chunks.get(c.chunk_id)
            if c.chunk_id not in numbered:
                document = view.documents.get(c.doc_id)
                numbered[c.chunk_id] = {"chunk_id": c.chunk_id, "doc_id": c.doc_id, "hop": c.hop,
                                        "title": document.title if document else "",
                                        "start": chunk.start if chunk else None, "end": chunk.end if chunk else None,
                                        "sentence_start": None, "sentence_end": None,
                                        "marker": len(numbered) + 1}
            entry = numbered[c.chunk_id]
            found = claim_span(claim.text, chunk) if entry["sentence_start"] is None else None
            if found is not None:
                entry["sentence_start"], entry["sentence_end"] = found
    claims = [{"text": claim.text, "citations": [numbered[c.chunk_id] for c in claim.citations]}
              for claim in trace.answer.claims]
    kept: dict[str, list[str]] = {}
    for e in trace.evidence:  # a passage is kept once: by the step that first held it
        kept.setdefault(e.step_id, []).append(e.chunk_id)
    steps = [step_view(s, kept.get(s.step_id, [])) for s in trace.steps]
    evidence = [{"chunk_id": e.chunk_id, "doc_id": e.doc_id, "title": e.title, "hop": e.hop, "step_id": e.step_id,
                 "text": e.text[:400], "start": e.hit.start, "end": e.hit.end} for e in trace.evidence]
    return {"trace_id": trace.case_id, "stored": stored, "question": trace.question, "answer": trace.answer.text,
            "abstained": trace.answer.abstained, "partial": trace.answer.partial,
            "confidence": trace.answer.confidence, "stop_reason": trace.stop_reason, "claims": claims,
            "citations": list(numbered.values()), "steps": steps, "evidence": evidence,
            "warnings": list(trace.warnings), "latency_ms": round(trace.latency_ms, 3), "engine": trace.engine,
            "timings": dict(trace.timings), "clearance": clearance}


def split_issued(step: HopStep) -> tuple[str, list[str]]:
    """The text a step searched without its conditioning, and the conditioning terms apart.

    The bridge expander leads the sub-query with the bridge value, repeated to weigh it
    ("Steven Bruce Steven Bruce Which Canadian…"): the page shows "Which Canadian…" conditioned
    on "Steven Bruce". A graph step's "query" names the walk's seed entities ("ppr: a, b")."""
    issued = step.issued_query or step.sub_query
    if any(h.retriever == "graph" for h in step.hits) or issued.startswith("ppr"):
        seeds = issued.partition(":")[2]
        return "graph walk", [t.strip() for t in seeds.split(",") if t.strip()]
    value = str(step.bridge.get("value") or "").strip()
    if not value:
        return issued, []
    rest = issued
    while rest.startswith(value + " "):
        rest = rest[len(value) + 1:]
    return rest.strip() or issued, [value]


def step_view(step: HopStep, kept: list[str]) -> dict[str, Any]:
    """One step of the trail: what it searched, conditioned on what, its hits and the passages it kept."""
    query, conditioning = split_issued(step)
    kind = "graph" if query == "graph walk" else ("oracle" if step.bridge.get("oracle") else "retrieval")
    return {"step_id": step.step_id, "hop": step.hop, "sub_query": step.sub_query, "issued_query": step.issued_query,
            "query": query, "conditioning": conditioning, "kind": kind, "kept": kept,
            "hits": [hit_view(h) for h in step.hits], "selected": list(step.selected),
            "duplicates": list(step.duplicates), "bridge": step.bridge, "depends_on": list(step.depends_on),
            "latency_ms": step.latency_ms, "cumulative_ms": step.cumulative_ms, "error": step.error}


def _span(text: str, span: str | None) -> tuple[int, int] | None:
    if span is None or span == "":
        return None
    start, sep, end = span.partition(":")
    if not sep or not start.strip().isdigit() or not end.strip().isdigit():
        raise ServiceError(422, f"span '{span}' is not start:end", "give character offsets, e.g. span=120:340")
    a, b = int(start), int(end)
    if not 0 <= a <= b <= len(text):
        raise ServiceError(422, f"span {a}:{b} is outside the document (0:{len(text)})",
                           "use the start and end of a citation")
    return a, b


def document_view(view: Any, doc_id: str, span: str | None) -> dict[str, Any]:
    """A visible document with ``span`` highlighted; unknown and hidden documents are the same 404."""
    document = view.documents.get(doc_id)
    if document is None:
        raise ServiceError(404, f"no document '{doc_id}'", _NOT_FOUND_FIX)
    found = _span(document.text, span)
    body = {"id": document.id, "title": document.title, "acl": document.acl, "doc_type": document.doc_type,
            "version": document.version, "text": document.text, "span": None, "before": "", "highlight": "", "after": ""}
    if found is not None:
        a, b = found
        body.update(span=[a, b], before=document.text[max(0, a - CONTEXT_CHARS):a], highlight=document.text[a:b],
                    after=document.text[b:b + CONTEXT_CHARS])
    return body


def _num(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def gate_view(state: ServiceState, run_id: str) -> dict[str, Any]:
    """A run's metrics by stage with their verdicts: pass, warn (a warning rule failed), block, skip, or info."""
    store = state.store.store
    run = store.get_run(run_id)
    if run is None:
        raise ServiceError(404, f"no run '{run_id}'", "use a run_id from GET /api/runs")
    metrics = store.metrics(run_id)
    latest: dict[tuple[str, str], Any] = {}
    for m in metrics:
        latest[(m.stage, m.name)] = m
    verdicts: dict[tuple[str, str], dict[str, Any]] = {}
    gate = None
    if state.thresholds is not None and metrics:
        from hoprag.gates.baseline import load_baseline
        from hoprag.gates.gate import evaluate_gate

        base = load_baseline(store, "default", required=False)
        report = evaluate_gate(run_id, metrics, state.thresholds, base.metrics if base else None,
                               base.info.run_id if base else None)
        for row in report.rows:
            status = row.status if row.status != "fail" else ("block" if row.mode == "block" else "warn")
            verdicts[(row.stage, row.metric)] = {"status": status, "threshold": row.threshold, "reason": row.reason,
                                                 "value": _num(row.value)}
        gate = {"blocked": report.blocked, "blocking_failures": len(report.blocking_failures),
                "warnings": len(report.warnings), "baseline_run": report.baseline_run}
    stages: dict[str, list[dict[str, Any]]] = {}
    for (stage, name), m in latest.items():
        row = {"metric": name, "value": _num(m.value), "status": "info", "threshold": "", "reason": ""}
        row.update({k: v for k, v in verdicts.pop((stage, name), {}).items() if k != "value"})
        stages.setdefault(stage, []).append(row)
    for (stage, name), verdict in verdicts.items():  # rules whose metric was not recorded
        stages.setdefault(stage, []).append({"metric": name, **verdict})
    return {"run": {"run_id": run.run_id, "kind": run.kind, "created_at": run.created_at.isoformat(),
                    "artifact_id": run.artifact_id, "status": run.status}, "stages": stages, "gate": gate,
            "thresholds_loaded": state.thresholds is not None, "has_report": _has_cases(state, run_id)}


def _has_cases(state: ServiceState, run_id: str) -> bool:
    """Whether the run stored a trace for one of the server's cases: a report on other traces (a serve
    run's answers to free questions) would score every case as missing."""
    if state.cases is None:
        return False
    import sqlalchemy as sa

    from hoprag.store import schema

    ids = {case.case_id for case in state.cases}
    query = sa.select(schema.traces.c.case_id).where(schema.traces.c.run_id == run_id).distinct()
    with state.store.store.engine.connect() as conn:
        return any(case_id in ids for (case_id,) in conn.execute(query))


def metric_series(state: ServiceState, run_id: str, limit: int = 30) -> dict[str, Any]:
    """Each stage's metrics over the latest ``limit`` runs of the same index artifact (oldest first):
    ``{"runs": [{run_id, created_at}], "stages": {stage: {metric: [value or None per run]}}}``."""
    store = state.store.store
    run = store.get_run(run_id)
    if run is None:
        raise ServiceError(404, f"no run '{run_id}'", "use a run_id from GET /api/runs")
    runs = store.runs_of_artifact(run.artifact_id, limit) if run.artifact_id else [run]
    if run.run_id not in {r.run_id for r in runs}:
        runs = [*runs[1:], run] if len(runs) >= limit else [*runs, run]
    stages: dict[str, dict[str, list[float | None]]] = {}
    for position, each in enumerate(runs):
        for m in store.metrics(each.run_id):  # the latest row of a metric wins, as in gate_view
            values = stages.setdefault(m.stage, {}).setdefault(m.name, [None] * len(runs))
            values[position] = _num(m.value)
    return {"artifact_id": run.artifact_id,
            "runs": [{"run_id": r.run_id, "created_at": r.created_at.isoformat()} for r in runs], "stages": stages}


def traces_visible(state: ServiceState, traces: list[Any], clearance: str) -> bool:
    """Whether a caller at ``clearance`` sees every document ``traces`` hold: the caller's own view, not
    public's (an enterprise run cites internal documents, and a report refused to everyone left the run
    page's link dead)."""
    view = state.pool.view(clearance)
    return all(trace_visible(t, view) for t in traces)


def report_html(state: ServiceState, run_id: str, clearance: str) -> str:
    """The evaluation report of a run's stored traces (only when the caller at ``clearance`` sees every
    document they hold)."""
    from hoprag.evaluation.chain_eval import evaluate_chains
    from hoprag.report.html import render_html

    if state.cases is None:
        raise ServiceError(404, "the server has no cases to evaluate against",
                           "start hoprag serve with --cases CASES.jsonl")
    traces = state.store.store.traces(run_id)
    if not traces:
        raise ServiceError(404, f"run '{run_id}' has no stored traces", "pick a run that answered questions")
    if not traces_visible(state, traces, clearance):
        raise ServiceError(403, f"run '{run_id}' holds answers from documents above the clearance '{clearance}'",
                           "open the report with a token (or a server --clearance) that sees every document")
    report = evaluate_chains(state.cases, traces)
    return render_html(report.to_json(), title=f"evaluation of run {run_id}", cases=state.cases, traces=report.traces)
