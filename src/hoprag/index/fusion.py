"""Rank fusion of several hit lists into one.

Reciprocal-rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009)::

    rrf(d) = sum over lists L containing d of  w_L / (k + rank_L(d))

with ``k = 60`` by default and list weights ``w_L`` (1 unless given). Ties are broken by the best
single rank, then by first appearance, so fusion is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hoprag.records import Hit

RRF_K = 60


def reciprocal_rank_fusion(
    hit_lists: Sequence[Sequence[Hit]],
    *,
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
    retriever: str = "rrf",
) -> list[Hit]:
    """Fuse ranked lists by chunk id; returned hits carry the fused score and a new 1-based rank."""
    if weights is not None and len(weights) != len(hit_lists):
        raise ValueError(f"got {len(weights)} weights for {len(hit_lists)} hit lists")
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    exemplar: dict[str, Hit] = {}
    order = 0
    for list_index, hits in enumerate(hit_lists):
        weight = 1.0 if weights is None else float(weights[list_index])
        for position, hit in enumerate(hits, start=1):
            key = hit.chunk_id
            scores[key] = scores.get(key, 0.0) + weight / (k + position)
            if key not in first_seen:
                first_seen[key] = order
                exemplar[key] = hit
                best_rank[key] = position
            else:
                best_rank[key] = min(best_rank[key], position)
            order += 1
    ranked = sorted(scores, key=lambda c: (-scores[c], best_rank[c], first_seen[c]))
    if limit is not None:
        ranked = ranked[:limit]
    return [
        replace(exemplar[c], score=scores[c], rank=rank, retriever=retriever)
        for rank, c in enumerate(ranked, start=1)
    ]
