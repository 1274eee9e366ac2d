"""The graph hop: personalised PageRank over the index's entity graph, between retrieval hops.

The walk runs on one graph whose nodes are the entities and the chunks of the index
(:mod:`hoprag.index.entity_graph`): an entity is joined to every chunk that mentions it, and two
chunks are joined through the rare entities they share. With ``A`` that weighted adjacency and
``P = D⁻¹A`` its row-normalised transition matrix (a node without edges keeps no mass), the scores
are the fixed point of

    r = (1 − α) · s + α · Pᵀ r

found by power iteration from ``r = s`` (at most ``iterations`` rounds, stopping once the L1 change
is below ``tolerance``; deterministic). ``s`` is the personalisation: half on the entities the
question names (each weighted by its specificity, 1 / the number of chunks holding it, as
HippoRAG weights its seed phrases), half on the chunks the engine already holds (hop-1 chunks
by their retrieval score). Mass flows from what the question and the first hop name to the
passages that share their rarest names, which is where the next hop's evidence usually is.

The hop proposes the best-scoring chunks not yet held, each with the held chunk it links to most
strongly (the chain it would extend); the trace records the seeds, the top entities and chunks with
their scores, and what was proposed.

The clearance holds: a :class:`GraphHop` is built over the caller's visible chunks only. Hidden
chunks and the entities that only hidden chunks mention are cut out of the walk before it runs, so
no score, seed or proposal ever derives from a document above the clearance.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from hoprag.index.entity_graph import EntityGraph
from hoprag.pipeline.chains import Branch
from hoprag.records import Hit, HopStep

__all__ = ["GraphHop", "GraphProposal", "graph_branches", "held_weights", "personalized_pagerank", "transition_matrix"]

DAMPING = 0.5
ITERATIONS = 30
TOLERANCE = 1e-6
#: share of the personalisation put on the question's entities (the rest on held chunks)
ENTITY_SHARE = 0.5
#: a graph proposal's ``s(c)`` in chain ordering: its PageRank over the step's best, times this
PROPOSAL_WEIGHT = 1.0


def transition_matrix(adjacency):
    """``Pᵀ`` for a non-negative square sparse adjacency: rows of ``A`` divided by their sums, transposed
    (CSR). A row that sums to zero (a node without edges) stays zero."""
    from scipy import sparse

    adjacency = sparse.csr_matrix(adjacency, dtype=np.float64)
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    return (sparse.diags(inverse) @ adjacency).T.tocsr()


def personalized_pagerank(
    transition_t, seed: np.ndarray, *, damping: float = DAMPING, iterations: int = ITERATIONS, tolerance: float = TOLERANCE
) -> np.ndarray:
    """Power iteration for ``r = (1 − damping)·seed + damping·Pᵀr`` (``transition_t`` is ``Pᵀ``)."""
    seed = np.asarray(seed, dtype=np.float64)
    teleport = (1.0 - damping) * seed
    scores = seed.copy()
    for _ in range(iterations):
        following = teleport + damping * (transition_t @ scores)
        change = float(np.abs(following - scores).sum())
        scores = following
        if change < tolerance:
            break
    return scores


@dataclass(frozen=True)
class GraphProposal:
    """One graph hop: its seeds, the best nodes with their scores, and the chunks it proposes.

    ``proposed`` pairs each proposed chunk id with its score and ``parents`` names, per proposed chunk,
    the held chunk it links to most strongly (empty when it links to none directly)."""

    seed_entities: tuple[tuple[str, float], ...]
    seed_chunks: tuple[tuple[str, float], ...]
    top_entities: tuple[tuple[str, float], ...]
    ranked: tuple[tuple[str, float], ...]
    proposed: tuple[tuple[str, float], ...]
    parents: Mapping[str, str]

    def summary(self) -> dict:
        """What the trace records of the graph hop (scores rounded)."""
        def rounded(pairs):
            return [[name, round(score, 6)] for name, score in pairs]

        return {
            "graph": "ppr",
            "seed_entities": rounded(self.seed_entities),
            "seed_chunks": rounded(self.seed_chunks),
            "top_entities": rounded(self.top_entities),
            "proposed": [c for c, _ in self.proposed],
            "parents": dict(self.parents),
        }


class GraphHop:
    """Personalised PageRank over the part of an entity graph a caller may see."""

    name = "ppr"

    def __init__(
        self,
        graph: EntityGraph,
        visible: Collection[str] | None = None,
        *,
        damping: float = DAMPING,
        iterations: int = ITERATIONS,
        tolerance: float = TOLERANCE,
        link_weight: float = 1.0,
    ) -> None:
        """``visible`` holds the chunk ids the caller may see (``None``: all of them)."""
        from scipy import sparse

        self.graph = graph
        self.damping, self.iterations, self.tolerance = damping, iterations, tolerance
        n_entities, n_chunks = graph.entity_chunk.shape
        mask = np.ones(n_chunks, dtype=bool)
        if visible is not None:
            mask[:] = False
            index = graph.chunk_index
            for chunk_id in visible:
                position = index.get(chunk_id)
                if position is not None:
                    mask[position] = True
        self.chunk_visible = mask
        keep = sparse.diags(mask.astype(np.float64))
        mentions = sparse.csr_matrix(graph.entity_chunk, dtype=np.float64) @ keep
        mentions.eliminate_zeros()
        links = keep @ sparse.csr_matrix(graph.chunk_chunk, dtype=np.float64) @ keep
        links.eliminate_zeros()
        #: chunks per entity among the visible ones; an entity with none is out of the walk entirely
        self.frequency = np.diff(mentions.indptr).astype(np.float64)
        adjacency = sparse.bmat([[None, mentions], [mentions.T, link_weight * links]], format="csr")
        shape = (n_entities + n_chunks, n_entities + n_chunks)
        if adjacency.shape != shape:  # bmat drops nothing, but an empty block could confuse it
            adjacency = sparse.csr_matrix(adjacency, shape=shape)
        self.transition_t = transition_matrix(adjacency)
        self.mentions_csc = mentions.tocsc()
        self.mentions = mentions
        self.n_entities = n_entities

    def propose(self, question: str, held: Mapping[str, float], *, limit: int = 2, top: int = 10) -> GraphProposal | None:
        """Run the walk seeded from ``question``'s entities and the ``held`` chunks (id → weight) and
        propose up to ``limit`` chunks not held; ``None`` when nothing seeds the walk."""
        graph = self.graph
        seed = np.zeros(self.transition_t.shape[0], dtype=np.float64)
        entity_rows = [row for row in graph.question_entities(question) if self.frequency[row] > 0]
        entity_weights = {row: 1.0 / self.frequency[row] for row in entity_rows}
        chunk_rows: dict[int, float] = {}
        for chunk_id, weight in held.items():
            position = graph.chunk_index.get(chunk_id)
            if position is not None and self.chunk_visible[position] and weight > 0:
                chunk_rows[position] = chunk_rows.get(position, 0.0) + float(weight)
        if not entity_weights and not chunk_rows:
            return None
        entity_share = ENTITY_SHARE if entity_weights and chunk_rows else (1.0 if entity_weights else 0.0)
        total_e = sum(entity_weights.values()) or 1.0
        total_c = sum(chunk_rows.values()) or 1.0
        for row, weight in entity_weights.items():
            seed[row] += entity_share * weight / total_e
        for position, weight in chunk_rows.items():
            seed[self.n_entities + position] += (1.0 - entity_share) * weight / total_c
        scores = personalized_pagerank(
            self.transition_t, seed, damping=self.damping, iterations=self.iterations, tolerance=self.tolerance
        )
        entity_scores = scores[: self.n_entities]
        chunk_scores = np.where(self.chunk_visible, scores[self.n_entities :], 0.0)
        ranked = _top(chunk_scores, top)
        held_positions = set(chunk_rows)
        fresh = [p for p in _top(np.where(_mask_out(len(chunk_scores), held_positions), chunk_scores, 0.0), limit)]
        proposed = tuple((graph.chunk_ids[p], float(chunk_scores[p])) for p in fresh)
        parents = {graph.chunk_ids[p]: graph.chunk_ids[q] for p in fresh if (q := self._parent(p, chunk_rows)) is not None}
        return GraphProposal(
            seed_entities=tuple((graph.keys[r], seed[r]) for r in sorted(entity_weights, key=lambda r: (-seed[r], r))),
            seed_chunks=tuple((graph.chunk_ids[p], seed[self.n_entities + p]) for p in sorted(chunk_rows)),
            top_entities=tuple((graph.keys[r], float(entity_scores[r])) for r in _top(entity_scores, top)),
            ranked=tuple((graph.chunk_ids[p], float(chunk_scores[p])) for p in ranked),
            proposed=proposed,
            parents=parents,
        )

    def _parent(self, position: int, held: Mapping[int, float]) -> int | None:
        """The held chunk sharing the most specific entities with chunk ``position`` (ties: the heavier
        seed, then index order)."""
        column = self.mentions_csc
        entities = column.indices[column.indptr[position] : column.indptr[position + 1]]
        best: tuple[float, float, int] | None = None
        for q, weight in held.items():
            row_start, row_end = column.indptr[q], column.indptr[q + 1]
            shared = np.intersect1d(entities, column.indices[row_start:row_end], assume_unique=True)
            if not len(shared):
                continue
            strength = float(np.sum(1.0 / self.frequency[shared]))
            candidate = (strength, weight, -q)
            if best is None or candidate > best:
                best = candidate
        return None if best is None else -best[2]


def _mask_out(n: int, positions: Collection[int]) -> np.ndarray:
    mask = np.ones(n, dtype=bool)
    if positions:
        mask[list(positions)] = False
    return mask


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Positions of the ``k`` largest positive scores, best first (ties: lower position first)."""
    positive = np.flatnonzero(scores > 0)
    if not len(positive) or k <= 0:
        return []
    if len(positive) > 4 * k:  # keep every score tied with the k-th, so ties still break by position
        kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]
        positive = positive[scores[positive] >= kth]
    order = np.lexsort((positive, -scores[positive]))
    return [int(p) for p in positive[order[:k]]]


