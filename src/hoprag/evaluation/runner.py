"""Score traces (from any pipeline) against cases: one row per case plus aggregates.

Pairing rules:
- a case with no trace gets every measure's default (0 for coverage, recall, EM, F1; N/A for
  latency and hop statistics) and is counted in ``missing_traces``; it is never dropped;
- a trace whose ``case_id`` names no case is not scored, only counted in ``unknown_traces``
  (and named in ``EvalResult.unknown_case_ids``);
- several traces for one case: the last one in the list wins; the extra ones are counted in
  ``duplicate_traces`` (the cases are named in ``EvalResult.duplicate_case_ids``).

Aggregates: for each measure summary ``"mean"``, the mean over the cases where the value is not
``None`` (``None`` itself when no case applies); for ``"pNN"``, ``<name>_pNN`` is the
linear-interpolation percentile of those values. Where some case was N/A, ``n_<measure>`` (cases
in the mean) and ``na_<measure>`` (cases left out) are reported too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.errors import InputError
from hoprag.evaluation.latency import percentile
from hoprag.evaluation.measures import Measure, default_measures
from hoprag.evaluation.memo import evaluation_memo
from hoprag.finite_numbers import NumberError
from hoprag.gc_pause import collector_paused
from hoprag.records import Trace
from hoprag.trace_json import trace_from_json_line
from hoprag.traces_file import read_trace_dicts

GROUP_KEYS = ("question_type", "dataset")
_UNGROUPED = "(none)"


def read_traces(path: str | Path) -> list[Trace]:
    """Read a trace JSONL file (one trace per line) from hoprag or any other pipeline.

    The header line ``hoprag run`` writes is skipped; a numeric ``case_id`` is read as its string.
    A malformed line (a cut-off last line included), a missing or empty ``case_id``, a bad field or
    a cases file given as traces raises :class:`InputError` naming the file and line.
    """
    with collector_paused():
        return _read_traces(path)


def _read_traces(path: str | Path) -> list[Trace]:
    source = str(path)
    traces: list[Trace] = []
    records, _ = read_trace_dicts(path, fast=trace_from_json_line)
    for number, obj in records:
        if type(obj) is Trace:  # a well-formed line, already read (hoprag.trace_json)
            traces.append(obj)
            continue
        case_id = obj.get("case_id")
        if case_id is None or not str(case_id).strip():
            raise InputError(
                "trace has no case_id",
                source=source,
                line=number,
                field="case_id",
                fix="give every trace the case_id of the case it answers",
            )
        try:
            traces.append(Trace.from_dict(obj))
        except KeyError as exc:
            name = str(exc.args[0])
            raise InputError(
                f"trace {case_id!r} is missing a field",
                source=source,
                line=number,
                field=name,
                fix=f"add '{name}' (hits and evidence need at least 'doc_id'; steps need 'step_id')",
            ) from None
        except NumberError as exc:
            raise InputError(f"trace {case_id!r} is invalid: {exc.reason}", source=source, line=number,
                             field=exc.field, fix=exc.fix) from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise InputError(
                f"trace {case_id!r} is invalid: {exc}",
                source=source,
                line=number,
                fix="write traces with hoprag.records.Trace.to_dict or follow its field types",
            ) from None
    return traces


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
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in self.cases:
            value = row.get(key)
            groups.setdefault(_UNGROUPED if value is None else str(value), []).append(row)
        return {name: _aggregate_rows(rows, self.measures) for name, rows in sorted(groups.items())}


def evaluate(
    cases: Sequence[Case],
    traces: Iterable[Trace],
    ks: Iterable[int] = (2, 5, 10),
    *,
    measures: Sequence[Measure] | None = None,
    aggregate: bool = True,
) -> EvalResult:
    """Score ``traces`` against ``cases`` with ``measures`` (default: :func:`default_measures(ks)`).

    ``aggregate=False`` leaves out the measures' aggregates (only the trace counts are given), for
    a caller that aggregates the rows of several calls itself."""
    ks = tuple(ks)
    chosen = tuple(measures) if measures is not None else tuple(default_measures(ks))
    labels = [str(m) for m in chosen]
    if len(set(labels)) != len(labels):
        raise ValueError(f"measures have duplicate names: {labels}")
    known: dict[str, Case] = {}
    for case in cases:
        if case.case_id in known:
            raise InputError(
                f"duplicate case_id {case.case_id!r}",
                field="case_id",
                fix="give every case a unique case_id",
            )
        known[case.case_id] = case

    by_case: dict[str, Trace] = {}
    unknown_ids: list[str] = []
    duplicate_ids: list[str] = []
    unknown = duplicates = 0
    for trace in traces:
        if trace.case_id not in known:
            unknown += 1
            unknown_ids.append(trace.case_id)
            continue
        if trace.case_id in by_case:
            duplicates += 1
            duplicate_ids.append(trace.case_id)
        by_case[trace.case_id] = trace  # the last one wins

    plan = _families(chosen, labels)
    with evaluation_memo(), collector_paused():
        rows = [_row(case, by_case.get(case.case_id), plan) for case in known.values()]
    totals = _aggregate_rows(rows, chosen) if aggregate else {}
    totals["unknown_traces"] = unknown
    totals["duplicate_traces"] = duplicates
    datasets = sorted({str(c.dataset) for c in known.values() if c.dataset is not None})
    config = {"ks": list(ks), "measures": labels, "datasets": datasets}
    return EvalResult(aggregate=totals, cases=rows, measures=chosen, config=config,
                      unknown_case_ids=tuple(dict.fromkeys(unknown_ids)),
                      duplicate_case_ids=tuple(dict.fromkeys(duplicate_ids)))


Family = tuple[Measure, tuple[str, ...], tuple[int, ...] | None]


def _families(measures: Sequence[Measure], labels: Sequence[str]) -> list[Family]:
    """The measures in order, consecutive cutoffs of one measure with ``many`` joined into one family
    ``(measure, labels, cutoffs)`` (cutoffs ``None``: a measure computed on its own)."""
    out: list[Family] = []
    for label, measure in zip(labels, measures):
        if out and out[-1][2] is not None and out[-1][0].same_family(measure):
            first, names, ks = out[-1]
            out[-1] = (first, (*names, label), (*ks, measure.k))  # type: ignore[misc]
        elif measure.many is not None and measure.k is not None:
            out.append((measure, (label,), (measure.k,)))
        else:
            out.append((measure, (label,), None))
    return out


def _row(case: Case, trace: Trace | None, plan: Sequence[Family]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "case_id": case.case_id,
        "question_type": case.question_type,
        "dataset": case.dataset,
    }
    for measure, names, ks in plan:
        if ks is None:
            row[names[0]] = measure.compute(case, trace)
        else:
            row.update(zip(names, measure.compute_many(case, trace, ks)))
    row["stop_reason"] = None if trace is None else trace.stop_reason
    row["missing_trace"] = trace is None
    return row


def _aggregate_rows(rows: Sequence[dict[str, Any]], measures: Sequence[Measure]) -> dict[str, Any]:
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
