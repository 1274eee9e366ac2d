"""The ASGI app: configuration, callers, limits, JSON errors, the page's static assets.

``create_app(ServiceConfig(index_dir=...))`` loads the index and the run store once and returns a
FastAPI app; :mod:`hoprag.service.api` holds the routes. Every error leaves as JSON
``{"error": ..., "fix": ...}`` with a 4xx status (an unexpected one as a one-line 500); no stack
trace ever reaches a response. What every request passes first (the Host allow-list, the body
limit, the security headers) is :mod:`hoprag.service.guard`; who may read and write is
:mod:`hoprag.service.access`. Each request has a wall-clock limit, CORS is
off (no CORS headers are sent) and the request log names method, path, status and caller only:
never a query string, question or answer.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from importlib.resources import files
from pathlib import Path
from typing import Any

from hoprag.errors import HopragError
from hoprag.service.state import ServiceConfig, ServiceError, ServiceState, split_fix

__all__ = ["ServiceConfig", "ServiceError", "ServiceState", "create_app", "load_state"]

log = logging.getLogger("hoprag.service")


class _RequestProblems:
    """A request's validation errors with FastAPI's ``body``/``query``/``path`` prefix dropped from each
    field, in the shape :mod:`hoprag.validation_messages` reads."""

    def __init__(self, exc: Any) -> None:
        self._errors = exc.errors()

    def errors(self, **_: Any) -> list[dict[str, Any]]:
        found = []
        for e in self._errors:
            loc = tuple(p for p in e.get("loc", ()) if p not in ("body", "query", "path", "header"))
            if e.get("type") == "json_invalid":  # its loc is a position in the text, not a field
                loc = ("body",)
            elif e.get("type") == "missing" and not loc:  # no body at all: 'is missing' alone named nothing
                e, loc = {**e, "type": "value_error", "msg": "is empty (a JSON object was expected)"}, ("body",)
            found.append({**e, "loc": loc})
        return found


class RequestLog:
    """Logs method, path, status and time of each request (never a query string). A plain ASGI layer:
    FastAPI's ``@app.middleware("http")`` sends every response through an extra task and stream."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 0

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, sending)
        log.info("%s %s %s %.1fms", scope["method"], scope["path"], status, (time.perf_counter() - start) * 1000.0)


def load_state(config: ServiceConfig) -> ServiceState:
    """The index, run store, engines, tokens, thresholds and cases a server shares (the API's and MCP's)."""
    from hoprag.index.open import is_pg_url, open_index
    from hoprag.security import clearance as resolver
    from hoprag.service.engines import EnginePool
    from hoprag.service.records import ServiceStore
    from hoprag.service.tokens import load_tokens
    from hoprag.store import RunStore

    if config.tokens is not None and config.clearance is not None:
        from hoprag.errors import ConfigError

        raise ConfigError("--clearance sets the clearance of callers without a token, and with --tokens every "
                          "request needs a token. Fix: drop --clearance and give each entry of the tokens file "
                          "its clearance")
    index = open_index(config.index_dir)
    cleared = resolver.caller_clearance(config.clearance, config.acl_levels, index=index,
                                        unlabelled=config.unlabelled, unset="lowest")
    policy = cleared.policy
    config = config.model_copy(update={"clearance": cleared.level})
    tokens = load_tokens(config.tokens, policy) if config.tokens is not None else None
    artifact = index.manifest.artifact_id
    stamped = None if is_pg_url(config.index_dir) else _stamped_run(Path(config.index_dir))
    run_id = config.run_id or stamped or f"serve-{artifact[:12]}"
    store = ServiceStore(RunStore(config.store), trace_run=f"serve-{artifact[:12]}", feedback_run=run_id,
                         artifact_id=artifact)
    settings = config.engine.llm_settings
    timeout = settings.timeout if "timeout" in settings.model_fields_set else min(config.request_timeout, 20.0)
    pool = EnginePool(index, policy, spec=config.engine, stream_timeout=timeout)
    thresholds = None
    path = config.thresholds or (Path("thresholds.yaml") if Path("thresholds.yaml").is_file() else None)
    if path is not None:
        from hoprag.gates.thresholds import load_thresholds

        thresholds = load_thresholds(path)
    cases = None
    if config.cases is not None:
        from hoprag.datasets.schema import load_cases

        cases = load_cases(config.cases)
    return ServiceState(config=config, index=index, policy=policy, pool=pool, store=store, tokens=tokens,
                        executor=ThreadPoolExecutor(config.threads, thread_name_prefix="hoprag-serve"),
                        thresholds=thresholds, cases=cases)


def _stamped_run(index_dir: Path) -> str | None:
    """The run that built the index (``index/run.json``): feedback on its answers belongs to it."""
    import json

    try:
        return str(json.loads((index_dir / "run.json").read_text(encoding="utf-8"))["run_id"]) or None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def create_app(config: ServiceConfig, state: ServiceState | None = None) -> Any:
    """The FastAPI app serving the API, the OpenAPI spec at ``/openapi.json`` and the page."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from fastapi.staticfiles import StaticFiles
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from hoprag.service.api import router
    from hoprag.service.chat_completions import router as chat_router

    state = state or load_state(config)
    app = FastAPI(title="hoprag", version="1", docs_url=None, redoc_url=None, openapi_url="/openapi.json",
                  description="Multi-hop answers with live hops, citations, feedback and the run store.")
    app.state.hoprag = state

    def error(request: Request, status: int, what: str, fix: str) -> JSONResponse:
        if request.url.path.startswith("/v1/"):  # the Chat Completions API's shape, so its clients show it
            from hoprag.service.chat_completions import openai_error

            return JSONResponse(openai_error(status, what, fix), status_code=status)
        return JSONResponse({"error": what, "fix": fix}, status_code=status)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        response = error(request, exc.status, exc.error, exc.fix)
        if headers:
            response.headers.update(headers)
        return response

    @app.exception_handler(HopragError)
    async def _hoprag_error(request: Request, exc: HopragError) -> JSONResponse:
        return error(request, 400, *split_fix(str(exc)))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        from hoprag.validation_messages import describe

        return error(request, 422, *describe(_RequestProblems(exc), what="request",
                                    fix="see /openapi.json for the fields and their limits"))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        what = str(exc.detail) if exc.status_code != 404 else "no such page or endpoint"
        return error(request, exc.status_code, what, "see /openapi.json for the endpoints")

    app.add_middleware(RequestLog)  # innermost: the status the routes and error handlers gave

    app.router.on_shutdown.append(state.store.close)  # queued answers are written before the process ends
    app.include_router(router)
    app.include_router(chat_router)  # /v1/chat/completions: hoprag as an OpenAI-compatible model
    app.mount("/static", StaticFiles(directory=str(files("hoprag.service") / "static")), name="static")
    from hoprag.service.guard import RequestGuard

    # Host allow-list, body limit, security headers, the JSON 500 (hoprag.service.guard)
    app.add_middleware(RequestGuard, limit=state.config.max_body_bytes,
                       allowed_hosts=(*state.config.allow_hosts, state.config.host or ""))
    from hoprag.service.request_spans import RequestSpans

    app.add_middleware(RequestSpans)  # outermost, so refused bodies get a span too; a pass-through when tracing is off
    return app
