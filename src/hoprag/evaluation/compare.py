"""Paired, case-level comparison of two runs with cluster-bootstrap intervals.

For each metric the two runs are scored on the same cases (:func:`evaluate_chains`); the per-case
pairs feed :func:`hoprag.evaluation.stats.paired_cluster_bootstrap` with clusters from
``cluster_by`` (``path`` = graph-path seed, ``template``, ``source_family``). Differences are
``B - A``. Cases where either side is N/A are excluded and counted. Latency is compared per case
too; coverage is also compared at an *equal end-to-end budget* — both runs cut at the baseline's
p95 latency (:func:`hoprag.evaluation.stopping.truncate_to_budget`) — so the candidate is not
credited with unlimited time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.evaluation.chain_eval import ChainReport, evaluate_chains
from hoprag.evaluation.failures import missing_fields
from hoprag.evaluation.hops import chain_coverage
from hoprag.evaluation.memo import evaluation_memo
from hoprag.evaluation.stats import cluster_of, paired_cluster_bootstrap
from hoprag.evaluation.stopping import truncate_to_budget
from hoprag.executors import Executor
from hoprag.gc_pause import collector_paused
from hoprag.records import Trace

DEFAULT_METRICS = ("chain_coverage@{k}", "answer_f1", "latency_ms")


@dataclass(frozen=True)
class Comparison:
    rows: list[dict[str, Any]]
    cluster_by: str
    seed: int
    resamples: int
    budget_ms: float | None
    a: ChainReport
    b: ChainReport

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "cluster_by": self.cluster_by,
            "seed": self.seed,
            "resamples": self.resamples,
            "budget_ms": self.budget_ms,
            "aggregate_a": self.a.aggregate,
            "aggregate_b": self.b.aggregate,
            "failures_a": self.a.failures,
            "failures_b": self.b.failures,
            "not_assessable": self.a.not_assessable,  # the same for both: the classes either run cannot show
        }


def _row(metric: str, a: list[float | None], b: list[float | None], clusters: list[str], resamples: int, seed: int) -> dict[str, Any]:
    ci = paired_cluster_bootstrap(a, b, clusters, resamples=resamples, seed=seed)
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    mean_a = sum(x for x, _ in pairs) / len(pairs) if pairs else None
    mean_b = sum(y for _, y in pairs) / len(pairs) if pairs else None
    return {"metric": metric, "mean_a": mean_a, "mean_b": mean_b, "diff": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
            "p_value": ci.p_value, "n": ci.n, "n_clusters": ci.n_clusters, "excluded": ci.excluded}


def compare_runs(
    cases: Sequence[Case],
    traces_a: Sequence[Trace],
    traces_b: Sequence[Trace],
    *,
    k: int = 10,
    metrics: Sequence[str] = DEFAULT_METRICS,
    cluster_by: str = "path",
    resamples: int = 2000,
    seed: int = 0,
    equal_budget: bool = True,
    executor: Executor | None = None,
) -> Comparison:
    """Paired differences B - A per metric with intervals; see the module doc. ``executor`` scores
    both runs (:func:`hoprag.evaluation.chain_eval.evaluate_chains`; default: in this process)."""
    # one memo for both runs and the budget cut: what is derived from a case alone is derived once
    with collector_paused(), evaluation_memo():
        return _compare_runs(cases, traces_a, traces_b, k=k, metrics=metrics, cluster_by=cluster_by,
                             resamples=resamples, seed=seed, equal_budget=equal_budget, executor=executor)


def _compare_runs(
    cases: Sequence[Case],
    traces_a: Sequence[Trace],
    traces_b: Sequence[Trace],
    *,
    k: int,
    metrics: Sequence[str],
    cluster_by: str,
    resamples: int,
    seed: int,
    equal_budget: bool,
    executor: Executor | None,
) -> Comparison:
    # both runs are judged on the failure classes both can show (pass_rate: a run that cites nothing
    # is not compared on attribution against one that cites)
    lacking = missing_fields(traces_a) | missing_fields(traces_b)
    a = evaluate_chains(cases, traces_a, ks=(k,), executor=executor, lacking=lacking)
    b = evaluate_chains(cases, traces_b, ks=(k,), executor=executor, lacking=lacking)
    clusters = [cluster_of(c, cluster_by) for c in cases]
    rows = []
    for template in metrics:
        metric = template.format(k=k)
        if a.cases and metric not in a.cases[0]:
            raise ValueError(f"unknown metric {metric!r}; per-case columns are e.g. {', '.join(list(a.cases[0])[:8])}")
        rows.append(_row(metric, [r[metric] for r in a.cases], [r[metric] for r in b.cases], clusters, resamples, seed))
    rows.append(_row("pass_rate", [float(r["passed"]) for r in a.cases], [float(r["passed"]) for r in b.cases], clusters, resamples, seed))
    budget = a.aggregate.get("latency_ms_p95")
    if equal_budget and budget is not None:
        cov_a, cov_b = [], []
        for case in cases:
            for store, report in ((cov_a, a), (cov_b, b)):
                trace = report.traces.get(case.case_id)
                if not case.valid_chains:
                    store.append(None)
                elif trace is None:
                    store.append(0.0)
                else:
                    store.append(chain_coverage(case, truncate_to_budget(trace, budget), k))
        rows.append(_row(f"chain_coverage@{k}@budget", cov_a, cov_b, clusters, resamples, seed))
    return Comparison(rows=rows, cluster_by=cluster_by, seed=seed, resamples=resamples, budget_ms=budget, a=a, b=b)
