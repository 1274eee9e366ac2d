"""The evaluation: every metric, earliest failures, stopping, conditional recall.

:func:`evaluate_chains` is the one evaluate path: ``hoprag eval``, the demo, ``compare``, ``release``,
``ablate`` and the service call it, and :func:`hoprag.evaluation.runner.evaluate` is a thin call of it.
Its aggregate holds ``chain_coverage@k``, ``hop1_recall@k``, ``answer_em``, ``answer_f1``,
``latency_ms_p50/p95`` and the trace statistics (:mod:`hoprag.evaluation.measures.cases`), and

- ``path_precision@k``, free-running ``hop2_recall@k`` / ``hop3_recall@k`` (graph layers),
  ``citation_support`` and ``claim_recall`` (explanatory cases) as measures;
- supporting-passage ``passage_recall@k`` / ``all_passages@k`` and supporting-fact ``sp_em`` /
  ``sp_f1`` (:mod:`hoprag.evaluation.support`);
- with ``oracle_traces`` (an oracle-hop run of the same cases): ``cond_hop{L}_recall@k`` per case
  and in the aggregate, and ``gap_hop{L}_recall@k = cond - free`` (positive = an upstream defect);
- the earliest failure per case and the counts per class (:mod:`hoprag.evaluation.failures`); the
  classes whose trace fields the set lacks (no bridge state, no citations) are not counted but
  listed under ``not_assessable``;
- trace profiles and their summary (:mod:`hoprag.evaluation.stopping`);
- aggregates by question type and by template; uncertain-label cases counted and listed;
- every exclusion (unknown case ids, duplicate traces, unreadable trace lines) with a reason;
- with ``extra_measures`` (``hoprag eval -m``), any other registered measure
  (:mod:`hoprag.evaluation.measures.registry`): document-level ``P@k``, ``R@k``, ``nDCG@k``, ``AP``,
  ``RR``, ``Success@k`` score each case as one TREC query of :mod:`hoprag.evaluation.qrels`, equal
  to the retrieve gate's and ``hoprag trec eval``'s values on ``hoprag trec export``'s files;
- with a label report (:mod:`hoprag.datasets.labels`), cases whose labels contradict their sources
  excluded from scoring, each listed with its problems.

Oracle traces are never scored as the system: they only feed the conditional columns.

The cases are scored in batches (:mod:`hoprag.evaluation.chain_scoring`) by an ``executor``
(:mod:`hoprag.executors`; default: one batch in this process; :class:`hoprag.forks.ProcessExecutor`
spreads them over forked processes, one per :data:`CASES_PER_PROCESS` cases at most, as ``hoprag
eval`` does); the rows come back in the cases' order and every aggregate is computed from them here,
so the report is the same on every executor.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hoprag.datasets.labels import LabelReport
from hoprag.datasets.schema import Case
from hoprag.evaluation.aggregates import aggregate_rows, group_rows
from hoprag.evaluation.attribution import Judge, TokenContainmentJudge
from hoprag.evaluation.chain_scoring import (
    LAYERS,
    ChainScoring,
    ClaimRecall,
    case_batches,
    chain_measures,
    conditional_measures,
    score_batch,
    scored_measures,
)
from hoprag.evaluation.failures import failure_counts, missing_fields, not_assessable
from hoprag.evaluation.label_match import check_traces_meet_labels
from hoprag.evaluation.graph import check_cases
from hoprag.evaluation.measures.cases import Measure
from hoprag.evaluation.memo import evaluation_memo
from hoprag.evaluation.stopping import summarize_profiles
from hoprag.cpus import available_cores
from hoprag.executors import Executor, LocalExecutor
from hoprag.forks import ProcessExecutor
from hoprag.gc_pause import collector_paused
from hoprag.records import Trace

__all__ = ["CASES_PER_PROCESS", "LAYERS", "ChainReport", "ClaimRecall", "chain_measures", "evaluate_chains"]

#: the fewest cases worth a forked scoring process (:class:`hoprag.forks.ProcessExecutor`): below it,
#: starting the process and sending the rows back cost about what the process saves
CASES_PER_PROCESS = 500


@dataclass(frozen=True)
class ChainReport:
    aggregate: dict[str, Any]
    cases: list[dict[str, Any]]
    config: dict[str, Any]
    failures: dict[str, int]
    stopping: dict[str, Any]
    groups: dict[str, dict[str, dict[str, Any]]]
    exclusions: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, Any] | None = None
    traces: dict[str, Trace] = field(default_factory=dict, repr=False)
    unknown_case_ids: tuple[str, ...] = ()
    duplicate_case_ids: tuple[str, ...] = ()
    #: failure classes the traces lack the fields for, each with those fields (not counted)
    not_assessable: dict[str, list[str]] = field(default_factory=dict)

    @property
    def has_trace_problems(self) -> bool:
        """Duplicate traces or traces for unknown case ids (``--strict`` fails on these)."""
        return bool(self.unknown_case_ids or self.duplicate_case_ids)

    def trace_warnings(self) -> list[str]:
        """One line per kind of trace that was not scored as given: duplicates, unknown case ids."""
        out = []
        if self.duplicate_case_ids:
            count = self.aggregate.get("duplicate_traces", len(self.duplicate_case_ids))
            out.append(
                f"{count} duplicate trace(s) for {len(self.duplicate_case_ids)} case(s) "
                f"({_some(self.duplicate_case_ids)}): the last trace of each case is scored, the earlier ones ignored"
            )
        if self.unknown_case_ids:
            count = self.aggregate.get("unknown_traces", len(self.unknown_case_ids))
            out.append(
                f"{count} trace(s) name case ids that are not in the cases file "
                f"({_some(self.unknown_case_ids)}): not scored"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "aggregate": dict(self.aggregate),
            "cases": [dict(r) for r in self.cases],
            "config": dict(self.config),
            "failures": dict(self.failures),
            "not_assessable": {name: list(fields) for name, fields in self.not_assessable.items()},
            "stopping": dict(self.stopping),
            "groups": self.groups,
            "exclusions": list(self.exclusions),
            **({"labels": self.labels} if self.labels is not None else {}),
        }


def _last_by_case(traces: Iterable[Trace], known: Collection[str]) -> dict[str, Trace]:
    out: dict[str, Trace] = {}
    for trace in traces:
        if trace.case_id in known:
            out[trace.case_id] = trace
    return out


def evaluate_chains(
    cases: Sequence[Case],
    traces: Iterable[Trace],
    ks: Iterable[int] = (2, 5, 10),
    *,
    oracle_traces: Iterable[Trace] | None = None,
    corpus_ids: Collection[str] | None = None,
    context_k: int | None = None,
    judge: Judge | None = None,
    dataset_version: str | None = None,
    exclusions: Sequence[dict[str, Any]] = (),
    label_report: LabelReport | None = None,
    executor: Executor | None = None,
    batch_size: int | None = None,
    cases_checked: bool = False,
    measures: Sequence[Measure | str] | None = None,
    extra_measures: Sequence[str] = (),
    lacking: Collection[str] = (),
) -> ChainReport:
    """Score ``traces`` (any pipeline) against ``cases`` with every chain metric; see the module doc.

    ``measures`` replaces the chain measures (:func:`~hoprag.evaluation.chain_scoring.chain_measures`)
    with these (a :class:`Measure` or a registered name each); ``extra_measures`` names registered
    measures scored as well (those already scored are not repeated).

    With ``label_report`` (:func:`hoprag.datasets.labels.verify_labels`), cases with a label error are
    not scored: each is listed in ``exclusions`` with its problems and counted in the aggregate.
    ``executor`` scores the cases in batches of ``batch_size`` (default: one batch per worker's share,
    see :func:`hoprag.evaluation.chain_scoring.case_batches`); the report does not depend on either.
    ``cases_checked``: the cases already passed :func:`hoprag.evaluation.graph.check_cases` (as
    ``hoprag eval`` reads them), so they are not checked again. ``lacking``: trace fields to treat as
    missing besides those the traces lack (:func:`hoprag.evaluation.failures.missing_fields`), so two
    runs compared are assessed on the same failure classes.
    """
    with evaluation_memo(), collector_paused():
        return _evaluate_chains(cases, traces, ks, oracle_traces=oracle_traces, corpus_ids=corpus_ids, context_k=context_k,
                                judge=judge, dataset_version=dataset_version, exclusions=exclusions,
                                label_report=label_report, executor=executor or LocalExecutor(), batch_size=batch_size,
                                cases_checked=cases_checked, measures=measures, extra_measures=extra_measures,
                                lacking=lacking)


def _evaluate_chains(
    cases: Sequence[Case],
    traces: Iterable[Trace],
    ks: Iterable[int],
    *,
    oracle_traces: Iterable[Trace] | None,
    corpus_ids: Collection[str] | None,
    context_k: int | None,
    judge: Judge | None,
    dataset_version: str | None,
    exclusions: Sequence[dict[str, Any]],
    label_report: LabelReport | None,
    executor: Executor,
    batch_size: int | None,
    cases_checked: bool,
    measures: Sequence[Measure | str] | None,
    extra_measures: Sequence[str],
    lacking: Collection[str],
) -> ChainReport:
    ks = tuple(dict.fromkeys(ks))
    cases, traces, label_exclusions = _drop_broken_labels(cases, traces, label_report)
    if not cases_checked:
        cases = check_cases(cases)
    traces = list(traces)
    judge = judge or TokenContainmentJudge()
    chosen = tuple(m if isinstance(m, Measure) else str(m) for m in measures) if measures is not None else None
    scored = scored_measures(ks, judge, chosen, extra_measures)  # names checked before any scoring
    labels = [str(m) for m in scored]
    if len(set(labels)) != len(labels):
        raise ValueError(f"measures have duplicate names: {labels}")
    known = {c.case_id for c in cases}
    excluded = list(exclusions) + label_exclusions
    seen: set[str] = set()
    unknown_ids: list[str] = []
    duplicate_ids: list[str] = []
    for trace in traces:
        if trace.case_id not in known:
            excluded.append({"case_id": trace.case_id, "reason": "trace for an unknown case id"})
            unknown_ids.append(trace.case_id)
        elif trace.case_id in seen:
            excluded.append({"case_id": trace.case_id, "reason": "duplicate trace (the last one is scored)"})
            duplicate_ids.append(trace.case_id)
        seen.add(trace.case_id)
    check_traces_meet_labels(cases, traces)  # a set matching no label is refused, never zeros
    by_case = _last_by_case(traces, known)
    oracle = _last_by_case(oracle_traces, known) if oracle_traces is not None else None

    # classes the traces carry no fields for are not assessed
    missing = missing_fields(by_case.values()) | frozenset(lacking)
    scoring = ChainScoring(ks, judge, corpus_ids=None if corpus_ids is None else frozenset(corpus_ids), context_k=context_k,
                           measures=chosen, extra=tuple(extra_measures), missing=missing)
    workers = executor.workers or os.cpu_count() or 1
    if isinstance(executor, ProcessExecutor):  # a fork costs more than scoring a few hundred cases
        workers = max(1, min(executor.workers or available_cores(), len(cases) // CASES_PER_PROCESS))
        executor = ProcessExecutor(workers=workers)
    batches = case_batches(cases, by_case, oracle, workers=workers, size=batch_size)
    results = [case for batch in executor.map(score_batch, batches, setup=scoring) for case in batch]
    rows = [s.row for s in results]
    diagnoses = [s.diagnosis for s in results]
    profiles = [s.profile for s in results if s.profile is not None]

    agg_measures = list(scored) + (conditional_measures(ks) if oracle is not None else [])
    aggregate = aggregate_rows(rows, agg_measures)
    aggregate["unknown_traces"] = len(unknown_ids)
    aggregate["duplicate_traces"] = len(duplicate_ids)
    aggregate["excluded_trace_lines"] = sum(1 for e in exclusions)
    aggregate["uncertain_cases"] = sum(1 for c in cases if c.uncertain)
    if label_report is not None:
        aggregate["label_excluded_cases"] = len(label_exclusions)
        kept = {c.case_id for c in cases}
        aggregate["missing_source_facts"] = sum(1 for m in label_report.missing_source_facts() if m["case_id"] in kept)
    aggregate["pass_rate"] = sum(d.passed for d in diagnoses) / len(diagnoses) if diagnoses else None
    if oracle is not None:
        aggregate["oracle_missing_traces"] = sum(1 for c in cases if c.case_id not in oracle)
    labels = [str(m) for m in agg_measures]
    config = {
        "ks": list(ks),
        "measures": labels,
        "datasets": sorted({str(c.dataset) for c in cases if c.dataset is not None}),
        "dataset_version": dataset_version,
        "context_k": context_k,
        "judge": {"model_id": judge.model_id, "prompt_version": judge.prompt_version},
        "oracle_traces": oracle is not None,
        "corpus_checked": corpus_ids is not None,
    }
    if label_report is not None:
        config["labels_checked"] = {"documents": label_report.documents, "span_match": label_report.span_match}
    config["metric_config_hash"] = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
    groups = {key: _group(rows, key, agg_measures) for key in GROUP_KEYS}
    stopping = summarize_profiles(profiles)
    stopping["uncertain_case_ids"] = [c.case_id for c in cases if c.uncertain]
    return ChainReport(
        aggregate=aggregate,
        cases=rows,
        config=config,
        failures=failure_counts(diagnoses, unassessed=not_assessable(missing)),
        stopping=stopping,
        groups=groups,
        exclusions=excluded,
        labels=label_report.to_json() if label_report is not None else None,
        traces=by_case,
        unknown_case_ids=tuple(dict.fromkeys(unknown_ids)),
        duplicate_case_ids=tuple(dict.fromkeys(duplicate_ids)),
        not_assessable=not_assessable(missing),
    )


def _some(ids: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", … and {len(ids) - limit} more" if len(ids) > limit else "")


def _drop_broken_labels(
    cases: Sequence[Case], traces: Iterable[Trace], report: LabelReport | None
) -> tuple[list[Case], list[Trace], list[dict[str, Any]]]:
    """Cases (and their traces) without label errors, and one exclusion per case with errors."""
    traces = list(traces)
    if report is None:
        return list(cases), traces, []
    problems = report.by_case()
    bad = set(report.excluded_cases)
    exclusions = []
    for case_id in report.excluded_cases:
        errors = [p for p in problems.get(case_id, []) if p.severity == "error"]
        kinds = ", ".join(dict.fromkeys(f"{p.kind} ({p.fact_id or p.field})" for p in errors))
        exclusions.append({"case_id": case_id, "reason": f"label errors, not scored: {kinds}",
                           "problems": [p.to_dict() for p in errors]})
    return [c for c in cases if c.case_id not in bad], [t for t in traces if t.case_id not in bad], exclusions


#: the slices a report is broken down by: the case's type, template and dataset, its hop count (the
#: shortest valid chain, 'chain_hops'; 'hops' is the trace's measure) and the kind of answer its question asks for
GROUP_KEYS = ("question_type", "template", "dataset", "chain_hops", "answer_kind")


def _group(rows: list[dict[str, Any]], key: str, measures: Sequence[Measure]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, members in group_rows(rows, key).items():
        agg = aggregate_rows(members, measures)
        agg["pass_rate"] = sum(1 for r in members if r["passed"]) / len(members)
        out[name] = agg
    return out
