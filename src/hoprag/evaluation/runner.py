"""Measures-only scoring of traces against cases: a thin call of the one evaluate path,
:func:`hoprag.evaluation.chain_eval.evaluate_chains`. Trace files are read by :mod:`hoprag.io.traces`.

Pairing rules:
- a case with no trace gets every measure's default (0 for coverage, recall, EM, F1; N/A for
  latency and hop statistics) and is counted in ``missing_traces``; it is never dropped;
- a trace whose ``case_id`` names no case is not scored, only counted in ``unknown_traces``
  (and named in ``EvalResult.unknown_case_ids``);
- several traces for one case: the last one in the list wins; the extra ones are counted in
  ``duplicate_traces`` (the cases are named in ``EvalResult.duplicate_case_ids``).

Aggregates: :mod:`hoprag.evaluation.aggregates`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.evaluation.aggregates import aggregate_rows, group_rows
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.measures.cases import Measure, default_measures
from hoprag.records import Trace

__all__ = ["GROUP_KEYS", "EvalResult", "evaluate"]

GROUP_KEYS = ("question_type", "dataset")


@dataclass(frozen=True)
class EvalResult:
    """Per-case rows, aggregates and the configuration that produced them."""

    aggregate: dict[str, float | None]
    cases: list[dict[str, Any]]
    measures: tuple[Measure, ...]
    config: dict[str, Any] = field(default_factory=dict)
    #: case ids of traces that named no case (not scored), and of cases with more than one trace
    #: (the last trace of each is scored), in the order met
    unknown_case_ids: tuple[str, ...] = ()
    duplicate_case_ids: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"aggregate": {...}, "cases": [...], "config": {...}}``: JSON-serialisable."""
        return {
            "aggregate": dict(self.aggregate),
            "cases": [dict(row) for row in self.cases],
            "config": dict(self.config),
        }

    def aggregate_by(self, key: str) -> dict[str, dict[str, float | None]]:
        """Aggregates per value of ``key`` (``question_type`` or ``dataset``); unset is ``(none)``."""
        if key not in GROUP_KEYS:
            raise ValueError(f"cannot group by {key!r}; valid keys: {', '.join(GROUP_KEYS)}")
        return {name: aggregate_rows(rows, self.measures) for name, rows in group_rows(self.cases, key).items()}


def evaluate(
    cases: Sequence[Case],
    traces: Iterable[Trace],
    ks: Iterable[int] = (2, 5, 10),
    *,
    measures: Sequence[Measure] | None = None,
) -> EvalResult:
    """Score ``traces`` against ``cases`` with ``measures`` (default: :func:`default_measures(ks)`).

    A thin call of the one evaluate path, :func:`hoprag.evaluation.chain_eval.evaluate_chains`,
    keeping only the measures' columns and aggregates (no failure, stopping or group reports)."""
    ks = tuple(ks)
    chosen = tuple(measures) if measures is not None else tuple(default_measures(ks))
    labels = [str(m) for m in chosen]
    report = evaluate_chains(cases, traces, ks, measures=chosen)
    columns = ("case_id", "question_type", "dataset", *labels, "stop_reason", "missing_trace")
    rows = [{name: row[name] for name in columns} for row in report.cases]
    totals = aggregate_rows(rows, chosen)
    totals["unknown_traces"] = report.aggregate["unknown_traces"]
    totals["duplicate_traces"] = report.aggregate["duplicate_traces"]
    datasets = sorted({str(c.dataset) for c in cases if c.dataset is not None})
    config = {"ks": list(ks), "measures": labels, "datasets": datasets}
    return EvalResult(aggregate=totals, cases=rows, measures=chosen, config=config,
                      unknown_case_ids=report.unknown_case_ids, duplicate_case_ids=report.duplicate_case_ids)
