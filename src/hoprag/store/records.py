"""Records the run store hands back: run headers, baselines and feedback events."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["BaselineInfo", "FeedbackEvent", "RunInfo"]


@dataclass(frozen=True)
class RunInfo:
    """One run: a gated pipeline run, a demo set, an imported feedback batch."""

    run_id: str
    kind: str
    created_at: datetime
    artifact_id: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BaselineInfo:
    """A named, frozen reference: the run whose metrics and artifacts later gates compare against."""

    name: str
    run_id: str
    created_at: datetime


@dataclass(frozen=True)
class FeedbackEvent:
    """One user signal about one answer of one run.

    ``kind`` is ``thumbs`` (``value`` ``up``/``down``), ``tag`` (``tag`` from the fixed taxonomy,
    ``stage`` its owner), ``view`` (an answer shown with ``count`` citations) or ``click`` (one cited
    source opened; ``chunk_id`` says which).
    """

    event_id: str
    run_id: str
    kind: str
    ts: datetime
    case_id: str = ""
    value: str | None = None
    tag: str | None = None
    stage: str | None = None
    chunk_id: str | None = None
    count: int = 1
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ts"] = self.ts.isoformat()
        return data
