"""Per-case measures: a registered definition bound to the code that scores one case.

A :class:`Measure` names a pure function ``fn(case, trace, k) -> float | None`` with its cutoff
and its *default*: the score a case gets when no trace answers it (ir_measures' convention, so a
missing trace can only lower a mean, never vanish from it). ``applies(case)`` says whether the
measure means anything for a case at all; when it does not, the value is ``None`` (N/A) whether
or not a trace exists, and the case is left out of that measure's mean. Names, cut-offs and
defaults are those of :mod:`hoprag.evaluation.measures.registry` (a test holds them equal).

Each formula is in the docstring of the function the measure points to:
:mod:`hoprag.evaluation.hops` (chain coverage, hop-1 recall, hop statistics),
:mod:`hoprag.evaluation.answers` (EM, F1) and :mod:`hoprag.evaluation.latency`. A document-level
measure (:func:`document_measure`) scores the case as one TREC query: its qrels and its trace's run
(:mod:`hoprag.evaluation.qrels`) through :mod:`hoprag.evaluation.measures.documents`; it does not
apply to a case with no relevant document.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from hoprag.datasets.schema import Case
from hoprag.evaluation import answers, hops, latency
from hoprag.evaluation.measures.documents import RankingArrays, measure_values
from hoprag.evaluation.measures.registry import MeasureSpec, definition
from hoprag.evaluation.memo import memoized
from hoprag.evaluation.qrels import case_qrels, trace_run
from hoprag.records import Trace

MeasureFn = Callable[[Case, Trace, int | None], float | None]
ManyFn = Callable[[Case, Trace, Sequence[int]], list[float | None]]
_PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d+)?|100)$")


def _always(case: Case) -> bool:
    return True


@dataclass(frozen=True)
class Measure:
    """A named measure, optionally at cutoff ``k``; ``str(m)`` is e.g. ``"chain_coverage@5"``.

    ``summaries`` say how the runner aggregates the per-case values: ``"mean"`` gives the key
    ``name``, ``"p95"`` gives ``name_p95`` (linear-interpolation percentile).

    ``many`` (optional, cutoff measures) gives the values at several cutoffs in one call:
    ``many(case, trace, ks) == [fn(case, trace, k) for k in ks]``. A runner scoring the same measure
    at several cutoffs calls it once per case instead of once per cutoff (coverage at k is a
    comparison of positions derived once); ``fn`` stays the definition, and tests hold the two equal.
    """

    name: str
    fn: MeasureFn
    k: int | None = None
    default: float | None = 0.0
    applies: Callable[[Case], bool] = _always
    summaries: tuple[str, ...] = ("mean",)
    many: ManyFn | None = None

    def __post_init__(self) -> None:
        if self.k is not None and self.k < 1:
            raise ValueError(f"measure {self.name!r}: cutoff k must be >= 1, got {self.k}")
        for summary in self.summaries:
            if summary != "mean" and not _PERCENTILE.match(summary):
                raise ValueError(
                    f"measure {self.name!r}: unknown summary {summary!r}; use 'mean' or 'pNN' (e.g. 'p95')"
                )

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def label(self) -> str:
        return str(self)

    def at(self, k: int) -> Measure:
        """The same measure at another cutoff."""
        return replace(self, k=k)

    def __matmul__(self, k: int) -> Measure:
        return self.at(k)

    def compute(self, case: Case, trace: Trace | None) -> float | None:
        """The case's value: ``None`` if not applicable, ``default`` if no trace, else ``fn``."""
        if not self.applies(case):
            return None
        if trace is None:
            return self.default
        return self.fn(case, trace, self.k)

    def compute_many(self, case: Case, trace: Trace | None, ks: Sequence[int]) -> list[float | None]:
        """:meth:`compute` at each cutoff of ``ks`` (one call of ``many`` when the measure has it)."""
        if not self.applies(case):
            return [None] * len(ks)
        if trace is None:
            return [self.default] * len(ks)
        if self.many is None:
            return [self.fn(case, trace, k) for k in ks]
        return self.many(case, trace, ks)

    def same_family(self, other: Measure) -> bool:
        """Whether ``other`` is this measure at another cutoff, computable in one ``many`` call with it."""
        return (self.many is not None and other.many is self.many and self.k is not None and other.k is not None
                and other.name == self.name and other.applies is self.applies and other.default == self.default)


ChainCoverage = Measure("chain_coverage", hops.chain_coverage, applies=hops.has_chains, many=hops.chain_coverage_many)
Hop1Recall = Measure("hop1_recall", hops.hop1_recall, applies=hops.has_starting_facts, many=hops.hop1_recall_many)
AnswerEM = Measure("answer_em", answers.answer_em, applies=answers.answer_applies)
AnswerF1 = Measure("answer_f1", answers.answer_f1, applies=answers.answer_applies)
LatencyMs = Measure("latency_ms", latency.trace_latency_ms, default=None, summaries=("p50", "p95"))
Hops = Measure("hops", hops.max_hop, default=None)
Steps = Measure("steps", hops.step_count, default=None)
EvidenceCount = Measure("evidence_count", hops.evidence_count, default=None)

CUTOFF_MEASURES = (ChainCoverage, Hop1Recall)
PLAIN_MEASURES = (AnswerEM, AnswerF1, LatencyMs, Hops, Steps, EvidenceCount)


def default_measures(ks: Iterable[int] = (2, 5, 10)) -> list[Measure]:
    """Every cutoff measure at each k (in the order given), then the cutoff-free ones."""
    ks = list(dict.fromkeys(ks))
    if not ks:
        raise ValueError("ks is empty; pass at least one cutoff, e.g. ks=(2, 5, 10)")
    return [m.at(k) for m in CUTOFF_MEASURES for k in ks] + list(PLAIN_MEASURES)


def has_relevant_document(case: Case) -> bool:
    """Whether the case is a query of the qrels (:func:`hoprag.evaluation.qrels.case_qrels`)."""
    return bool(memoized("case_qrels", (case,), lambda: case_qrels(case)))


@dataclass(frozen=True)
class DocumentScore:
    """``fn`` of a document-level measure: the case as one query, its trace's evidence as the run."""

    family: str

    def __call__(self, case: Case, trace: Trace, k: int | None) -> float | None:
        def arrays() -> RankingArrays:
            qrels = memoized("case_qrels", (case,), lambda: case_qrels(case))
            return RankingArrays({case.case_id: qrels}, {case.case_id: trace_run(trace)}, include_missing=True)

        return float(measure_values(memoized("ranking_arrays", (case, trace), arrays), MeasureSpec(self.family, k))[0])


def document_measure(spec: MeasureSpec) -> Measure:
    """The per-case :class:`Measure` of a registered document-level measure (``P@5``, ``RR``, ...)."""
    found = definition(spec.family)
    if found.kind != "document":
        raise ValueError(f"{spec} is a {found.kind} measure, not a document-level one")
    return Measure(found.name, DocumentScore(found.name), k=spec.k, default=found.default,
                   applies=has_relevant_document)
