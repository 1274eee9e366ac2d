"""The per-case part of the chain evaluation: the chain measures, the measures named in the
registry, and the scoring of a batch of cases against their traces, so that an executor
(:mod:`hoprag.executors`) can score batches on workers.

:func:`hoprag.evaluation.chain_eval.evaluate_chains` pairs traces with cases, cuts the cases into
:class:`CaseBatch` es, maps :func:`score_batch` over them with the state :class:`ChainScoring`
builds once per worker, and computes every aggregate, group, failure count and stopping summary
from the rows it gets back in the cases' order. A row depends on its case and its traces only, so
the rows are the same however the cases are batched and wherever the batches run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.errors import ConfigError
from hoprag.evaluation.attribution import Judge, TokenContainmentJudge, claim_recall
from hoprag.evaluation.failures import Diagnosis, diagnose
from hoprag.evaluation.measures.cases import Measure, default_measures, document_measure
from hoprag.evaluation.measures.registry import parse_measure
from hoprag.evaluation.memo import evaluation_memo
from hoprag.evaluation.paths import Hop2Recall, Hop3Recall, PathPrecision, has_layer, layer_recall
from hoprag.evaluation.stopping import trace_profile
from hoprag.evaluation.support import AllPassages, PassageRecall, SupportEM, SupportF1
from hoprag.records import Trace

__all__ = [
    "LAYERS",
    "CaseBatch",
    "ChainScoring",
    "ClaimRecall",
    "ScoredCase",
    "ScoringState",
    "add_conditional",
    "case_batches",
    "chain_measures",
    "conditional_measures",
    "measure_rows",
    "named_measure",
    "score_batch",
    "scored_measures",
]

LAYERS = (2, 3)
#: the most cases a batch holds: enough work per task to hide a worker's round trip, small enough
#: that the batches spread over the workers
MAX_BATCH = 500
#: batches per worker, so a slow batch does not leave the other workers idle at the end
BATCHES_PER_WORKER = 4


def _explanatory(case: Case) -> bool:
    return case.answer_type == "explanatory" and bool(case.reference_claims)


ClaimRecall = Measure("claim_recall", claim_recall, applies=_explanatory)


def chain_measures(ks: Iterable[int] = (2, 5, 10), judge: Judge | None = None) -> list[Measure]:
    """The v0 measures, then path precision and hop-2/3 recall at every k, then attribution."""
    ks = list(dict.fromkeys(ks))
    judge = judge or TokenContainmentJudge()

    def support(case: Case, trace: Trace, k: int | None = None) -> float | None:
        from hoprag.evaluation.attribution import attribute

        if trace.answer.abstained:
            return None
        return attribute(case, trace, judge).citation_support

    citation = Measure("citation_support", support, default=None)
    extra = [m.at(k) for m in (PathPrecision, Hop2Recall, Hop3Recall, PassageRecall, AllPassages) for k in ks]
    return default_measures(ks) + extra + [citation, ClaimRecall, SupportEM, SupportF1]


def named_measure(name: str, judge: Judge | None = None) -> Measure:
    """The measure a registered name means (``"P@5"``, ``"chain_coverage@7"``, ``"sp_f1"``)."""
    spec = parse_measure(name)
    if spec.definition.kind == "document":
        return document_measure(spec)
    for measure in chain_measures((spec.k or 1,), judge):
        if measure.name == spec.family:
            return measure if spec.k is None else measure.at(spec.k)
    raise ConfigError(f"measure '{name}' is computed from an oracle-hop run only. Fix: pass --oracle TRACES "
                      "instead of naming it")


def scored_measures(ks: Sequence[int], judge: Judge | None, measures: Sequence[Measure | str] | None = None,
                    extra: Sequence[str] = ()) -> list[Measure]:
    """``measures`` (default: :func:`chain_measures`), names resolved, then ``extra`` names not already in."""
    chosen = chain_measures(ks, judge) if measures is None else [
        m if isinstance(m, Measure) else named_measure(m, judge) for m in measures]
    labels = {str(m) for m in chosen}
    for name in extra:
        measure = named_measure(name, judge)
        if str(measure) not in labels:
            chosen.append(measure)
            labels.add(str(measure))
    return chosen


def conditional_measures(ks: Sequence[int]) -> list[Measure]:
    """The conditional and gap hop-recall columns (filled by :func:`add_conditional`), for the aggregates."""
    out: list[Measure] = []
    for layer in LAYERS:
        for prefix in ("cond_hop", "gap_hop"):
            for k in ks:
                out.append(Measure(f"{prefix}{layer}_recall", lambda c, t, k: None, k=k, default=None))
    return out


def add_conditional(case: Case, row: dict[str, Any], oracle: Trace | None, ks: Sequence[int]) -> None:
    """Add ``cond_hop{L}_recall@k`` (the oracle run's recall) and ``gap_hop{L}_recall@k`` to ``row``."""
    for layer in LAYERS:
        for k in ks:
            free = row.get(f"hop{layer}_recall@{k}")
            cond = None
            if has_layer(case, layer):
                cond = 0.0 if oracle is None else layer_recall(case, oracle, k, layer=layer)
            row[f"cond_hop{layer}_recall@{k}"] = cond
            row[f"gap_hop{layer}_recall@{k}"] = None if cond is None or free is None else cond - free


@dataclass(frozen=True)
class CaseBatch:
    """Cases to score, each with its trace and (with an oracle run) its oracle trace, or ``None``."""

    cases: tuple[Case, ...]
    traces: tuple[Trace | None, ...]
    oracle: tuple[Trace | None, ...] | None = None


@dataclass(frozen=True)
class ScoredCase:
    """One case's row, its earliest failure, and its trace's profile (``None`` without a trace)."""

    row: dict[str, Any]
    diagnosis: Diagnosis
    profile: dict[str, Any] | None


@dataclass(frozen=True)
class ChainScoring:
    """What scoring needs besides the batch (picklable: the executor sends it to each worker);
    calling it builds the measures, once per worker."""

    ks: tuple[int, ...]
    judge: Judge
    corpus_ids: frozenset[str] | None = None
    context_k: int | None = None
    #: the measures to score (:func:`scored_measures`; default: :func:`chain_measures`), and names added
    measures: tuple[Measure | str, ...] | None = None
    extra: tuple[str, ...] = ()
    #: the fields the trace set lacks (:func:`hoprag.evaluation.failures.missing_fields`)
    missing: frozenset[str] = frozenset()

    def __call__(self) -> ScoringState:
        return ScoringState(self, tuple(scored_measures(self.ks, self.judge, self.measures, self.extra)))


@dataclass(frozen=True)
class ScoringState:
    """A worker's scoring state: the scoring options and the measures built from them."""

    scoring: ChainScoring
    measures: tuple[Measure, ...]


def score_batch(scorer: ScoringState, batch: CaseBatch) -> list[ScoredCase]:
    """Every case of ``batch`` scored: measures, earliest failure, trace profile, conditional recall."""
    config = scorer.scoring
    with evaluation_memo():
        rows = measure_rows(batch.cases, batch.traces, scorer.measures)
        out: list[ScoredCase] = []
        for index, (case, row) in enumerate(zip(batch.cases, rows)):
            trace = batch.traces[index]
            diagnosis = diagnose(case, trace, corpus_ids=config.corpus_ids, context_k=config.context_k, judge=config.judge,
                                 missing=config.missing)
            if "citations" in config.missing and "citation_support" in row:
                row["citation_support"] = None  # nothing cites: not applicable, never a 0 for "no citation"
            row.update(template=case.split_keys.template, uncertain=case.uncertain)
            row.update(passed=diagnosis.passed, failure=diagnosis.failure, failure_layer=diagnosis.layer,
                       failure_detail=diagnosis.detail)
            profile = None
            if trace is not None:
                profile = trace_profile(case, trace, config.context_k)
                row.update(fallback=profile["fallback"], timeout=profile["timeout"], retries=profile["retries"])
            else:
                row.update(fallback=None, timeout=None, retries=None)
            if batch.oracle is not None:
                add_conditional(case, row, batch.oracle[index], config.ks)
            out.append(ScoredCase(row, diagnosis, profile))
    return out


Family = tuple[Measure, tuple[str, ...], tuple[int, ...] | None]


def _families(measures: Sequence[Measure]) -> list[Family]:
    """The measures in order, consecutive cutoffs of one measure with ``many`` joined into one family
    ``(measure, labels, cutoffs)`` (cutoffs ``None``: a measure computed on its own)."""
    out: list[Family] = []
    for measure in measures:
        label = str(measure)
        if out and out[-1][2] is not None and out[-1][0].same_family(measure):
            first, names, ks = out[-1]
            out[-1] = (first, (*names, label), (*ks, measure.k))  # type: ignore[misc]
        elif measure.many is not None and measure.k is not None:
            out.append((measure, (label,), (measure.k,)))
        else:
            out.append((measure, (label,), None))
    return out


def hop_count(case: Case) -> int | None:
    """Facts in the case's shortest valid chain (MuSiQue's '3hop1' is 3); None for a case without chains."""
    return min((len(chain) for chain in case.valid_chains), default=None)


def answer_kind(case: Case) -> str:
    """The kind of answer the question asks for (person, date, place, number, yes/no, ...), read from the
    question as the offline answerer reads it; ``explanatory`` for an explanatory case."""
    from hoprag.pipeline.answer_types import question_kind

    return "explanatory" if case.answer_type == "explanatory" else question_kind(case.query)


def measure_rows(cases: Sequence[Case], traces: Sequence[Trace | None],
                 measures: Sequence[Measure]) -> list[dict[str, Any]]:
    """One row per case (its trace, or ``None``): ids, every measure's value, stop reason, missing."""
    plan = _families(measures)
    rows = []
    for case, trace in zip(cases, traces):
        row: dict[str, Any] = {"case_id": case.case_id, "question_type": case.question_type, "dataset": case.dataset,
                               "chain_hops": hop_count(case), "answer_kind": answer_kind(case)}
        for measure, names, ks in plan:
            if ks is None:
                row[names[0]] = measure.compute(case, trace)
            else:
                row.update(zip(names, measure.compute_many(case, trace, ks)))
        row["stop_reason"] = None if trace is None else trace.stop_reason
        row["missing_trace"] = trace is None
        rows.append(row)
    return rows


def case_batches(
    cases: Sequence[Case],
    by_case: Mapping[str, Trace],
    oracle: Mapping[str, Trace] | None,
    *,
    workers: int = 1,
    size: int | None = None,
) -> list[CaseBatch]:
    """``cases`` in order, cut into batches of ``size`` (default: one batch for one worker, else
    about :data:`BATCHES_PER_WORKER` per worker, at most :data:`MAX_BATCH` cases each)."""
    if not cases:
        return []
    if size is None:
        size = len(cases) if workers <= 1 else min(MAX_BATCH, math.ceil(len(cases) / (BATCHES_PER_WORKER * workers)))
    size = max(1, size)
    out = []
    for start in range(0, len(cases), size):
        part = tuple(cases[start:start + size])
        out.append(CaseBatch(
            cases=part,
            traces=tuple(by_case.get(c.case_id) for c in part),
            oracle=None if oracle is None else tuple(oracle.get(c.case_id) for c in part),
        ))
    return out
