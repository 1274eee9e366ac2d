"""JSON views of traces, documents and gated runs for the API, each limited to what a caller may see."""

from __future__ import annotations

import math
from typing import Any

from hoprag.records import Trace
from hoprag.service.state import ServiceError, ServiceState
from hoprag.service.streaming import hit_view

__all__ = ["answer_view", "claim_span", "document_view", "gate_view", "report_html", "trace_visible"]

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
    steps = [{"step_id": s.step_id, "hop": s.hop, "sub_query": s.sub_query, "issued_query": s.issued_query,
              "hits": [hit_view(h) for h in s.hits], "selected": list(s.selected), "duplicates": list(s.duplicates),
              "bridge": s.bridge, "depends_on": list(s.depends_on), "latency_ms": s.latency_ms, "error": s.error}
             for s in trace.steps]
    evidence = [{"chunk_id": e.chunk_id, "doc_id": e.doc_id, "title": e.title, "hop": e.hop, "step_id": e.step_id,
                 "text": e.text[:400], "start": e.hit.start, "end": e.hit.end} for e in trace.evidence]
    return {"trace_id": trace.case_id, "stored": stored, "question": trace.question, "answer": trace.answer.text,
            "abstained": trace.answer.abstained, "partial": trace.answer.partial,
            "confidence": trace.answer.confidence, "stop_reason": trace.stop_reason, "claims": claims,
            "citations": list(numbered.values()), "steps": steps, "evidence": evidence,
            "warnings": list(trace.warnings), "latency_ms": round(trace.latency_ms, 3), "engine": trace.engine,
            "clearance": clearance}


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
                    "artifact_id": run.artifact_id}, "stages": stages, "gate": gate,
            "has_report": state.cases is not None}


def report_html(state: ServiceState, run_id: str) -> str:
    """The evaluation report of a run's stored traces (only when every trace is visible to all: public)."""
    from hoprag.evaluation.chain_eval import evaluate_chains
    from hoprag.report.html import render_html

    if state.cases is None:
        raise ServiceError(404, "the server has no cases to evaluate against",
                           "start hoprag serve with --cases CASES.jsonl")
    traces = state.store.store.traces(run_id)
    if not traces:
        raise ServiceError(404, f"run '{run_id}' has no stored traces", "pick a run that answered questions")
    public = state.pool.view(state.policy.levels[0])
    if not all(trace_visible(t, public) for t in traces):
        raise ServiceError(404, f"no report for run '{run_id}'", "reports are served for runs over public documents only")
    report = evaluate_chains(state.cases, traces)
    return render_html(report.to_json(), title=f"evaluation of run {run_id}", cases=state.cases, traces=report.traces)
