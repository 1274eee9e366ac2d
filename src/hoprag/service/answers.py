"""One answer of the service, for every route that answers: ``/api/ask`` (JSON and stream) and
``/v1/chat/completions`` (JSON and stream).

:func:`answer` runs the engine on the answering threads at the caller's clearance and returns the
answer's view (:func:`hoprag.service.views.answer_view`), storing the redacted trace when asked;
:func:`answer_events` does the same while yielding the engine's events as they happen (named as in
:mod:`hoprag.service.streaming`), then ``answer`` with the view, or ``error``. The end of the
answer is pushed to the stream the moment the engine returns, so the ``answer`` event follows the
last token at once.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable
from typing import Any

from hoprag.pipeline.events import OnEvent, fan_out
from hoprag.records import Trace
from hoprag.service.models import AskRequest
from hoprag.service.state import ServiceError, ServiceState, split_fix
from hoprag.service.streaming import sse_listener
from hoprag.service.tokens import Caller
from hoprag.service.views import answer_view

__all__ = ["answer", "answer_events", "check_question", "run_blocking", "timed_out"]


def timed_out(state: ServiceState) -> ServiceError:
    return ServiceError(504, f"no answer within {state.config.request_timeout:g} s",
                        "ask again, or start the server with a larger --request-timeout")


async def run_blocking(state: ServiceState, fn: Callable[[], Any]) -> Any:
    """``fn()`` on the answering threads, bounded by the request timeout (504 when it runs out)."""
    loop = asyncio.get_running_loop()
    try:
        job = loop.run_in_executor(state.executor, contextvars.copy_context().run, fn)  # spans nest under the request's
        return await asyncio.wait_for(job, state.config.request_timeout)
    except asyncio.TimeoutError:
        raise timed_out(state) from None


def check_question(ask: AskRequest) -> None:
    """The engines' own check (:mod:`hoprag.pipeline.question_check`), answered 422 before any work."""
    from hoprag.errors import InputError
    from hoprag.pipeline.question_check import check_question as engines_check

    try:
        engines_check(ask.question.strip())
    except InputError as exc:
        raise ServiceError(422, *split_fix(str(exc))) from None


def _trace(state: ServiceState, ask: AskRequest, clearance: str, trace_id: str, on_event: OnEvent | None) -> Trace:
    """The engine's answer; its events go to ``on_event`` and to the question's spans (:mod:`hoprag.telemetry`)."""
    from hoprag import telemetry

    spans = telemetry.listener(state.config.engine.synth_model(),
                               {"hoprag.clearance": clearance, "hoprag.stored": ask.store})
    return state.pool.answer(ask.question.strip(), trace_id=trace_id, run_id=state.store.trace_run,
                             clearance=clearance, on_event=fan_out(on_event, spans), engine=ask.engine, mode=ask.mode,
                             k=ask.k, use_llm=ask.llm == "default")


def _finish(state: ServiceState, trace: Trace, stored: bool, clearance: str) -> dict[str, Any]:
    view = answer_view(trace, state.pool.view(clearance), stored=stored, clearance=clearance)
    if stored:
        state.store.add_trace(trace, citations_shown=len(view["citations"]))
    return view


async def answer(state: ServiceState, ask: AskRequest, caller: Caller, trace_id: str) -> dict[str, Any]:
    """The answer's view; ``ask.store`` must have been checked as a write by the caller's route."""
    # one trip to the answering threads for the answer and its view
    return await run_blocking(state, lambda: _finish(state, _trace(state, ask, caller.clearance, trace_id, None),
                                                     ask.store, caller.clearance))


async def answer_events(state: ServiceState, ask: AskRequest, caller: Caller,
                        trace_id: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The engine's events as (name, data), then ``("answer", view)`` or ``("error", {error, fix})``."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

    def push(item: tuple[str, dict[str, Any]] | None) -> None:  # from the answering thread to this loop
        loop.call_soon_threadsafe(queue.put_nowait, item)

    events = sse_listener(lambda name, data: push((name, data)))

    def work() -> None:
        # the answer goes into the queue right behind the last token, from the thread that made it: the
        # stream sends it on the same wake-up, not after the executor's future reaches the loop
        try:
            push(("answer", _finish(state, _trace(state, ask, caller.clearance, trace_id, events), ask.store,
                                    caller.clearance)))
        except Exception as exc:  # noqa: BLE001 - an error ends the stream as an event, never a traceback
            push(("error", _error_event(exc)))
        finally:
            push(None)

    job = loop.run_in_executor(state.executor, contextvars.copy_context().run, work)
    deadline = loop.time() + state.config.request_timeout
    while True:
        try:
            item = await asyncio.wait_for(queue.get(), timeout=max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            late = timed_out(state)
            yield "error", {"error": late.error, "fix": late.fix}
            return
        if item is None:
            break
        yield item
    await job


def _error_event(exc: Exception) -> dict[str, str]:
    what, fix = (exc.error, exc.fix) if isinstance(exc, ServiceError) else split_fix(str(exc))
    if not isinstance(exc, ServiceError) and not str(exc):
        what = f"internal error ({type(exc).__name__})"
    return {"error": what, "fix": fix}
