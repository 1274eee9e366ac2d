"""Path precision and free-running hop-k recall, with hop = graph layer.

``path_precision@k`` (share of selected evidence that participates in some valid chain)::

    E_k = trace.evidence[:k]
    path_precision@k = |{e in E_k : e is relevant to some fact of some valid chain}| / |E_k|

``0`` when ``E_k`` is empty (nothing selected earns no precision); ``None`` when the case has no
chain. Relevance is per item (:func:`hoprag.evaluation.graph.item_relevant`). Adding an irrelevant
item can never raise it; duplicate entries each count.

``hop{L}_recall@k`` (free-running recall at graph layer ``L``, from the system's own prior state)::

    H_k = the first k hits (by rank) of *every* step, at any call position
    F_L(chain) = {f in chain : layer(f) == L}
    hop{L}_recall@k = max over chains with F_L(chain) != {} of |F_L(chain) & covered(H_k)| / |F_L(chain)|

``None`` when no chain has a fact at layer ``L``. A single-shot system that finds a layer-2 fact in
its one call gets credit for it: layers are not call order. *Conditional* recall is the same
formula over an oracle-hop trace (the gold layer-1 evidence supplied, later retrieval unchanged);
:mod:`hoprag.evaluation.chain_eval` pairs the two and reports the gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from hoprag.datasets.schema import Case
from hoprag.evaluation.graph import chain_fact_ids, chain_layers, fact_layers, item_relevant, step_cover
from hoprag.evaluation.hops import recall_many
from hoprag.evaluation.matching import covered_within
from hoprag.evaluation.measures.cases import Measure
from hoprag.evaluation.memo import memoized
from hoprag.records import Trace


def _require_k(k: int | None, name: str) -> int:
    if k is None or k < 1:
        raise ValueError(f"{name} needs a cutoff k >= 1, got {k!r}")
    return k


def path_precision(case: Case, trace: Trace, k: int | None) -> float | None:
    """Share of the first k evidence entries that are relevant to a fact of some valid chain."""
    k = _require_k(k, "path_precision")
    if not case.valid_chains:
        return None
    selected = trace.evidence[:k]
    if not selected:
        return 0.0
    return sum(_relevant_evidence(case, trace)[:k]) / len(selected)


def path_precision_many(case: Case, trace: Trace, ks: Sequence[int]) -> list[float | None]:
    """:func:`path_precision` at each k of ``ks``."""
    if not case.valid_chains:
        return [None] * len(ks)
    relevant = _relevant_evidence(case, trace)
    count = len(trace.evidence)
    return [sum(relevant[:k]) / min(k, count) if min(k, count) else 0.0 for k in ks]


def _relevant_evidence(case: Case, trace: Trace) -> list[bool]:
    """Per evidence entry, whether it is relevant to a chain fact (once per case and trace)."""

    def compute() -> list[bool]:
        facts = chain_fact_ids(case)
        return [item_relevant(case, e, facts) for e in trace.evidence]

    return memoized("relevant_evidence", (case, trace), compute)


def layer_sets(case: Case, layer: int) -> list[set[str]]:
    """Per valid chain, its facts at ``layer`` (chains without one are left out); shared within an
    evaluation, so callers must not mutate it."""

    def compute() -> list[set[str]]:
        layers = fact_layers(case)
        found = [chain_layers(case, chain, layers).get(layer, set()) for chain in case.valid_chains]
        return [s for s in found if s]

    return memoized(f"layer_sets:{layer}", (case,), compute)


def layer_recall(case: Case, trace: Trace, k: int | None, *, layer: int) -> float | None:
    """Best share, over chains, of the chain's layer-``layer`` facts among every step's top-k hits."""
    k = _require_k(k, f"hop{layer}_recall")
    targets = layer_sets(case, layer)
    if not targets:
        return None
    covered = covered_within(step_cover(case, trace), k)  # the facts step_candidates(trace, k) cover
    return max(len(s & covered) / len(s) for s in targets)


def layer_recall_many(case: Case, trace: Trace, ks: Sequence[int], *, layer: int) -> list[float | None]:
    """:func:`layer_recall` at each k of ``ks``."""
    return recall_many(layer_sets(case, layer), step_cover(case, trace), ks)


def has_layer(case: Case, layer: int) -> bool:
    return bool(layer_sets(case, layer))


def _has_chains(case: Case) -> bool:
    return bool(case.valid_chains)


PathPrecision = Measure("path_precision", path_precision, applies=_has_chains, many=path_precision_many)


def hop_recall_measure(layer: int) -> Measure:
    """``hop{layer}_recall`` (free-running, graph layer) as a :class:`Measure`; layer >= 2."""
    if layer < 2:
        raise ValueError("layer-1 recall is hop1_recall (initial candidates); use layer >= 2")
    return Measure(
        f"hop{layer}_recall",
        partial(layer_recall, layer=layer),
        applies=partial(has_layer, layer=layer),
        many=partial(layer_recall_many, layer=layer),
    )


Hop2Recall = hop_recall_measure(2)
Hop3Recall = hop_recall_measure(3)
