"""One wall-clock deadline around every model call: no server behaviour can make a call outlive it.

A read timeout bounds one socket read, not a call: a server that trickles a byte every half second,
or sends its headers and then stalls between keep-alive comments, never trips it, and a question's
budget checked only between calls is overrun by as long as the server cares to trickle. So the
deadline is enforced where the waiting happens, on every socket operation:

* :meth:`hoprag.llm.base.LLM.complete` runs each attempt inside :func:`bounded` with the attempt's
  end: ``timeout`` seconds after it started, and never after the caller's deadline (a question's
  model budget). Bounds nest; an inner one can only be earlier.
* Every HTTP connection a model call opens comes from :func:`http_client` (the OpenAI-compatible
  backend, the service's answer stream). Its transport cuts each connect, TLS handshake, pool wait,
  read and write to what the bound leaves, and fails the operation once nothing is left, so the
  request is abandoned and its connection closed (the server sees the client go) within one socket
  operation of the deadline. Nothing runs on another thread. A body past :data:`MAX_BODY_BYTES` is
  refused as it arrives.
* In-process backends ask :func:`remaining` (llama.cpp checks it before each generated token) or
  wait with :func:`wait`.

DNS resolution is the one wait outside the socket calls that the bound cannot cut.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from hoprag.llm.errors import LLMResponseError

# The innermost model-call bound on this thread, if any: its end (a time.monotonic() instant) and
# the seconds it allowed from its start (what messages quote as the call's time limit).
_BOUND: ContextVar[tuple[float, float] | None] = ContextVar("hoprag_model_call_bound", default=None)

#: the most a model reply may hold: a chat completion is kilobytes, and a server that floods the
#: connection must not fill memory while the deadline runs
MAX_BODY_BYTES = 32 * 2**20

#: what a socket operation is given when the bound leaves less (a zero or negative timeout would
#: mean "non-blocking" or fail outright)
_MIN_WAIT = 1e-3


def attempt_end(deadline: float | None, timeout: float | None, started: float | None = None) -> float | None:
    """When one attempt must be over: ``timeout`` seconds from ``started`` (now), never after ``deadline``."""
    own = None if timeout is None else (time.monotonic() if started is None else started) + timeout
    ends = [end for end in (deadline, own) if end is not None]
    return min(ends) if ends else None


def current_end() -> float | None:
    """The end of the model call in progress on this thread (None: no bound)."""
    bound = _BOUND.get()
    return None if bound is None else bound[0]


def allowed() -> float | None:
    """The seconds the bound in progress allowed from its start (None: no bound)."""
    bound = _BOUND.get()
    return None if bound is None else bound[1]


def remaining() -> float | None:
    """Seconds the bound in progress leaves (negative once passed); None outside any bound."""
    end = current_end()
    return None if end is None else end - time.monotonic()


@contextmanager
def bounded(end: float | None, allowed: float | None = None) -> Iterator[float | None]:
    """Run the block under ``end``; an enclosing bound that ends earlier keeps its end. Yields the end in force.

    ``allowed`` is the time limit the bound stands for (what is left until ``end`` by default), for messages.
    """
    bound = outer = _BOUND.get()
    if end is not None and (outer is None or end < outer[0]):
        bound = (end, end - time.monotonic() if allowed is None else allowed)
    token = _BOUND.set(bound)
    try:
        yield None if bound is None else bound[0]
    finally:
        _BOUND.reset(token)


def wait(seconds: float) -> bool:
    """Sleep ``seconds`` (a backend standing for model time), cut at the bound; False when it was cut."""
    left = remaining()
    if left is not None and left < seconds:
        time.sleep(max(0.0, left))
        return False
    time.sleep(seconds)
    return True


def _cut(timeout: float | None, error: type[Exception], what: str) -> float | None:
    """``timeout`` cut to what the bound leaves; raises ``error`` once nothing is left."""
    left = remaining()
    if left is None:
        return timeout
    if left <= 0:
        raise error(f"the model call's deadline passed before the {what} ({-left:.1f} s ago)")
    left = max(left, _MIN_WAIT)
    return left if timeout is None else min(timeout, left)


def _httpcore() -> Any:
    import httpcore

    return httpcore


def _network_classes() -> tuple[type, type]:
    """The bounded network backend and stream, built on first use (httpcore is an optional dependency)."""
    global _CLASSES
    if _CLASSES is not None:
        return _CLASSES
    httpcore = _httpcore()

    class BoundedStream(httpcore.NetworkStream):
        """A socket stream whose every operation ends by the model call's bound."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _cut(timeout, httpcore.ReadTimeout, "next read"))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _cut(timeout, httpcore.WriteTimeout, "next write"))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            cut = _cut(timeout, httpcore.ConnectTimeout, "TLS handshake")
            return BoundedStream(self._inner.start_tls(ssl_context, server_hostname, cut))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class BoundedBackend(httpcore.NetworkBackend):
        """httpcore's own sockets, each one opened and used within the model call's bound."""

        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Iterable[Any] | None = None) -> Any:
            cut = _cut(timeout, httpcore.ConnectTimeout, "connection")
            return BoundedStream(self._inner.connect_tcp(host, port, cut, local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None,
                                socket_options: Iterable[Any] | None = None) -> Any:
            cut = _cut(timeout, httpcore.ConnectTimeout, "connection")
            return BoundedStream(self._inner.connect_unix_socket(path, cut, socket_options))

        def sleep(self, seconds: float) -> None:
            wait(seconds)

    _CLASSES = (BoundedBackend, BoundedStream)
    return _CLASSES


_CLASSES: tuple[type, type] | None = None


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``ALL_PROXY``; ``NO_PROXY`` honoured)."""
    host = urlsplit(url).hostname or ""
    if urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(urlsplit(url).scheme) or proxies.get("all")


def _transport_class() -> type:
    """:class:`httpx.BaseTransport` over an httpcore pool whose sockets are bounded (built on first use)."""
    global _TRANSPORT
    if _TRANSPORT is not None:
        return _TRANSPORT
    import httpx

    httpcore = _httpcore()
    backend_class, _ = _network_classes()

    @contextmanager
    def as_httpx(request: httpx.Request) -> Iterator[None]:
        try:
            yield
        except httpcore.TimeoutException as exc:
            raise _httpx_error(httpx, exc, request) from exc
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError,
                httpcore.UnsupportedProtocol) as exc:
            raise _httpx_error(httpx, exc, request) from exc

    class Body(httpx.SyncByteStream):
        def __init__(self, parts: Iterable[bytes], request: httpx.Request) -> None:
            self._parts = parts
            self._request = request

        def __iter__(self) -> Iterator[bytes]:
            seen = 0
            with as_httpx(self._request):
                for part in self._parts:
                    seen += len(part)
                    if seen > MAX_BODY_BYTES:
                        raise LLMResponseError(
                            f"{self._request.url} sent more than {MAX_BODY_BYTES // 2**20} MiB, far more than a"
                            " chat completion", fix="check that the base URL points at an OpenAI-compatible API")
                    yield part

        def close(self) -> None:
            closer = getattr(self._parts, "close", None)
            if closer is not None:
                closer()

    class BoundedTransport(httpx.BaseTransport):
        """Every request of a model call, from connecting to the last byte, within the call's bound."""

        def __init__(self, proxy: str | None = None) -> None:
            ssl_context = httpx.create_ssl_context()
            backend = backend_class()
            if proxy is None:
                self._pool = httpcore.ConnectionPool(ssl_context=ssl_context, network_backend=backend)
                return
            proxy_url = httpx.URL(proxy)
            core_url = httpcore.URL(scheme=proxy_url.raw_scheme, host=proxy_url.raw_host, port=proxy_url.port,
                                    target=proxy_url.raw_path)
            auth = (proxy_url.username, proxy_url.password) if proxy_url.username else None
            if proxy_url.scheme.startswith("socks"):
                self._pool = httpcore.SOCKSProxy(proxy_url=core_url, proxy_auth=auth, ssl_context=ssl_context,
                                                 network_backend=backend)
            else:
                self._pool = httpcore.HTTPProxy(proxy_url=core_url, proxy_auth=auth, ssl_context=ssl_context,
                                                network_backend=backend)

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            extensions = dict(request.extensions)
            timeouts = dict(extensions.get("timeout") or {})
            timeouts["pool"] = _cut(timeouts.get("pool"), httpcore.PoolTimeout, "connection pool wait")
            extensions["timeout"] = timeouts
            core_request = httpcore.Request(
                method=request.method,
                url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                                 target=request.url.raw_path),
                headers=request.headers.raw,
                content=request.stream,
                extensions=extensions,
            )
            with as_httpx(request):
                response = self._pool.handle_request(core_request)
            return httpx.Response(status_code=response.status, headers=response.headers,
                                  stream=Body(response.stream, request), extensions=response.extensions)

        def close(self) -> None:
            self._pool.close()

    _TRANSPORT = BoundedTransport
    return _TRANSPORT


_TRANSPORT: type | None = None


def _httpx_error(httpx: Any, exc: Exception, request: Any) -> Exception:
    """httpx's exception of the same name as httpcore's (httpx names every transport error alike)."""
    for cls in type(exc).__mro__:
        mapped = getattr(httpx, cls.__name__, None)
        if isinstance(mapped, type) and issubclass(mapped, httpx.TransportError):
            return mapped(str(exc) or cls.__name__, request=request)
    return httpx.TransportError(str(exc), request=request)


def http_client(url: str, **options: Any) -> Any:
    """An :class:`httpx.Client` for model calls to ``url``: every request it makes keeps the call's bound.

    ``options`` go to ``httpx.Client`` (headers, timeout). The environment's proxy for ``url`` is
    used through the same bounded transport (httpx would open its own, unbounded, for it).
    """
    import httpx

    return httpx.Client(transport=_transport_class()(proxy=env_proxy(url)), trust_env=False, **options)

