"""Per-question latency and its percentiles.

    latency_ms(trace) = trace.latency_ms if it is non-zero, else trace.steps[-1].cumulative_ms
                        (0 when there are no steps)
    p-th percentile   = numpy.percentile(values, p, method="linear")  # linear interpolation
                        between closest ranks: position (n - 1) * p / 100 in the sorted values
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hoprag.datasets.schema import Case
from hoprag.records import Trace


def trace_latency_ms(case: Case, trace: Trace, k: int | None = None) -> float:
    """Wall time the trace reports, falling back to its last step's cumulative time."""
    if trace.latency_ms:
        return float(trace.latency_ms)
    if trace.steps:
        return float(trace.steps[-1].cumulative_ms)
    return 0.0


def percentile(values: Sequence[float], p: float) -> float | None:
    """Linear-interpolation percentile (numpy's default method); None for no values."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), p, method="linear"))
