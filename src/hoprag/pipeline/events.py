"""What an engine reports while it answers one question: typed events, and the one callback type.

An engine's ``answer(question, on_event=listener)`` calls ``listener(event)`` as it goes, in this
order for the multi-hop engine::

    PlanStarted, PlanMade,
    (HopStarted, HitsFound…, [JudgeStarted, JudgeDecided]) per hop,
    SynthesisStarted, Token…, AnswerReady

(the single-shot engine: HopStarted, HitsFound, SynthesisStarted, Token…, AnswerReady). ``Token``
events come only when the caller asks for them (``answer(..., tokens=True)``): the synthesiser then
streams its answer (a model synthesiser through :meth:`hoprag.llm.base.LLM.stream`). ``AnswerReady``
carries the finished trace. Hits of one hop are found concurrently: their ``HitsFound`` come in
the order the retrievals end, one at a time (the engine never calls a listener from two threads at
once).

Every consumer reads these events: the CLI's progress lines (:func:`progress_line`), the service's
Server-Sent Events (:mod:`hoprag.service.streaming`) and OpenTelemetry (:mod:`hoprag.telemetry`).
A listener never changes the answer: with or without one, the trace is the same.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hoprag.pipeline.plan import SubQuery
    from hoprag.records import Hit, Trace

__all__ = [
    "AnswerReady",
    "Emitter",
    "EngineEvent",
    "HitsFound",
    "HopStarted",
    "JudgeDecided",
    "JudgeStarted",
    "OnEvent",
    "PlanMade",
    "PlanStarted",
    "SynthesisStarted",
    "Token",
    "fan_out",
    "progress_line",
]


@dataclass(frozen=True)
class PlanStarted:
    """The planner is asked for the question's sub-queries."""


@dataclass(frozen=True)
class PlanMade:
    """The plan: ``planner`` names who made it (a model's fallback says so)."""

    planner: str
    sub_queries: tuple[SubQuery, ...]


@dataclass(frozen=True)
class HopStarted:
    """Hop ``hop`` begins; ``detail`` says what it asks (its sub-queries, or the bridges it follows)."""

    hop: int
    detail: str


@dataclass(frozen=True)
class HitsFound:
    """One retrieval call of hop ``hop`` returned ``hits`` (best first) for ``query``."""

    hop: int
    query: str
    hits: tuple[Hit, ...]


@dataclass(frozen=True)
class JudgeStarted:
    """The judge is asked whether the ``held`` passages suffice."""

    hop: int
    held: int


@dataclass(frozen=True)
class JudgeDecided:
    """The judge's verdict on the ``passages`` it was shown (the ranked buffer)."""

    hop: int
    passages: int
    sufficient: bool


@dataclass(frozen=True)
class SynthesisStarted:
    """The answer is being written from the ranked evidence."""

    hop: int


@dataclass(frozen=True)
class Token:
    """A piece of the answer's text as it is written (asked for with ``answer(..., tokens=True)``)."""

    text: str


@dataclass(frozen=True)
class AnswerReady:
    """The question is answered: the whole trace, as ``answer`` returns it."""

    trace: Trace


EngineEvent = PlanStarted | PlanMade | HopStarted | HitsFound | JudgeStarted | JudgeDecided | SynthesisStarted | Token | AnswerReady
#: the one callback type every engine, the CLI, the service and telemetry share
OnEvent = Callable[[EngineEvent], None]


class Emitter:
    """How an engine reports one question: to its listener, one event at a time, from any thread.

    ``tokens`` is whether the caller asked for the answer's text as :class:`Token` events.
    """

    def __init__(self, listener: OnEvent | None = None, *, tokens: bool = False) -> None:
        self.listener = listener
        self.tokens = tokens and listener is not None
        self._lock = threading.RLock()

    @property
    def listening(self) -> bool:
        return self.listener is not None

    def __call__(self, event: EngineEvent) -> None:
        if self.listener is not None:
            with self._lock:
                self.listener(event)

    def token_sink(self) -> Callable[[str], None] | None:
        """Where a synthesiser hands its pieces of text (None: no Token events were asked for)."""
        if not self.tokens:
            return None
        return lambda text: self(Token(text))


def fan_out(*listeners: OnEvent | None) -> OnEvent | None:
    """One listener calling each given one in order (None when none is given)."""
    present = [listener for listener in listeners if listener is not None]
    if len(present) <= 1:
        return present[0] if present else None

    def both(event: EngineEvent) -> None:
        for listener in present:
            listener(event)

    return both


def progress_line(event: EngineEvent) -> str | None:
    """The words a progress display shows for ``event`` (None: it shows nothing for it)."""
    if isinstance(event, PlanStarted):
        return "planning  …"
    if isinstance(event, HopStarted):
        return f"hop {event.hop} · searching {event.detail} …"
    if isinstance(event, JudgeStarted):
        return f"judging {event.held} passages held …"
    if isinstance(event, SynthesisStarted):
        return "synthesising  …"
    return None
