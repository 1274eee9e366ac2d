"""Who may read and who may write, decided in one place for every route of the service.

Every ``/api/…`` and ``/v1/…`` route takes its caller from :func:`reader` or :func:`writer` (FastAPI
dependencies); ``tests/service/test_service_security.py`` fails a route that takes neither.

The rule, printed by ``hoprag serve`` at start (:func:`access_rule`):

* **With ``--tokens``** every request to the API needs a bearer token from the file (401 without
  one); the token's entry sets the caller's clearance and whether it may write. ``--clearance``
  (the clearance of callers without a token) has no caller to apply to and is refused with
  ``--tokens``. Aggregates over the whole index or over every caller's answers (a run's stage
  metrics, the feedback dashboard) are shown only to callers who see every document; others get a
  403 saying which clearance does.
* **Without ``--tokens``** the server answers whoever reaches it on this machine (the Host check of
  :mod:`hoprag.service.guard` keeps other sites' pages out) at ``--clearance``, and may write.

A write (a stored answer, feedback, a click) needs a token, or a request a browser marks as coming
from this server's own page: ``Sec-Fetch-Site: same-origin`` or an ``Origin`` equal to the server's.
A request with neither header did not come from a web page (curl, a script), so no other site can
have sent it. GET requests never write.
"""

from __future__ import annotations

from typing import Any, Optional

from fastapi import Header, Request

from hoprag.service.state import ServiceError, ServiceState
from hoprag.service.tokens import Caller

__all__ = ["access_rule", "caller_of", "full_view", "reader", "require_full_view", "same_origin", "writer"]

AUTH = Header(None, description="Bearer <token> (needed for every request when the server has a tokens file)")


def caller_of(state: ServiceState, authorization: str | None) -> Caller:
    """The caller a request's ``Authorization`` header names (401 when the server needs a token)."""
    if state.tokens is None:
        return Caller(name="local", clearance=state.config.clearance, can_write=True)
    if not authorization:
        raise ServiceError(401, "this server needs a bearer token for every request",
                           "send Authorization: Bearer <token> with a token from the server's tokens file")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ServiceError(401, "the Authorization header is not 'Bearer <token>'",
                           "send Authorization: Bearer <token> with a token from the server's tokens file")
    found = state.tokens.lookup(token.strip())
    if found is None:
        raise ServiceError(401, "unknown token", "send a token listed in the server's tokens file")
    return found


def same_origin(request: Request) -> bool:
    """Whether a browser sent ``request`` from this server's own page (or no browser sent it at all)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin.strip().lower() in {f"{scheme}://{host.lower()}" for scheme in ("http", "https")}


def may_write(state: ServiceState, caller: Caller, request: Request) -> Caller:
    """``caller`` when it may write from where ``request`` came; else the 401/403 that says why."""
    if not caller.can_write:
        raise ServiceError(403, f"caller '{caller.name}' may not write",
                           "use a token whose entry has can_write: true (or ask with store=false)")
    if not caller.authenticated and not same_origin(request):
        raise ServiceError(403, "a write from another site's page is refused",
                           "send the request from the hoprag page itself, or with Authorization: Bearer <token>")
    return caller


def full_view(state: ServiceState, caller: Caller) -> bool:
    """Whether ``caller`` sees every document of the index (so whole-index aggregates hide nothing)."""
    return len(state.pool.view(caller.clearance).documents) == len(state.index.documents)


def require_full_view(state: ServiceState, caller: Caller, what: str) -> None:
    """403 for a caller with tokens who does not see every document: ``what`` counts them all."""
    if state.tokens is None or full_view(state, caller):
        return
    needed = next(level for level in state.policy.levels
                  if len(state.pool.view(level).documents) == len(state.index.documents))
    raise ServiceError(403, f"{what} count documents above the clearance '{caller.clearance}' of '{caller.name}'",
                       f"use a token with clearance '{needed}'")


# async although they never wait: FastAPI runs a plain function dependency on its thread pool, a hop
# (and, under load, a wait for the GIL) per request for a dictionary lookup
async def reader(request: Request, authorization: Optional[str] = AUTH) -> Caller:
    """The dependency of every route that reads."""
    return caller_of(request.app.state.hoprag, authorization)


async def writer(request: Request, authorization: Optional[str] = AUTH) -> Caller:
    """The dependency of every route that writes."""
    state = request.app.state.hoprag
    return may_write(state, caller_of(state, authorization), request)


def access_rule(state: Any) -> str:
    """One line saying who may call the server (printed by ``hoprag serve`` at start)."""
    if state.tokens is not None:
        return (f"callers: the {len(state.tokens)} tokens of {state.config.tokens}, each at its own clearance; "
                "requests without a token are refused (401)")
    return (f"callers: anyone on this machine, at clearance '{state.config.clearance}', may read and write "
            "(writes from this server's page or from scripts only; pass --tokens to name callers)")
