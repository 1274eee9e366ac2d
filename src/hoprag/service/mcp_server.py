"""hoprag as an MCP server for agents (``hoprag serve INDEX --mcp stdio|http``), on the official ``mcp`` SDK.

Four tools over the index the service loads (:func:`hoprag.service.app.load_state`):

* ``search(query, k)``: the passages BM25 ranks first, at the caller's clearance;
* ``ask(question, engine, k)``: the answer, its citations, claims and the evidence trail, as
  ``POST /api/ask`` returns them (never stored);
* ``get_document(doc_id, span)``: a document with a cited span; one above the caller's clearance
  is the same "no document" error as an unknown one;
* ``evaluate(cases, traces)``: cases and traces (the objects of cases.jsonl and traces.jsonl) scored
  as ``hoprag eval`` scores them: the aggregate, the earliest failures (and the classes not assessable) and one row per case.

Callers are the service's (:mod:`hoprag.service.access`). Over **stdio** the client is the user who
started the server: the local caller at ``--clearance``, as on a server without tokens (a tokens file
is refused: nobody could send a token). Over **streamable HTTP** (``/mcp``) every request passes the
Host allow-list, body limit and headers of :mod:`hoprag.service.guard`, and with ``--tokens`` every
tool call needs ``Authorization: Bearer <token>`` and runs at that token's clearance. A failure is a
tool error whose text says what was wrong and the fix.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Optional

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from hoprag.service.access import caller_of
from hoprag.service.answers import answer, run_blocking
from hoprag.service.models import AskRequest
from hoprag.service.records import new_trace_id
from hoprag.service.state import ServiceError, ServiceState
from hoprag.service.streaming import hit_view
from hoprag.service.tokens import Caller
from hoprag.service.views import document_view

__all__ = ["TOOLS", "build_mcp", "mcp_http_app"]

TOOLS = ("search", "ask", "get_document", "evaluate")
INSTRUCTIONS = ("hoprag answers multi-hop questions over one document collection with citations and the evidence "
                "trail, and scores traces against evidence-chain cases. Every result is limited to the caller's "
                "clearance.")


def _caller(state: ServiceState, ctx: Context) -> Caller:
    headers = ctx.headers  # None over stdio: no request to carry a token
    try:
        return caller_of(state, None if headers is None else headers.get("authorization"))
    except ServiceError as exc:
        raise ToolError(str(exc)) from None


async def _guarded(state: ServiceState, fn: Any) -> Any:
    """``fn()`` on the answering threads; a hoprag error becomes the tool error that says the fix."""
    from hoprag.errors import HopragError

    try:
        return await run_blocking(state, fn)
    except HopragError as exc:
        raise ToolError(str(exc)) from None


def build_mcp(state: ServiceState) -> MCPServer:
    """The MCP server with hoprag's four tools over ``state``'s index."""
    server = MCPServer("hoprag", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(description="Passages of the collection that best match a query (BM25), at your clearance.")
    async def search(query: str, ctx: Context, k: int = 10) -> list[dict[str, Any]]:
        caller = _caller(state, ctx)
        if not query.strip() or not 1 <= k <= 50:
            raise ToolError("search needs a non-empty query and 1 <= k <= 50. Fix: pass a query and k from 1 to 50")
        view = state.pool.view(caller.clearance)

        def run() -> list[dict[str, Any]]:
            hits = view.retriever("bm25").retrieve(query, k)
            return [{**hit_view(h), "text": view.chunks[h.chunk_id].text if h.chunk_id in view.chunks else ""}
                    for h in hits]

        return await _guarded(state, run)

    @server.tool(description="Answer a question across several passages: the answer, numbered citations, the "
                             "claims they support and the evidence trail (one entry per retrieval call).")
    async def ask(question: str, ctx: Context, engine: Literal["multihop", "single"] = "multihop",
                  k: Optional[int] = None) -> dict[str, Any]:
        from hoprag.service.answers import check_question

        caller = _caller(state, ctx)
        try:
            request = AskRequest(question=question, engine=engine, k=k, store=False)
            check_question(request)
            return await answer(state, request, caller, new_trace_id())
        except ServiceError as exc:
            raise ToolError(str(exc)) from None
        except ValueError as exc:  # pydantic's: k out of range, an empty question
            raise ToolError(f"ask's arguments are not valid ({str(exc).splitlines()[0]}). "
                            "Fix: pass a non-empty question and k from 1 to 50") from None

    @server.tool(description="A document of the collection by id (from a citation), with the span start:end "
                             "highlighted when given. Documents above your clearance are not found.")
    async def get_document(doc_id: str, ctx: Context, span: Optional[str] = None) -> dict[str, Any]:
        caller = _caller(state, ctx)
        if len(doc_id) > 400:
            raise ToolError("doc_id is longer than 400 characters. Fix: use a doc_id from an answer's citations")
        try:
            return document_view(state.pool.view(caller.clearance), doc_id, span)
        except ServiceError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="Score traces against evidence-chain cases as `hoprag eval` does: chain coverage, "
                             "hop recall, answers and attribution. cases: objects of cases.jsonl; traces: objects "
                             "of traces.jsonl (the `ask` tool's trail is not a trace).")
    async def evaluate(cases: list[dict[str, Any]], traces: list[dict[str, Any]], ctx: Context) -> dict[str, Any]:
        _caller(state, ctx)
        return await _guarded(state, lambda: _evaluate(cases, traces))

    return server


def _evaluate(cases: list[dict[str, Any]], traces: list[dict[str, Any]]) -> dict[str, Any]:
    from hoprag.datasets.schema import case_from_dict
    from hoprag.errors import InputError
    from hoprag.evaluation.attribution import TokenContainmentJudge
    from hoprag.evaluation.chain_eval import evaluate_chains
    from hoprag.records import Trace

    if not cases or not traces:
        raise InputError("evaluate needs at least one case and one trace. Fix: pass the objects of cases.jsonl "
                         "and of the traces.jsonl a run wrote")
    parsed = [case_from_dict(c, source="cases", line=n) for n, c in enumerate(cases, start=1)]
    read = []
    for n, t in enumerate(traces, start=1):
        try:
            read.append(Trace.from_dict(t))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"traces item {n} is not a trace ({type(exc).__name__}: {str(exc)[:200]})",
                             source="traces", line=n,
                             fix="pass the objects of a traces.jsonl that hoprag run wrote") from None
    report = evaluate_chains(parsed, read, judge=TokenContainmentJudge())
    payload = report.to_json()
    return {"aggregate": payload["aggregate"], "failures": payload["failures"],
            "not_assessable": payload["not_assessable"], "cases": payload["cases"]}


def mcp_http_app(state: ServiceState, server: MCPServer) -> Any:
    """The streamable HTTP app at ``/mcp``, behind the service's request guard."""
    from mcp.server.transport_security import TransportSecuritySettings

    from hoprag.service.guard import RequestGuard

    # the Host allow-list is the service's own (hoprag.service.guard), the same for the API and /mcp
    inner = server.streamable_http_app(
        streamable_http_path="/mcp", json_response=False,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return RequestGuard(_TokenGate(inner, state), limit=state.config.max_body_bytes * 16,
                        allowed_hosts=(*state.config.allow_hosts, state.config.host or ""))


class _TokenGate:
    """Before the SDK sees a request to ``/mcp``: a request a browser sent from another site's page is
    refused (403; the MCP transport asks servers to check ``Origin``), and with ``--tokens`` every
    request needs a token of the file (401, as every API request), so an anonymous client cannot open a
    session or list the tools; the tools still check each call."""

    def __init__(self, app: Any, state: ServiceState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            from starlette.requests import Request

            from hoprag.service.access import same_origin

            try:
                if not same_origin(Request(scope)):
                    raise ServiceError(403, "a request from another site's page is refused",
                                       "connect from an MCP client, not from a web page")
                if self.state.tokens is not None:
                    authorization = dict(scope.get("headers") or ()).get(b"authorization")
                    caller_of(self.state, None if authorization is None else authorization.decode("latin-1"))
            except ServiceError as exc:
                payload = json.dumps({"error": exc.error, "fix": exc.fix}).encode("utf-8")
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
                if exc.status == 401:
                    headers.append((b"www-authenticate", b"Bearer"))
                await send({"type": "http.response.start", "status": exc.status, "headers": headers})
                await send({"type": "http.response.body", "body": payload})
                return
        await self.app(scope, receive, _json_refusals(send))


# what the SDK's transport refuses in plain text (a wrong Content-Type or Accept) and how to send it right
_TRANSPORT_FIX = ("POST JSON-RPC messages with Content-Type: application/json and Accept: application/json, "
                  "text/event-stream, as an MCP client does")


def _json_refusals(send: Any) -> Any:
    """``send`` with the SDK's plain-text refusals turned into the service's JSON ``{error, fix}``."""
    held: dict[str, Any] = {}

    async def sending(message: dict) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            kind = dict(message.get("headers") or ()).get(b"content-type", b"")
            if not kind.startswith((b"application/json", b"text/event-stream")):
                held["start"], held["body"] = message, b""
                return
        if "start" not in held:
            await send(message)
            return
        held["body"] += message.get("body", b"")
        if message.get("more_body"):
            return
        text = held["body"].decode("utf-8", "replace").strip()[:200] or f"HTTP {held['start']['status']}"
        payload = json.dumps({"error": text, "fix": _TRANSPORT_FIX}).encode("utf-8")
        rest = [(k, v) for k, v in held["start"].get("headers") or () if k not in (b"content-type", b"content-length")]
        await send({**held["start"], "headers": [*rest, (b"content-type", b"application/json"),
                                                 (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    return sending
