"""Two runs side by side: every metric of either, with the change."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hoprag.gates.gate import latest_values
from hoprag.metrics import STAGES
from hoprag.store import RunStore

__all__ = ["DiffRow", "diff_runs"]


@dataclass(frozen=True)
class DiffRow:
    stage: str
    metric: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        if self.a is None or self.b is None or math.isnan(self.a) or math.isnan(self.b):
            return None
        return self.b - self.a


def diff_runs(store: RunStore, run_a: str, run_b: str) -> list[DiffRow]:
    """Rows for the union of both runs' metrics, in stage order then name."""
    store.require_run(run_a)
    store.require_run(run_b)
    a, b = latest_values(store.metrics(run_a)), latest_values(store.metrics(run_b))
    order = {s: i for i, s in enumerate(STAGES)}
    keys = sorted(set(a) | set(b), key=lambda k: (order.get(k[0], len(order)), k[1]))
    return [DiffRow(stage, name, a.get((stage, name)), b.get((stage, name))) for stage, name in keys]
