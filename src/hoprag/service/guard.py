"""What every HTTP request to the service passes before a route sees it, and every response carries.

:class:`RequestGuard` is the outermost ASGI layer of the app (:func:`hoprag.service.app.create_app`):

* **Host allow-list.** A request whose ``Host`` is not a loopback name (``localhost``, 127.0.0.0/8,
  ``::1``), the address the server was bound to, or a name given with ``--allow-host`` is refused
  with 400. A web page whose name an attacker points at 127.0.0.1 (DNS rebinding) sends its own
  name as ``Host``, so it can never read what the server answers.
* **Body limit.** A body over ``max_body_bytes`` is refused with 413 whether it declares its
  length or arrives in chunks; the body is read here, before any route parses it.
* **Security headers** (``Cache-Control: no-store`` among them) on every response, errors and
  refusals of this layer included; an exception no route handled leaves as a JSON 500 with them
  (never a traceback).

The HTTP protocol the server runs (:func:`server_options`, with which ``hoprag serve`` and the tests
start uvicorn) is uvicorn's h11 one with one change: a request it cannot parse (a malformed header,
a request line or headers over its limit) is answered with the same JSON ``{"error", "fix"}`` and
headers instead of uvicorn's plain text.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
from collections.abc import Iterable
from typing import Any

__all__ = ["SECURITY_HEADERS", "RequestGuard", "host_allowed", "host_name", "server_options"]

SECURITY_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    # answers, documents and traces are for the caller's eyes: never kept in the browser's cache (ASVS V8.2.1)
    "Cache-Control": "no-store",
}
_RAW_HEADERS = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()]
#: an API answer opened in a browser tab is a download, never a page (ASVS V14.4.2)
_ATTACHMENT = (b"content-disposition", b'attachment; filename="api.json"')
#: addresses that mean "every interface": never a name a request is sent to
_WILDCARDS = {"0.0.0.0", "::", ""}


def host_name(value: str) -> str:
    """The name of a ``Host`` header value: port and IPv6 brackets dropped, lower case, no final dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def host_allowed(name: str, allowed: Iterable[str]) -> bool:
    """Whether ``name`` (from :func:`host_name`) is a loopback name or one of ``allowed``."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        if ipaddress.ip_address(name).is_loopback:
            return True
    except ValueError:
        pass
    return name in {host_name(a) for a in allowed}


def _json_body(status: int, error: str, fix: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    payload = json.dumps({"error": error, "fix": fix}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
               *_RAW_HEADERS]
    return headers, payload


class RequestGuard:
    """Pure ASGI: the Host allow-list, the body limit and the security headers (see the module)."""

    def __init__(self, app: Any, *, limit: int, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.limit = limit
        self.allowed = tuple(h for h in allowed_hosts if host_name(h) not in _WILDCARDS)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        api = scope.get("path", "").startswith(("/api/", "/v1/"))

        async def refuse(status: int, error: str, fix: str) -> None:
            raw, payload = _json_body(status, error, fix)
            if api:
                raw.append(_ATTACHMENT)
            await send({"type": "http.response.start", "status": status, "headers": raw})
            await send({"type": "http.response.body", "body": payload})

        host = host_name(headers.get(b"host", b"").decode("latin-1"))
        if not host_allowed(host, self.allowed):
            # the name is not echoed: it is the caller's, and a page on it must learn nothing here
            await refuse(400, "this server does not answer to the Host name the request was sent to",
                         "open the server as http://127.0.0.1:PORT/ or http://localhost:PORT/, or start "
                         "hoprag serve with --allow-host NAME for a name that reaches it")
            return
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.strip().isdigit() or int(declared) > self.limit):
            await refuse(413, f"request body over {self.limit} bytes", "send a smaller body")
            return
        receive = await self._buffered(receive, refuse)
        if receive is None:
            return

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                sent = {name.lower(): value for name, value in message.get("headers") or ()}
                extra = [(k, v) for k, v in _RAW_HEADERS if k not in sent]
                if api and sent.get(b"content-type", b"").startswith(b"application/json") \
                        and _ATTACHMENT[0] not in sent:
                    extra.append(_ATTACHMENT)
                message = {**message, "headers": [*(message.get("headers") or ()), *extra]}
            await send(message)

        started = False

        async def sending(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await with_headers(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:  # noqa: BLE001 - caught here so the 500 carries the headers too
            logging.getLogger("hoprag.service").error("%s %s failed: %s", scope.get("method"), scope.get("path"),
                                                      type(exc).__name__)
            if not started:
                await refuse(500, f"internal error ({type(exc).__name__})",
                             "see the server log; the request was not completed")

    async def _buffered(self, receive: Any, refuse: Any) -> Any:
        """A ``receive`` replaying the whole body, read here up to the limit (None: refused with 413)."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return _replay([message], receive)
            seen += len(message.get("body", b""))
            if seen > self.limit:
                await refuse(413, f"request body over {self.limit} bytes", "send a smaller body")
                return None
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        return _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}], receive)


def _replay(messages: list[dict], receive: Any) -> Any:
    pending = list(messages)

    async def replay() -> dict:
        if pending:
            return pending.pop(0)
        return await receive()  # after the body: the disconnect a streaming response waits for

    return replay


@functools.lru_cache(maxsize=1)
def _protocol_class() -> type:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class JsonErrors(H11Protocol):  # type: ignore[misc]
        """uvicorn's h11 protocol answering a request it cannot parse with JSON and the headers."""

        def send_400_response(self, msg: str) -> None:  # noqa: ARG002 - uvicorn's own text is replaced
            import h11

            headers, payload = _json_body(
                400, "the request could not be parsed: a malformed header, or a request line or headers too long",
                "send a well-formed HTTP/1.1 request; put long input in a POST body, not the URL")
            event = h11.Response(status_code=400, headers=[*headers, (b"connection", b"close")], reason=b"Bad Request")
            self.transport.write(self.conn.send(event))
            self.transport.write(self.conn.send(h11.Data(data=payload)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
            self.transport.close()

    return JsonErrors


def server_options() -> dict[str, Any]:
    """The uvicorn options the service runs with: its own protocol errors, no access log (the app logs
    method, path and status only, never a query string)."""
    return {"http": _protocol_class(), "access_log": False, "log_level": "warning"}
