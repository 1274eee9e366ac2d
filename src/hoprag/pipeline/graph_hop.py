"""The graph hop: personalised PageRank over the index's entity graph, between retrieval hops.

The walk runs on one graph whose nodes are the entities and the chunks of the index
(:mod:`hoprag.index.entity_graph`): an entity is joined to every chunk that mentions it, and two
chunks are joined through the rare entities they share. With ``A`` that weighted adjacency and
``P = D⁻¹A`` its row-normalised transition matrix (a node without edges keeps no mass), the scores
are the fixed point of

    r = (1 − α) · s + α · Pᵀ r

approximated locally by forward push (:mod:`hoprag.pipeline.local_ppr`: residual threshold ``ε``
per unit of degree, at most ``budget`` edges read per walk, the heaviest residuals first;
deterministic), so a walk touches the seeds' neighbourhood, not the corpus, and costs at most the
budget whatever the corpus's size;
:func:`personalized_pagerank` (power iteration over the whole matrix) is kept as the reference the
tests and ``bench/graph_hop.py`` compare it with. ``s`` is the personalisation: half on the entities the
question names (each weighted by its specificity, 1 / the number of chunks holding it, as
HippoRAG weights its seed phrases), half on the chunks the engine already holds (hop-1 chunks
by their retrieval score). Mass flows from what the question and the first hop name to the
passages that share their rarest names, which is where the next hop's evidence usually is.

The hop proposes the best-scoring chunks not yet held, each with the held chunk it links to most
strongly (the chain it would extend); the trace records the seeds, the top entities and chunks with
their scores, and what was proposed.

The clearance holds: a :class:`GraphHop` is built over the caller's visible chunks only (a mask
over chunk positions). The walk never enters a hidden chunk, and an entity that only hidden chunks
mention has no visible neighbour, so it is never seeded nor reached: no score, seed or proposal
ever derives from a document above the clearance.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from hoprag.index.entity_graph import EntityGraph
from hoprag.pipeline.chains import Branch
from hoprag.pipeline.local_ppr import BUDGET, EPSILON, PushResult, PushScratch, forward_push
from hoprag.records import Hit, HopStep

__all__ = ["GraphHop", "GraphProposal", "graph_branches", "held_weights", "personalized_pagerank", "transition_matrix"]

DAMPING = 0.5
#: the reference power iteration's rounds and L1 stopping change
ITERATIONS = 30
TOLERANCE = 1e-6
#: share of the personalisation put on the question's entities (the rest on held chunks)
ENTITY_SHARE = 0.5
#: a graph proposal's ``s(c)`` in chain ordering: its PageRank over the step's best, times this
PROPOSAL_WEIGHT = 1.0


def transition_matrix(adjacency):
    """(Reference, needs scipy.) ``Pᵀ`` for a non-negative square sparse adjacency: rows of ``A`` divided by their sums, transposed
    (CSR). A row that sums to zero (a node without edges) stays zero."""
    from scipy import sparse

    adjacency = sparse.csr_matrix(adjacency, dtype=np.float64)
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    return (sparse.diags(inverse) @ adjacency).T.tocsr()


def personalized_pagerank(
    transition_t, seed: np.ndarray, *, damping: float = DAMPING, iterations: int = ITERATIONS, tolerance: float = TOLERANCE
) -> np.ndarray:
    """(Reference.) Power iteration for ``r = (1 − damping)·seed + damping·Pᵀr`` (``transition_t`` is ``Pᵀ``)."""
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
    the held chunk it links to most strongly (empty when it links to none directly); ``edges``,
    ``residual_left`` and ``truncated`` say what the walk cost and what it left."""

    seed_entities: tuple[tuple[str, float], ...]
    seed_chunks: tuple[tuple[str, float], ...]
    top_entities: tuple[tuple[str, float], ...]
    ranked: tuple[tuple[str, float], ...]
    proposed: tuple[tuple[str, float], ...]
    parents: Mapping[str, str]
    #: what the walk did: edges read, seed mass left unpushed, whether the edge budget stopped it
    edges: int = 0
    residual_left: float = 0.0
    truncated: bool = False

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
            "walk": {"edges": self.edges, "residual_left": round(self.residual_left, 6), "truncated": self.truncated},
        }


