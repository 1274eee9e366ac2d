"""The retrieve stage's check: document-level P@k, R@k, nDCG@k, Success@k, RR and AP of a run.

The measures are the evaluation core's (:mod:`hoprag.evaluation.measures.documents`, the same code
``hoprag trec eval`` and ``hoprag eval -m`` run), and the qrels and run come from the one rule of
:mod:`hoprag.evaluation.qrels`, so the gate's numbers equal theirs on the same traces. A case with
no trace is scored 0 (``trec_eval -c``); a case with no relevant document is not a query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hoprag.evaluation.measures.documents import retrieval_measures
from hoprag.gates.hooks import hook, metric
from hoprag.metrics import Metric
from hoprag.trec import Qrels, Run

__all__ = ["CUTOFF_FAMILIES", "PLAIN_FAMILIES", "RetrievalOutput", "gate_measures", "retrieval_check"]

#: the registered document measures the gate records at each cut-off, then the cut-off-free ones
CUTOFF_FAMILIES = ("P", "R", "nDCG", "Success")
PLAIN_FAMILIES = ("RR", "AP")


@dataclass(frozen=True)
class RetrievalOutput:
    """What the retrieve stage hands its hooks: a run and the qrels to judge it (doc-level), as
    :func:`hoprag.evaluation.qrels.run_from_traces` and :func:`~hoprag.evaluation.qrels.qrels_from_cases`
    build them."""

    run: Run
    qrels: Qrels
    ks: tuple[int, ...] = (5, 10)
    label: str = ""


def gate_measures(ks: tuple[int, ...]) -> list[str]:
    """The measure names the gate records for cut-offs ``ks``."""
    return [f"{family}@{k}" for k in ks for family in CUTOFF_FAMILIES] + list(PLAIN_FAMILIES)


@hook("retrieve")
def retrieval_check(out: RetrievalOutput, ctx: dict[str, Any]) -> list[Metric]:
    ks = tuple(ctx.get("ks") or out.ks)
    result = retrieval_measures(out.qrels, out.run, gate_measures(ks), include_missing=True)
    missing = sum(1 for q in out.qrels if q not in out.run)
    metrics = [metric(ctx, "queries", result.queries, label=out.label, missing_from_run=missing)]
    for name, value in result.aggregate.items():
        alias = {"alias": name.replace("Success", "coverage")} if name.startswith("Success") else {}
        metrics.append(metric(ctx, name, value, label=out.label, **alias))
    return metrics
