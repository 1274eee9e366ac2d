"""Rich tables for gate reports, diffs and retrieval measures."""

from __future__ import annotations

import math

from rich.table import Table

from hoprag.gates.diff import DiffRow
from hoprag.gates.gate import GateReport, GateRow

__all__ = ["diff_table", "gate_table", "judge_note", "measures_table"]


def _fmt(value: float | None) -> str:
    if value is None:
        return "–"
    if math.isnan(value):
        return "NaN"
    return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"


def gate_table(report: GateReport) -> Table:
    title = f"gate for run {report.run_id}" + (f" vs baseline {report.baseline_run}" if report.baseline_run else "")
    table = Table(title=title)
    for name in ("stage", "metric", "value", "baseline", "threshold", "mode", "result", "reason"):
        table.add_column(name, justify="right" if name in ("value", "baseline") else "left")
    colour = {"pass": "green", "skip": "dim", "fail": "red"}
    for row in report.rows:
        result = row.status if row.status != "fail" or row.mode == "block" else "warn"
        style = "yellow" if result == "warn" else colour[row.status]
        table.add_row(row.stage, row.metric, _fmt(row.value), _fmt(row.baseline), row.threshold, row.mode,
                      f"[{style}]{result}[/]", row.reason)
    judged = [judge_note(row) for row in report.rows if row.judge]
    if judged:
        table.caption = "judged metrics: " + "; ".join(judged)
    return table


def judge_note(row: GateRow) -> str:
    """``stage/metric judge … calibrated kappa … [lo, hi] n=…`` or ``… uncalibrated``."""
    judge = row.judge or {}
    head = f"{row.stage}/{row.metric} judge {judge.get('judge_model_id')}"
    if judge.get("calibration") != "calibrated":
        return head + " uncalibrated"
    lo, hi = judge.get("calibration_kappa_ci95") or (None, None)
    return (head + f" calibrated kappa={judge.get('calibration_kappa')} \\[{lo}, {hi}] n={judge.get('calibration_n')} "
            f"({judge.get('calibration_file_sha256')}, {judge.get('calibration_date')})")


def diff_table(rows: list[DiffRow], run_a: str, run_b: str) -> Table:
    table = Table(title=f"{run_a} → {run_b}")
    for name in ("stage", "metric", run_a, run_b, "delta"):
        table.add_column(name, justify="left" if name in ("stage", "metric") else "right")
    for row in rows:
        table.add_row(row.stage, row.metric, _fmt(row.a), _fmt(row.b), _fmt(row.delta))
    return table


def measures_table(aggregate: dict[str, float], queries: int) -> Table:
    table = Table(title=f"{queries} queries")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in aggregate.items():
        table.add_row(name, f"{value:.4f}")
    return table