class GraphHop:
    """Personalised PageRank over the part of an entity graph a caller may see, walked locally
    (:func:`hoprag.pipeline.local_ppr.forward_push`): a question costs what the seeds' neighbourhood
    holds, and building one costs nothing that grows with the corpus (the graph's arrays are read
    row by row where the walk goes)."""

    name = "ppr"

    def __init__(
        self,
        graph: EntityGraph,
        visible: Collection[str] | np.ndarray | None = None,
        *,
        damping: float = DAMPING,
        epsilon: float = EPSILON,
        budget: int | None = BUDGET,
        link_weight: float = 1.0,
    ) -> None:
        """``visible``: the chunk ids the caller may see, or a boolean mask over chunk positions, or a
        corpus view carrying one as ``.mask`` (``None``: all of them). ``budget``: at most this many
        edges read per walk (:data:`hoprag.pipeline.local_ppr.BUDGET`; ``None``: ε's bound only)."""
        self.graph = graph
        self.damping, self.epsilon, self.budget, self.link_weight = damping, epsilon, budget, link_weight
        self._scratch = threading.local()  # one walk's per-node arrays per thread, reused
        self.n_entities = len(graph.keys)
        self.chunk_visible = _visible_mask(graph, visible)
        self._entity_frequency: np.ndarray | None = None
        if self.chunk_visible is None:  # every chunk visible: an entity's frequency is its row length
            self._entity_frequency = graph.entity_frequency().astype(np.float64)
        self._frequency_memo: dict[int, float] = {}

    def describe(self) -> str:
        """The walk's parameters, for a config hash: a run resumed with another ε or budget is refused."""
        return (f"{self.name}(damping={self.damping!r},epsilon={self.epsilon!r},budget={self.budget!r},"
                f"link_weight={self.link_weight!r})")

    # -- the walk's view of the graph: hidden chunks and what only they mention are never entered

    def _visible(self, positions: np.ndarray) -> np.ndarray:
        mask = self.chunk_visible
        return positions if mask is None else positions[mask[positions]]

    def is_visible(self, position: int) -> bool:
        return self.chunk_visible is None or bool(self.chunk_visible[position])

    def frequency(self, rows: np.ndarray) -> np.ndarray:
        """Visible chunks per entity row (an entity with none is out of the walk entirely)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._entity_frequency is not None:
            return self._entity_frequency[rows]
        memo, mentions = self._frequency_memo, self.graph.mentions
        out = np.empty(len(rows), dtype=np.float64)
        for i, row in enumerate(rows.tolist()):
            found = memo.get(row)
            if found is None:
                found = memo[row] = float(len(self._visible(mentions.row(row))))
            out[i] = found
        return out

    def _edges(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every edge leaving ``nodes`` into the caller's view: (index into ``nodes``, target, weight).
        An entity's edges go to the visible chunks mentioning it; a chunk's to its entities (all in the
        walk: the chunk itself is visible) and to the visible chunks it links to."""
        graph, n_e, mask = self.graph, self.n_entities, self.chunk_visible
        entity = np.flatnonzero(nodes < n_e)
        chunk = np.flatnonzero(nodes >= n_e)
        parts = []
        if len(entity):
            owner, at = graph.mentions.gather(nodes[entity])
            target = np.asarray(graph.mentions.indices[at], dtype=np.int64)
            if mask is not None:
                shown = mask[target]
                owner, target = owner[shown], target[shown]
            parts.append((entity[owner], target + n_e, np.ones(len(target))))
        if len(chunk):
            positions = nodes[chunk] - n_e
            owner, at = graph.mentioned.gather(positions)
            parts.append((chunk[owner], np.asarray(graph.mentioned.indices[at], dtype=np.int64), np.ones(len(at))))
            owner, at = graph.links.gather(positions)
            if len(at):
                target = np.asarray(graph.links.indices[at], dtype=np.int64)
                weight = self.link_weight * np.asarray(graph.links.data[at], dtype=np.float64)
                if mask is not None:
                    shown = mask[target]
                    owner, target, weight = owner[shown], target[shown], weight[shown]
                parts.append((chunk[owner], target + n_e, weight))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        return tuple(np.concatenate(column) for column in zip(*parts))  # type: ignore[return-value]

    def _degree_floor(self, nodes: np.ndarray) -> np.ndarray:
        """A lower bound of each node's degree: an entity's visible frequency (1 under a clearance,
        checked exactly when it is pushed), a chunk's entity count (its links come on top)."""
        n_e = self.n_entities
        out = np.ones(len(nodes), dtype=np.float64)
        entity = nodes < n_e
        if self._entity_frequency is not None and entity.any():
            out[entity] = self._entity_frequency[nodes[entity]]
        chunk = ~entity
        if chunk.any():
            out[chunk] = self.graph.mentioned.row_lengths(nodes[chunk] - n_e)
        return out

    def _work(self, nodes: np.ndarray) -> np.ndarray:
        """The stored edges ``_edges`` reads for each node (before the clearance drops hidden ones)."""
        n_e, graph = self.n_entities, self.graph
        out = np.empty(len(nodes), dtype=np.int64)
        entity = nodes < n_e
        if entity.any():
            out[entity] = graph.mentions.row_lengths(nodes[entity])
        chunk = ~entity
        if chunk.any():
            positions = nodes[chunk] - n_e
            out[chunk] = graph.mentioned.row_lengths(positions) + graph.links.row_lengths(positions)
        return out

    def propose(self, question: str, held: Mapping[str, float], *, limit: int = 2, top: int = 10) -> GraphProposal | None:
        """Run the walk seeded from ``question``'s entities and the ``held`` chunks (id → weight) and
        propose up to ``limit`` chunks not held; ``None`` when nothing seeds the walk."""
        graph, n_e = self.graph, self.n_entities
        named = graph.question_entities(question)
        frequencies = self.frequency(np.asarray(named, dtype=np.int64)) if named else np.zeros(0)
        entity_weights = {row: 1.0 / f for row, f in zip(named, frequencies.tolist()) if f > 0}
        chunk_rows: dict[int, float] = {}
        for chunk_id, weight in held.items():
            position = graph.position(chunk_id)
            if position is not None and self.is_visible(position) and weight > 0:
                chunk_rows[position] = chunk_rows.get(position, 0.0) + float(weight)
        if not entity_weights and not chunk_rows:
            return None
        entity_share = ENTITY_SHARE if entity_weights and chunk_rows else (1.0 if entity_weights else 0.0)
        total_e = sum(entity_weights.values()) or 1.0
        total_c = sum(chunk_rows.values()) or 1.0
        seed: dict[int, float] = {}
        for row, weight in entity_weights.items():
            seed[row] = seed.get(row, 0.0) + entity_share * weight / total_e
        for position, weight in chunk_rows.items():
            seed[n_e + position] = seed.get(n_e + position, 0.0) + (1.0 - entity_share) * weight / total_c
        walked = self.walk(seed)
        nodes, scores = walked.nodes, walked.scores
        is_entity = nodes < n_e
        entity_rows, entity_scores = nodes[is_entity], scores[is_entity]
        chunk_positions, chunk_scores = nodes[~is_entity] - n_e, scores[~is_entity]
        ranked = _top(chunk_positions, chunk_scores, top)
        fresh_mask = ~np.isin(chunk_positions, np.fromiter(chunk_rows, dtype=np.int64, count=len(chunk_rows)))
        fresh = _top(chunk_positions[fresh_mask], chunk_scores[fresh_mask], limit)
        ids = {p: graph.chunk_ids[p] for p, _ in (*ranked, *fresh)} | {p: graph.chunk_ids[p] for p in chunk_rows}
        parents = {ids[p]: ids[q] for p, _ in fresh if (q := self._parent(p, chunk_rows)) is not None}
        return GraphProposal(
            seed_entities=tuple((graph.keys[r], seed[r]) for r in sorted(entity_weights, key=lambda r: (-seed[r], r))),
            seed_chunks=tuple((ids[p], seed[n_e + p]) for p in sorted(chunk_rows)),
            top_entities=tuple((graph.keys[r], s) for r, s in _top(entity_rows, entity_scores, top)),
            ranked=tuple((ids[p], s) for p, s in ranked),
            proposed=tuple((ids[p], s) for p, s in fresh),
            parents=parents,
            edges=walked.edges,
            residual_left=walked.residual,
            truncated=walked.truncated,
        )

    def walk(self, seed: Mapping[int, float]) -> PushResult:
        """The walk from ``seed`` (node → mass; entities first, then chunks): the nodes it reached,
        ascending, their scores, and what it read and left."""
        size = self.n_entities + self.graph.n_chunks
        scratch = getattr(self._scratch, "arrays", None)
        if scratch is None:
            scratch = self._scratch.arrays = PushScratch(size)
        return forward_push(self._edges, self._degree_floor, size, seed, damping=self.damping, epsilon=self.epsilon,
                            work=self._work, budget=self.budget, scratch=scratch)

    def _parent(self, position: int, held: Mapping[int, float]) -> int | None:
        """The held chunk sharing the most specific entities with chunk ``position`` (ties: the heavier
        seed, then index order)."""
        mentioned = self.graph.mentioned
        entities = mentioned.row(position)
        best: tuple[float, float, int] | None = None
        for q, weight in held.items():
            shared = np.intersect1d(entities, mentioned.row(q), assume_unique=True)
            if not len(shared):
                continue
            strength = float(np.sum(1.0 / self.frequency(shared)))
            candidate = (strength, weight, -q)
            if best is None or candidate > best:
                best = candidate
        return None if best is None else -best[2]


def _visible_mask(graph: EntityGraph, visible: Collection[str] | np.ndarray | None) -> np.ndarray | None:
    """The visible chunks as a mask over graph columns (``None``: all). A corpus view's own mask is
    over index positions, which are the graph's columns."""
    if visible is None:
        return None
    mask = visible if isinstance(visible, np.ndarray) else getattr(visible, "mask", None)
    if isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (graph.n_chunks,):
        return mask
    if mask is None and getattr(visible, "db", None) is not None and len(visible) == graph.n_chunks:
        return None  # an unmasked view of the whole index
    out = np.zeros(graph.n_chunks, dtype=bool)
    for chunk_id in visible:
        position = graph.position(chunk_id)
        if position is not None:
            out[position] = True
    return out


def _top(positions: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` positions with the largest positive scores and their scores, best first (ties: lower
    position first)."""
    positive = np.flatnonzero(scores > 0)
    if not len(positive) or k <= 0:
        return []
    if len(positive) > 4 * k:  # keep only what ties or beats the k-th best before the full sort
        kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]
        positive = positive[scores[positive] >= kth]
    order = np.lexsort((positions[positive], -scores[positive]))[:k]
    return [(int(positions[positive[i]]), float(scores[positive[i]])) for i in order]


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
