"""Aggregates of per-case rows: a mean (or percentile) per measure over the cases where it applies.

For each measure summary ``"mean"``, the mean over the cases where the value is not ``None``
(``None`` itself when no case applies); for ``"pNN"``, ``<name>_pNN`` is the linear-interpolation
percentile of those values. Where some case was N/A, ``n_<measure>`` (cases in the mean) and
``na_<measure>`` (cases left out) are reported too.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from hoprag.evaluation.latency import percentile
from hoprag.evaluation.measures.cases import Measure

__all__ = ["aggregate_rows", "group_rows"]

UNGROUPED = "(none)"


def aggregate_rows(rows: Sequence[dict[str, Any]], measures: Sequence[Measure]) -> dict[str, Any]:
    """``cases``, ``missing_traces`` and every measure's summaries over ``rows``."""
    out: dict[str, Any] = {"cases": len(rows), "missing_traces": sum(bool(r["missing_trace"]) for r in rows)}
    for measure in measures:
        label = str(measure)
        # C loops (this runs for every measure and every group, over every row): the column, and
        # the N/A values dropped only when there are some
        column = list(map(itemgetter(label), rows))
        values = list(map(float, [v for v in column if v is not None] if None in column else column))
        for summary in measure.summaries:
            if summary == "mean":
                out[label] = sum(values) / len(values) if values else None
            else:
                out[f"{label}_{summary}"] = percentile(values, float(summary[1:]))
        if len(values) < len(rows):
            out[f"n_{label}"] = len(values)
            out[f"na_{label}"] = len(rows) - len(values)
    return out


def group_rows(rows: Sequence[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    """``rows`` by the value of ``key`` (``(none)`` when unset), groups sorted by name."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        value = row.get(key)
        groups.setdefault(UNGROUPED if value is None else str(value), []).append(row)
    return dict(sorted(groups.items()))
