"""Evaluate a run's metrics against thresholds (and a baseline): one row per rule and metric.

A rule on ``nDCG@10`` also applies to labelled variants ``<label>/nDCG@10`` (one per engine in a
multi-engine run). A rule fails when its metric is missing (unless ``optional``), NaN, outside a
bound, or when a baseline-relative bound has no baseline value; every failure carries its reason.
Any ``hook_error`` metric is a blocking failure whatever the thresholds say.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from hoprag.errors import ConfigError
from hoprag.metrics import STAGES, Metric
from hoprag.gates.thresholds import Rule, Thresholds

__all__ = ["GateReport", "GateRow", "evaluate_gate", "latest_values"]


@dataclass(frozen=True)
class GateRow:
    stage: str
    metric: str
    value: float | None
    baseline: float | None
    threshold: str
    mode: str
    status: str  # pass | fail | skip
    reason: str = ""
    #: for a judged metric, how its judge is calibrated (``calibration``: calibrated | uncalibrated, judge id, ...)
    judge: dict[str, object] | None = None


@dataclass(frozen=True)
class GateReport:
    run_id: str
    baseline_run: str | None
    rows: tuple[GateRow, ...]

    @property
    def blocking_failures(self) -> list[GateRow]:
        return [r for r in self.rows if r.status == "fail" and r.mode == "block"]

    @property
    def warnings(self) -> list[GateRow]:
        return [r for r in self.rows if r.status == "fail" and r.mode == "warn"]

    @property
    def blocked(self) -> bool:
        return bool(self.blocking_failures)

    @property
    def exit_code(self) -> int:
        return 1 if self.blocked else 0

    def to_json(self) -> dict[str, object]:
        return {"run_id": self.run_id, "baseline_run": self.baseline_run, "blocked": self.blocked,
                "blocking_failures": len(self.blocking_failures), "warnings": len(self.warnings),
                "rows": [r.__dict__ for r in self.rows]}


def _judge_meta(meta: dict[str, object]) -> dict[str, object] | None:
    """The judge part of a metric's meta (judge id, prompt, calibration), when a judge decided the value."""
    if "calibration" not in meta:
        return None
    return {k: v for k, v in meta.items() if k == "calibration" or k.startswith(("judge_", "calibration_"))}


def latest_values(metrics: Iterable[Metric]) -> dict[tuple[str, str], float]:
    """``{(stage, name): value}``, the last row winning when a metric was recorded twice."""
    return {(m.stage, m.name): m.value for m in metrics}


def _matches(rule: Rule, name: str) -> bool:
    return name == rule.metric or (name.endswith("/" + rule.metric) and "/" not in name[: -len(rule.metric) - 1])


def _check(rule: Rule, name: str, value: float, base: float | None) -> GateRow:
    def row(status: str, reason: str = "") -> GateRow:
        return GateRow(rule.stage, name, value, base, rule.describe(), rule.mode, status, reason)

    if math.isnan(value):
        return row("fail", "value is NaN (the check had nothing to measure or failed)")
    problems = []
    if rule.min is not None and value < rule.min:
        problems.append(f"{value:.6g} < min {rule.min:g}")
    if rule.max is not None and value > rule.max:
        problems.append(f"{value:.6g} > max {rule.max:g}")
    if rule.needs_baseline:
        if base is None or math.isnan(base):
            problems.append("no baseline value to compare with")
        else:
            if rule.max_drop is not None and base - value > rule.max_drop:
                problems.append(f"dropped {base - value:.6g} from baseline {base:.6g} (> {rule.max_drop:g})")
            if rule.max_rise is not None and value - base > rule.max_rise:
                problems.append(f"rose {value - base:.6g} from baseline {base:.6g} (> {rule.max_rise:g})")
    return row("fail", "; ".join(problems)) if problems else row("pass")


def evaluate_gate(run_id: str, metrics: Sequence[Metric], thresholds: Thresholds,
                  baseline: Sequence[Metric] | None = None, baseline_run: str | None = None) -> GateReport:
    """Every rule against every matching metric of the run."""
    if not metrics:
        raise ConfigError(f"run '{run_id}' has no metrics. Fix: produce them with `hoprag gate run` "
                          "(or record_demo_stages) before gating")
    values = latest_values(metrics)
    base = latest_values(baseline or ())
    judges = {(m.stage, m.name): _judge_meta(m.meta) for m in metrics}
    rows: list[GateRow] = []
    for rule in thresholds.rules:
        found = [(name, v) for (stage, name), v in values.items() if stage == rule.stage and _matches(rule, name)]
        if not found:
            status = "skip" if rule.optional else "fail"
            reason = "not recorded for this run" + (" (optional)" if rule.optional else "")
            rows.append(GateRow(rule.stage, rule.metric, None, base.get((rule.stage, rule.metric)),
                                rule.describe(), rule.mode, status, reason))
            continue
        for name, value in sorted(found):
            rows.append(replace(_check(rule, name, value, base.get((rule.stage, name))),
                                judge=judges.get((rule.stage, name))))
    for m in metrics:
        if m.name.endswith(("hook_error", "stage_error")):
            rows.append(GateRow(m.stage, m.name, m.value, None, "no hook may fail", "block", "fail",
                                f"hook {m.meta.get('hook', '?')} raised {m.meta.get('error', '')}"))
    order = {s: i for i, s in enumerate(STAGES)}
    rows.sort(key=lambda r: order.get(r.stage, len(order)))
    return GateReport(run_id=run_id, baseline_run=baseline_run, rows=tuple(rows))
