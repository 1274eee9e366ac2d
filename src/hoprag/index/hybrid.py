"""Hybrid retrieval: BM25 and dense hit lists fused into one ranking.

Each side is asked for ``depth = max(min_depth, depth_factor * k)`` hits (with the same filters,
exclusions and clearance), so a chunk ranked modestly by both can still surface in the fused top
``k``. Both sides filter by clearance before their own top-k, so fusion only ever sees allowed hits
and returns ``k`` of them whenever ``k`` exist.

``fusion="rrf"`` (default) is reciprocal-rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009),
see :mod:`hoprag.index.fusion`::

    rrf(d) = w_bm25 / (rrf_k + rank_bm25(d)) + w_dense / (rrf_k + rank_dense(d))

``fusion="weighted"`` is convex score fusion (CombSUM over min-max normalised scores, Fox and Shaw,
TREC-2 1994)::

    s(d) = w_bm25 * (b(d) - min b) / (max b - min b) + w_dense * (c(d) - min c) / (max c - min c)

over each side's fetched list; a chunk missing from a list gets 0 from it, and a list whose scores
are all equal normalises to 1. Both break ties by the best single rank, then by first appearance
(the BM25 list first), so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Literal

from hoprag.security.acl import Clearance
from hoprag.security.clearance import resolve_clearance
from hoprag.errors import ConfigError
from hoprag.index.base import Filters, Retriever
from hoprag.index.fusion import RRF_K, reciprocal_rank_fusion
from hoprag.records import Hit

__all__ = ["FUSIONS", "HybridRetriever", "weighted_fusion"]

Fusion = Literal["rrf", "weighted"]
FUSIONS: tuple[str, ...] = ("rrf", "weighted")


def weighted_fusion(
    hit_lists: Sequence[Sequence[Hit]],
    *,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
    retriever: str = "weighted",
) -> list[Hit]:
    """Fuse lists by the weighted sum of min-max normalised scores (see the module docstring)."""
    if weights is not None and len(weights) != len(hit_lists):
        raise ValueError(f"got {len(weights)} weights for {len(hit_lists)} hit lists")
    fused: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    exemplar: dict[str, Hit] = {}
    for list_index, hits in enumerate(hit_lists):
        if not hits:
            continue
        weight = 1.0 if weights is None else float(weights[list_index])
        values = [h.score for h in hits]
        low, high = min(values), max(values)
        span = high - low
        for position, hit in enumerate(hits, start=1):
            norm = (hit.score - low) / span if span > 0 else 1.0
            key = hit.chunk_id
            fused[key] = fused.get(key, 0.0) + weight * norm
            if key not in exemplar:
                exemplar[key] = hit
                best_rank[key] = position
            else:
                best_rank[key] = min(best_rank[key], position)
    first_seen = {c: i for i, c in enumerate(exemplar)}
    ranked = sorted(fused, key=lambda c: (-fused[c], best_rank[c], first_seen[c]))
    if limit is not None:
        ranked = ranked[:limit]
    return [replace(exemplar[c], score=fused[c], rank=r, retriever=retriever) for r, c in enumerate(ranked, start=1)]


class HybridRetriever:
    """BM25 + dense, fused by reciprocal rank (default) or by weighted normalised scores."""

    name = "hybrid"

    def __init__(
        self,
        sparse: Retriever,
        dense: Retriever,
        *,
        fusion: Fusion = "rrf",
        weights: tuple[float, float] = (1.0, 1.0),
        rrf_k: int = RRF_K,
        min_depth: int = 50,
        depth_factor: int = 5,
    ) -> None:
        """``weights`` are ``(bm25, dense)``; ``min_depth``/``depth_factor`` set the over-fetch."""
        if fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion '{fusion}'; valid: {', '.join(FUSIONS)}")
        if len(weights) != 2 or any(w < 0 for w in weights) or not any(w > 0 for w in weights):
            raise ConfigError(f"hybrid weights {tuple(weights)} must be two non-negative numbers, not both 0")
        if rrf_k < 1 or min_depth < 1 or depth_factor < 1:
            raise ConfigError("rrf_k, min_depth and depth_factor must be at least 1")
        self.sparse = sparse
        self.dense = dense
        self.fusion = fusion
        self.weights = (float(weights[0]), float(weights[1]))
        self.rrf_k = rrf_k
        self.min_depth = min_depth
        self.depth_factor = depth_factor

    def depth(self, k: int) -> int:
        """How many hits each side is asked for when ``k`` fused hits are wanted."""
        return max(self.min_depth, self.depth_factor * k)

    def retrieve(
        self,
        query: str,
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[Hit]:
        cleared = resolve_clearance(clearance)
        if k <= 0:
            return []
        depth = self.depth(k)
        # passed only when set, so retrievers written before clearance existed still plug in
        extra = {"clearance": cleared} if cleared is not None else {}
        lists = [
            self.sparse.retrieve(query, depth, filters=filters, exclude=exclude, **extra),
            self.dense.retrieve(query, depth, filters=filters, exclude=exclude, **extra),
        ]
        if self.fusion == "rrf":
            return reciprocal_rank_fusion(lists, k=self.rrf_k, weights=self.weights, limit=k, retriever=self.name)
        return weighted_fusion(lists, weights=self.weights, limit=k, retriever=self.name)

    def retrieve_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[list[Hit]]:
        """``retrieve`` for each query, same filters, exclusions and clearance."""
        return [self.retrieve(q, k, filters=filters, exclude=exclude, clearance=clearance) for q in queries]
