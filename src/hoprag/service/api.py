"""The routes: ask (JSON and Server-Sent Events), feedback, clicks, runs, traces, documents, the page.

Every route takes its caller from :mod:`hoprag.service.access` (who may read, who may write); GET
never writes. Every answer, event, trace and document is limited to the caller's clearance: retrieval runs at
it, a stored trace is shown only when everything it cites is visible to the caller, and a document
above it is answered 404 (exactly as an unknown one), so its existence is not leaked.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from importlib.resources import files
from typing import Any, Optional

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from hoprag.records import Trace
from hoprag.service.access import full_view, may_write, reader, require_full_view, writer
from hoprag.service.answers import answer, answer_events, check_question, run_blocking
from hoprag.service.state import ServiceError, ServiceState
from hoprag.service.tokens import Caller
from hoprag.service.models import (
    AskRequest,
    AskResponse,
    ClickRequest,
    ClickResponse,
    DocumentOut,
    ErrorBody,
    FeedbackRequest,
    FeedbackResponse,
    MAX_QUESTION,
)
from hoprag.service.records import new_trace_id
from hoprag.service.views import document_view, gate_view, trace_visible

router = APIRouter()
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (400, 401, 403, 404, 413, 422, 504)}
#: every route takes its caller from one of these (hoprag.service.access)
READER = Depends(reader)
WRITER = Depends(writer)
#: ids are length-checked before any lookup (422, the id not echoed): the store's and the index's limits
TRACE_ID = Path(..., min_length=1, max_length=64, description="a trace_id an answer returned")
RUN_ID = Path(..., min_length=1, max_length=200, description="a run_id from GET /api/runs")
DOC_ID = Path(..., min_length=1, max_length=400, description="a doc_id from an answer's citations")


def _state(request: Request) -> ServiceState:
    return request.app.state.hoprag


@router.post("/api/ask", response_model=AskResponse, responses=ERRORS, tags=["ask"])
async def ask(body: AskRequest, request: Request, caller: Caller = READER) -> dict[str, Any]:
    """Answer a question; the (redacted) trace is stored when ``store`` is true (a write: a token or this
    server's page)."""
    state = _state(request)
    check_question(body)
    if body.store:
        may_write(state, caller, request)
    return await answer(state, body, caller, new_trace_id())


def _sse(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


STREAM_DOC = {**ERRORS, 200: {"content": {"text/event-stream": {}},
              "description": "events: planning, plan, hop, hits, judge, synthesising, token…, answer (or error)"}}


@router.get("/api/ask/stream", responses=STREAM_DOC, tags=["ask"])
async def ask_stream(
    request: Request,
    q: str = Query(..., min_length=1, max_length=MAX_QUESTION, description="the question"),
    k: Optional[int] = Query(None, ge=1, le=50),
    engine: str = Query("multihop", pattern="^(multihop|single)$"),
    mode: str = Query("bm25", pattern="^(bm25|dense|hybrid)$"),
    llm: str = Query("default", pattern="^(default|offline)$"),
    store: bool = Query(False, description="must be false: a GET never stores (POST /api/ask/stream does)"),
    caller: Caller = READER,
) -> StreamingResponse:
    """Server-Sent Events: one per planning step, hop start, hop hits and judge verdict, then the
    answer token by token, then ``answer`` with the full result (as ``POST /api/ask`` returns it).
    Nothing is stored: a GET never changes the server's state."""
    if store:
        raise ServiceError(422, "GET /api/ask/stream never stores an answer",
                           'POST /api/ask/stream with {"question": ..., "store": true} to store it')
    body = AskRequest(question=q, k=k, engine=engine, mode=mode, llm=llm, store=False)
    check_question(body)
    return _stream(_state(request), body, caller)


@router.post("/api/ask/stream", responses=STREAM_DOC, tags=["ask"])
async def ask_stream_post(body: AskRequest, request: Request, caller: Caller = READER) -> StreamingResponse:
    """The stream of ``GET /api/ask/stream`` for a JSON body; with ``store`` (a write) the answer is stored."""
    state = _state(request)
    check_question(body)
    if body.store:
        may_write(state, caller, request)
    return _stream(state, body, caller)


def _stream(state: ServiceState, body: AskRequest, caller: Caller) -> StreamingResponse:
    trace_id = new_trace_id()

    async def stream() -> AsyncIterator[str]:
        yield _sse("start", {"trace_id": trace_id, "clearance": caller.clearance})
        async for name, data in answer_events(state, body, caller, trace_id):
            yield _sse(name, data)

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def _visible_trace(state: ServiceState, trace_id: str, clearance: str) -> Trace:
    trace = state.store.trace(trace_id)
    if trace is None or not trace_visible(trace, state.pool.view(clearance)):
        raise ServiceError(404, f"no trace '{trace_id}'", "use the trace_id an answer returned")
    return trace


@router.post("/api/feedback", response_model=FeedbackResponse, responses=ERRORS, tags=["feedback"])
async def feedback(body: FeedbackRequest, request: Request, caller: Caller = WRITER) -> dict[str, Any]:
    """Thumbs, issue tags (each owned by a stage) and a comment on one answer."""
    from hoprag.gates.checks.feedback import TAG_STAGES

    state = _state(request)
    if body.thumbs is None and not body.tags and not (body.comment or "").strip():
        raise ServiceError(422, "empty feedback", "give thumbs (up|down), one or more tags, or a comment")
    await run_blocking(state, lambda: _visible_trace(state, body.trace_id, caller.clearance))
    stored = await run_blocking(state, lambda: state.store.add_feedback(body.trace_id, caller.name, thumbs=body.thumbs,
                                                                 tags=list(body.tags), comment=body.comment))
    return {"trace_id": body.trace_id, "stored": stored, "run_id": state.store.feedback_run,
            "stages": sorted({TAG_STAGES[t] for t in body.tags})}


@router.post("/api/click", response_model=ClickResponse, responses=ERRORS, tags=["feedback"])
async def click(body: ClickRequest, request: Request, caller: Caller = WRITER) -> dict[str, Any]:
    """A cited source was opened (citation click-through rate)."""
    state = _state(request)
    trace = await run_blocking(state, lambda: _visible_trace(state, body.trace_id, caller.clearance))
    cited = {c.chunk_id for claim in trace.answer.claims for c in claim.citations}
    cited |= {c.doc_id for claim in trace.answer.claims for c in claim.citations}
    if body.citation not in cited:
        raise ServiceError(404, f"trace '{body.trace_id}' does not cite '{body.citation}'",
                           "send the chunk_id of one of the answer's citations")
    await run_blocking(state, lambda: state.store.add_click(body.trace_id, caller.name, body.citation))
    return {"trace_id": body.trace_id, "recorded": True}


@router.get("/api/whoami", tags=["meta"])
async def whoami(request: Request, caller: Caller = READER) -> dict[str, Any]:
    """The caller this request's token names, and what the server needs."""
    state = _state(request)
    return {"name": caller.name, "clearance": caller.clearance, "can_write": caller.can_write,
            "tokens_required": state.tokens is not None, "llm": state.config.engine.synth_model(),
            "index": state.index.manifest.artifact_id, "feedback_run": state.store.feedback_run}


@router.get("/api/runs", responses=ERRORS, tags=["runs"])
async def runs(request: Request, limit: int = Query(50, ge=1, le=500), caller: Caller = READER) -> list[dict[str, Any]]:
    """The most recent runs of the store (names, kinds and states: no counts)."""
    state = _state(request)
    found = await run_blocking(state, lambda: state.store.store.list_runs(limit=limit))
    return [{"run_id": r.run_id, "kind": r.kind, "created_at": r.created_at.isoformat(),
             "artifact_id": r.artifact_id, "status": r.status} for r in found]


@router.get("/api/runs/{run_id}", responses=ERRORS, tags=["runs"])
async def run_detail(request: Request, run_id: str = RUN_ID, caller: Caller = READER) -> dict[str, Any]:
    """A run's stage metrics, each with its gate verdict (pass, warn, block, skip) under the thresholds
    (with tokens: for callers who see every document, as the metrics count them all)."""
    state = _state(request)
    require_full_view(state, caller, "a run's stage metrics")
    view = await run_blocking(state, lambda: gate_view(state, run_id))
    if view["has_report"] and not full_view(state, caller):  # the report link only where the report opens
        from hoprag.service.views import traces_visible

        view["has_report"] = await run_blocking(
            state, lambda: traces_visible(state, state.store.store.traces(run_id), caller.clearance))
    return view


@router.get("/api/runs/{run_id}/series", responses=ERRORS, tags=["runs"])
async def run_series(request: Request, run_id: str = RUN_ID, limit: int = Query(30, ge=1, le=200),
                     caller: Caller = READER) -> dict[str, Any]:
    """Each stage's metrics over the latest runs of the same index artifact as ``run_id`` (the run page's
    sparklines; with tokens: for callers who see every document, as for the run's metrics)."""
    from hoprag.service.views import metric_series

    state = _state(request)
    require_full_view(state, caller, "a run's stage metrics")
    return await run_blocking(state, lambda: metric_series(state, run_id, limit))


@router.get("/api/runs/{run_id}/report", response_class=HTMLResponse, responses=ERRORS, tags=["runs"])
async def run_report(request: Request, run_id: str = RUN_ID, caller: Caller = READER) -> HTMLResponse:
    """The evaluation report (HTML) of a run's stored traces against the server's --cases."""
    from hoprag.service.views import report_html

    state = _state(request)
    require_full_view(state, caller, "an evaluation report's scores")
    html = await run_blocking(state, lambda: report_html(state, run_id, caller.clearance))
    # the report is one self-contained file with inline styles and no scripts
    return HTMLResponse(html, headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})


@router.get("/api/feedback/summary", responses=ERRORS, tags=["feedback"])
async def feedback_summary(request: Request, run_id: Optional[str] = Query(None, max_length=200),
                           bucket: str = Query("hour", pattern="^(hour|day)$"), caller: Caller = READER) -> dict[str, Any]:
    """Dashboard series: thumbs-down rate and citation CTR over time, issue tags by owning stage (with
    tokens: for callers who see every document, as the series count every caller's answers)."""
    state = _state(request)
    require_full_view(state, caller, "the feedback dashboard's counts")
    return await run_blocking(state, lambda: state.store.feedback_summary(run_id, bucket))


@router.get("/api/traces/{trace_id}", responses=ERRORS, tags=["runs"])
async def trace(request: Request, trace_id: str = TRACE_ID, caller: Caller = READER) -> dict[str, Any]:
    """A stored (redacted) trace, if everything it holds is within the caller's clearance."""
    state = _state(request)
    return (await run_blocking(state, lambda: _visible_trace(state, trace_id, caller.clearance))).to_dict()


@router.get("/api/documents/{doc_id:path}", response_model=DocumentOut, responses=ERRORS, tags=["documents"])
async def document(request: Request, doc_id: str = DOC_ID, caller: Caller = READER,
                   span: Optional[str] = Query(None, max_length=40, description="start:end character offsets")) -> dict[str, Any]:
    """A document with the cited span and its context (404 for one above the caller's clearance)."""
    state = _state(request)
    return document_view(state.pool.view(caller.clearance), doc_id, span)


def _asset(name: str) -> bytes:
    return (files("hoprag.service") / "static" / name).read_bytes()


@router.get("/", include_in_schema=False)
async def page() -> Response:
    return Response(_asset("index.html"), media_type="text/html; charset=utf-8")
