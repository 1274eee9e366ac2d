"""The one metric record every hook emits, and the stage names it may carry.

Every metric of every run is one row ``(run_id, stage, metric, value, meta, ts)``. ``meta`` holds
context (cut-off, window, reference run, counts) and must never hold the data being checked: a PII
hit is reported as a count and a location, never as the matched text.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from hoprag.errors import ConfigError

__all__ = ["STAGES", "STAGE_ALIASES", "Metric", "canonical_stage", "utc_now"]

# Pipeline order; ``feedback`` is the online stage after the answer is shown.
STAGES: tuple[str, ...] = ("ingest", "chunk", "embed", "index", "retrieve", "generate", "feedback")
# The seed note's names for the same stages (thresholds.yaml may use either).
STAGE_ALIASES: dict[str, str] = {
    "source_data": "ingest",
    "data": "ingest",
    "ingestion": "ingest",
    "chunking": "chunk",
    "vectorization": "embed",
    "embedding": "embed",
    "indexing": "index",
    "retrieval": "retrieve",
    "generation": "generate",
    "online": "feedback",
    "human": "feedback",
}


def canonical_stage(name: str) -> str:
    """The canonical stage for ``name`` (an alias is accepted); unknown names list the valid ones."""
    if name in STAGES:
        return name
    if name in STAGE_ALIASES:
        return STAGE_ALIASES[name]
    raise ConfigError(
        f"unknown stage '{name}'; valid stages: {', '.join(STAGES)} "
        f"(aliases: {', '.join(sorted(STAGE_ALIASES))})"
    )


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Metric:
    """One measured value of one stage of one run. ``value`` may be NaN: gates then fail, naming it."""

    run_id: str
    stage: str
    name: str
    value: float
    meta: dict[str, Any] = field(default_factory=dict)
    ts: datetime = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))

    @property
    def is_nan(self) -> bool:
        return math.isnan(self.value)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ts"] = self.ts.isoformat()
        return data
