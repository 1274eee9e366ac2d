"""One OpenTelemetry span per HTTP request of the service; a plain pass-through when tracing is off.

The span is named by method and route template (``POST /api/ask``, ``GET /api/runs/{run_id}``; the
method alone for a path no route matched, so scans do not make a span name per path) and
carries the HTTP semantic conventions (``http.request.method``, ``http.route``, ``url.path``,
``http.response.status_code``). The query string is never recorded: ``/api/ask/stream?q=…``
holds the question. The spans :func:`hoprag.telemetry.record_trace` leaves for an answer are its
children when they are recorded inside the request.
"""

from __future__ import annotations

from typing import Any

from hoprag import telemetry

__all__ = ["RequestSpans"]


class RequestSpans:
    """Pure ASGI middleware: a SERVER span around each HTTP request while tracing is on."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        tracer = telemetry.tracer() if scope["type"] == "http" else None
        if tracer is None:
            await self.app(scope, receive, send)
            return
        from opentelemetry.trace import SpanKind, Status, StatusCode

        method, path = scope.get("method", "GET"), scope.get("path", "")
        status = 0

        async def sending(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        with tracer.start_as_current_span(method, kind=SpanKind.SERVER,
                                          attributes={"http.request.method": method, "url.path": path}) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                route = getattr(scope.get("route"), "path", None)  # the template, once the router has matched
                if route:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                if status:
                    span.set_attribute("http.response.status_code", status)
                if status >= 500 or not status:
                    span.set_status(Status(StatusCode.ERROR))
