"""Per-trace latency fallback and linear-interpolation percentiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.latency import percentile, trace_latency_ms
from hoprag.records import HopStep, Trace

pytestmark = pytest.mark.unit

CASE = load_cases(Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl")[0]


def _steps(*cumulative: float) -> tuple[HopStep, ...]:
    return tuple(
        HopStep(step_id=f"s{i}", hop=i, sub_query="", issued_query="", cumulative_ms=c)
        for i, c in enumerate(cumulative, start=1)
    )


def test_trace_latency_prefers_the_trace_total() -> None:
    t = Trace(run_id="r", case_id=CASE.case_id, question="q", steps=_steps(40.0, 95.0), latency_ms=250.0)
    assert trace_latency_ms(CASE, t) == 250.0


def test_trace_latency_falls_back_to_last_step() -> None:
    t = Trace(run_id="r", case_id=CASE.case_id, question="q", steps=_steps(40.0, 95.0))
    assert trace_latency_ms(CASE, t) == 95.0
    assert trace_latency_ms(CASE, Trace(run_id="r", case_id=CASE.case_id, question="q")) == 0.0


def test_percentile_linear_interpolation() -> None:
    values = [40.0, 10.0, 30.0, 20.0]
    assert percentile(values, 50) == 25.0  # halfway between 20 and 30
    # position (4 - 1) * 0.95 = 2.85 in [10, 20, 30, 40] -> 30 + 0.85 * 10
    assert percentile(values, 95) == pytest.approx(38.5)
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None
