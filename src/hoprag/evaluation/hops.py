"""Chain-level retrieval measures and per-trace hop statistics.

``chain_coverage@k`` (complete-chain coverage)::

    C_k = covered_facts(case, trace.evidence[:k])
    chain_coverage@k = 1 if any(set(chain) <= C_k for chain in case.valid_chains) else 0

Alternative chains are honoured: any one valid chain fully covered suffices. ``None`` (not
applicable) when the case has no chain.

``hop1_recall@k`` (hop-1 candidate recall)::

    H_k = union over steps s with s.hop == 1 of the first k hits of s (by rank)
    S(chain) = {f in chain : case.fact_layers()[f] == 1}           # the chain's starting facts
    hop1_recall@k = max over chains with S(chain) != {} of |S(chain) & covered(H_k)| / |S(chain)|

Parallel branches share hop 1, so each contributes its own top k. ``None`` when no chain has a
starting fact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hoprag.datasets.schema import Case
from hoprag.evaluation.graph import BY_RANK, evidence_cover, fact_layers, step_cover
from hoprag.evaluation.matching import covered_within
from hoprag.evaluation.memo import memoized
from hoprag.records import Hit, Trace


def _require_k(k: int | None, name: str) -> int:
    if k is None or k < 1:
        raise ValueError(f"{name} needs a cutoff k >= 1, got {k!r}")
    return k


def has_chains(case: Case) -> bool:
    return bool(case.valid_chains)


def starting_facts(case: Case) -> list[set[str]]:
    """Per valid chain, its facts at dependency depth 1 (chains without one are left out); shared
    within an evaluation, so callers must not mutate it."""

    def compute() -> list[set[str]]:
        layers = fact_layers(case)
        starts = [{f for f in chain if layers.get(f) == 1} for chain in case.valid_chains]
        return [s for s in starts if s]

    return memoized("starting_facts", (case,), compute)


def has_starting_facts(case: Case) -> bool:
    return bool(starting_facts(case))


def chain_coverage(case: Case, trace: Trace, k: int | None) -> float | None:
    """1.0 when the first k evidence entries cover every fact of some valid chain, else 0.0."""
    k = _require_k(k, "chain_coverage")
    if not case.valid_chains:
        return None
    covered = covered_within(evidence_cover(case, trace), k)
    return float(any(set(chain) <= covered for chain in case.valid_chains))


def chain_coverage_many(case: Case, trace: Trace, ks: Sequence[int]) -> list[float | None]:
    """:func:`chain_coverage` at each k of ``ks``: a chain is covered from the latest first-cover
    position of its facts, so the case is covered at k when the earliest-covered chain's is <= k."""
    if not case.valid_chains:
        return [None] * len(ks)
    cover = evidence_cover(case, trace)
    inf = math.inf
    need = min(max((cover.get(f, inf) for f in chain), default=0) for chain in case.valid_chains)
    return [float(need <= k) for k in ks]


def recall_many(targets: list[set[str]], cover: dict[str, int], ks: Sequence[int]) -> list[float | None]:
    """``max over targets of |target & covered_within(cover, k)| / |target|`` at each k of ``ks``."""
    if not targets:
        return [None] * len(ks)
    inf = math.inf
    positions = [[cover.get(f, inf) for f in target] for target in targets]
    return [max(sum(1 for p in found if p <= k) / len(found) for found in positions) for k in ks]


def hop1_recall_many(case: Case, trace: Trace, ks: Sequence[int]) -> list[float | None]:
    """:func:`hop1_recall` at each k of ``ks``."""
    return recall_many(starting_facts(case), step_cover(case, trace, hop=1), ks)


def hop1_candidates(trace: Trace, k: int) -> list[Hit]:
    """The first k hits (by rank, ties in stored order) of every hop-1 step, concatenated."""
    hits: list[Hit] = []
    for step in trace.steps:
        if step.hop == 1:
            hits.extend(sorted(step.hits, key=BY_RANK)[:k])
    return hits


def hop1_recall(case: Case, trace: Trace, k: int | None) -> float | None:
    """Best share, over valid chains, of the chain's starting facts found among hop-1 hits."""
    k = _require_k(k, "hop1_recall")
    starts = starting_facts(case)
    if not starts:
        return None
    covered = covered_within(step_cover(case, trace, hop=1), k)  # the facts hop1_candidates(trace, k) cover
    return max(len(s & covered) / len(s) for s in starts)


def max_hop(case: Case, trace: Trace, k: int | None = None) -> float:
    """The deepest hop the trace reached (0 when it made no retrieval call)."""
    return float(max((step.hop for step in trace.steps), default=0))


def step_count(case: Case, trace: Trace, k: int | None = None) -> float:
    return float(len(trace.steps))


def evidence_count(case: Case, trace: Trace, k: int | None = None) -> float:
    return float(len(trace.evidence))
