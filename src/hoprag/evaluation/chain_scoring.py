"""The per-case part of the chain evaluation: the chain measures, and the scoring of a batch of
cases against their traces, so that an executor (:mod:`hoprag.executors`) can score batches on
workers.

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
from hoprag.evaluation.attribution import Judge, TokenContainmentJudge, claim_recall
from hoprag.evaluation.failures import Diagnosis, diagnose
from hoprag.evaluation.measures import Measure, default_measures
from hoprag.evaluation.memo import evaluation_memo
from hoprag.evaluation.paths import Hop2Recall, Hop3Recall, PathPrecision, has_layer, layer_recall
from hoprag.evaluation.runner import evaluate
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
    "score_batch",
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

    def __call__(self) -> ScoringState:
        return ScoringState(self, tuple(chain_measures(self.ks, self.judge)))


@dataclass(frozen=True)
class ScoringState:
    """A worker's scoring state: the scoring options and the measures built from them."""

    scoring: ChainScoring
    measures: tuple[Measure, ...]


def score_batch(scorer: ScoringState, batch: CaseBatch) -> list[ScoredCase]:
    """Every case of ``batch`` scored: measures, earliest failure, trace profile, conditional recall."""
    config = scorer.scoring
    with evaluation_memo():
        present = [t for t in batch.traces if t is not None]
        base = evaluate(batch.cases, present, config.ks, measures=scorer.measures, aggregate=False)  # rows only
        out: list[ScoredCase] = []
        for index, (case, row) in enumerate(zip(batch.cases, base.cases)):
            trace = batch.traces[index]
            diagnosis = diagnose(case, trace, corpus_ids=config.corpus_ids, context_k=config.context_k, judge=config.judge)
            row = dict(row)
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
