"""The answer stream: the engine's events (:mod:`hoprag.pipeline.events`) as Server-Sent Events.

``GET /api/ask/stream`` hands the engine a listener; every event the engine emits becomes one SSE
event, named and shaped as the page reads it:

=================  =====================================================================
engine event       SSE event and data
=================  =====================================================================
PlanStarted        ``planning`` {detail}
PlanMade           ``plan`` {planner, sub_queries: [{order, query, depends_on}]}
HopStarted         ``hop`` {hop, queries} (what the hop asks)
HitsFound          ``hits`` {hop, query, hits (the best five), total}
JudgeDecided       ``judge`` {hop, held (the passages judged), sufficient}
SynthesisStarted   ``synthesising`` {detail}
Token              ``token`` {text}
=================  =====================================================================

``JudgeStarted`` and ``AnswerReady`` have no SSE event of their own: the stream ends with ``answer``,
the stored answer's view (as ``POST /api/ask`` returns it), or ``error``. The answer's tokens are
the synthesiser's, streamed from its model through :meth:`hoprag.llm.base.LLM.stream` (with no
model, the offline answer word by word).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hoprag.pipeline.events import (
    EngineEvent,
    HitsFound,
    HopStarted,
    JudgeDecided,
    OnEvent,
    PlanMade,
    PlanStarted,
    SynthesisStarted,
    Token,
)
from hoprag.records import Hit

__all__ = ["hit_view", "sse_event", "sse_listener"]

#: hits of one retrieval call an SSE ``hits`` event shows (``total`` counts them all)
HITS_SHOWN = 5


def hit_view(hit: Hit) -> dict[str, Any]:
    return {"chunk_id": hit.chunk_id, "doc_id": hit.doc_id, "title": hit.title, "rank": hit.rank,
            "score": round(float(hit.score), 4), "start": hit.start, "end": hit.end}


def sse_event(event: EngineEvent) -> tuple[str, dict[str, Any]] | None:
    """The SSE event (name, data) of an engine event; None for one the stream does not show."""
    if isinstance(event, PlanStarted):
        return "planning", {"detail": "planning the hops"}
    if isinstance(event, PlanMade):
        subs = [{"order": s.order, "query": s.query, "depends_on": list(s.depends_on)} for s in event.sub_queries]
        return "plan", {"planner": event.planner, "sub_queries": subs}
    if isinstance(event, HopStarted):
        return "hop", {"hop": event.hop, "queries": event.detail}
    if isinstance(event, HitsFound):
        return "hits", {"hop": event.hop, "query": event.query, "hits": [hit_view(h) for h in event.hits[:HITS_SHOWN]],
                        "total": len(event.hits)}
    if isinstance(event, JudgeDecided):
        return "judge", {"hop": event.hop, "held": event.passages, "sufficient": event.sufficient}
    if isinstance(event, SynthesisStarted):
        return "synthesising", {"detail": "synthesising the answer"}
    if isinstance(event, Token):
        return "token", {"text": event.text}
    return None


def sse_listener(send: Callable[[str, dict[str, Any]], None]) -> OnEvent:
    """A listener that hands each event the stream shows to ``send(name, data)``."""

    def listen(event: EngineEvent) -> None:
        shown = sse_event(event)
        if shown is not None:
            send(*shown)

    return listen
