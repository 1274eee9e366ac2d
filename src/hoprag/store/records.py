"""Records the run store hands back: run headers and their statuses, baselines, feedback events."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["COMPLETE", "FAILED", "INCOMPLETE", "RUNNING", "RUN_STATUSES", "UNKNOWN", "BaselineInfo", "FeedbackEvent",
           "RemovedRun", "RunInfo"]

RUNNING = "running"
COMPLETE = "complete"
FAILED = "failed"
INCOMPLETE = "incomplete"  # stored as running, but its writer process is gone: it will never finish
UNKNOWN = "unknown"  # stored before runs had a status
RUN_STATUSES = (RUNNING, COMPLETE, FAILED, INCOMPLETE, UNKNOWN)


@dataclass(frozen=True)
class RunInfo:
    """One run: a gated pipeline run, a demo set, an imported feedback batch.

    ``status`` is one of :data:`RUN_STATUSES`; ``error`` says why a failed run failed; ``writer``
    names the process that created it (``host:pid:start``).
    """

    run_id: str
    kind: str
    created_at: datetime
    artifact_id: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    status: str = RUNNING
    finished_at: datetime | None = None
    writer: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        data["finished_at"] = self.finished_at.isoformat() if self.finished_at else None
        return data


@dataclass(frozen=True)
class RemovedRun:
    """What removing one run deleted: row counts per table, and the baselines that pointed at it."""

    run_id: str
    metrics: int
    traces: int
    feedback: int
    artifacts: int
    baselines: tuple[str, ...] = ()


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