def held_weights(first_hop: Sequence[tuple[str, float]], later: Sequence[str]) -> dict[str, float]:
    """Seed weights of held chunks: hop-1 chunks by their score over the best, later ones at half."""
    best = max((s for _, s in first_hop), default=0.0) or 1.0
    weights = {c: max(s, 0.0) / best for c, s in first_hop}
    for chunk_id in later:
        weights.setdefault(chunk_id, 0.5)
    return weights


def graph_branches(steps: Sequence[HopStep], held: Collection[str]) -> list[Branch]:
    """The graph hops of a trace as chain-ordering branches: each held proposal under the held chunk it
    links to most strongly, its score over the best of its step (PageRank is on its own scale)."""
    out: list[Branch] = []
    for step in steps:
        if step.bridge.get("graph") != "ppr" or not step.hits:
            continue
        parents = step.bridge.get("parents") or {}
        best = max(h.score for h in step.hits) or 1.0
        by_parent: dict[str, list[Hit]] = {}
        for hit in step.hits:
            parent = parents.get(hit.chunk_id)
            if parent and parent in held and hit.chunk_id in held:
                by_parent.setdefault(parent, []).append(replace(hit, score=PROPOSAL_WEIGHT * hit.score / best))
        out.extend(Branch(parent=p, hits=hits, normalised=True) for p, hits in by_parent.items())
    return out
