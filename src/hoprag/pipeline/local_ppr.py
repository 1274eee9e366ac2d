"""Local personalised PageRank: Andersen–Chung–Lang forward push, touching only nodes near the seeds.

For ``r = (1 − α)·s + α·Pᵀr`` (``P = D⁻¹A``, a node without edges keeps no mass) push keeps an
estimate ``p`` and a residual ``q``, starting from ``p = 0, q = s``. Pushing node ``u`` moves
``(1 − α)·q[u]`` into ``p[u]`` and spreads ``α·q[u]`` over its neighbours in proportion to the edge
weights, then sets ``q[u] = 0``; ``p + PPR(q) = PPR(s)`` holds after any sequence of pushes. A node
is pushed while ``q[u] > ε·deg(u)``, so the work is bounded by ``1 / ((1 − α)·ε)`` edge visits
whatever the graph's size (Andersen, Chung, Lang, *Local graph partitioning using PageRank
vectors*, FOCS 2006).

Here every node over the threshold is pushed in the same round (the synchronous order: each reads
its own residual before the round's spreading is added), so a round is a few numpy operations over
the edges of the nodes it pushes, and the rounds stop when no residual is over its threshold, or
after ``rounds``, or when the walk has read ``budget`` edges. That bound (:data:`BUDGET`) is the
ACL bound made tighter: ε alone allows two million edge visits at ε = 1e-6, which a walk only
approaches when the graph around the seeds is that large, so on a large index a walk would cost
more the larger the corpus. Under the budget a round that would read more edges than are left
pushes its nodes in order of residual per unit of degree (the largest first, the mass that moves
the scores most; ties by node) while they fit, and the walk stops there; the mass not pushed is
returned as ``residual`` (``p + PPR(q)`` still holds, so the scores stay lower bounds).

Deterministic: the same arrays in the same order give the same floats. The scores returned are
``p + (1 − α)·q``: still a lower bound of the fixed point, and the first term of ``PPR(q)`` for the
nodes reached but not pushed. The per-node arrays live in a :class:`PushScratch` that a caller can
keep between walks (one per thread): a walk then costs what it touches, not the graph's size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

__all__ = ["BUDGET", "EPSILON", "ROUNDS", "PushResult", "PushScratch", "forward_push"]

#: residual threshold per unit of degree; picked on the bundled samples against the power iteration
EPSILON = 1e-6
#: at most this many rounds (at damping 0.5 the residual left halves each round)
ROUNDS = 60
#: at most this many edges read per walk (see the module docstring; ``None``: no bound but ε's)
BUDGET = 50_000

#: ``edges(nodes)``: for an array of nodes, every edge leaving them as (index into ``nodes``, target
#: node, weight), the targets only nodes the walk may enter
Edges = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


class PushResult(NamedTuple):
    """The nodes a walk reached (ascending), their scores, the edges it read, the seed mass it left
    unpushed, and whether the edge budget stopped it."""

    nodes: np.ndarray
    scores: np.ndarray
    edges: int
    residual: float
    truncated: bool


class PushScratch:
    """Per-node arrays of one walk over ``size`` nodes, zero between walks (a walk resets what it
    touched), so a walk never allocates or clears arrays the size of the graph. Not thread-safe:
    keep one per thread."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.estimate = np.zeros(size, dtype=np.float64)
        self.residual = np.zeros(size, dtype=np.float64)
        self.degree = np.zeros(size, dtype=np.float64)
        self.known = np.zeros(size, dtype=bool)
        self.touched = np.zeros(size, dtype=bool)
        self.slot = np.zeros(size, dtype=np.int64)

    def reset(self, nodes: np.ndarray) -> None:
        self.estimate[nodes] = 0.0
        self.residual[nodes] = 0.0
        self.degree[nodes] = 0.0
        self.known[nodes] = False
        self.touched[nodes] = False


def _distinct(values: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """The distinct values of a non-empty int array, ascending, in time linear in its length plus the
    sort of what is distinct (``slot``: a scratch array indexed by value)."""
    at = np.arange(len(values), dtype=np.int64)
    slot[values] = at
    return np.sort(values[slot[values] == at])  # one occurrence of each value keeps its own index


def forward_push(
    edges: Edges,
    degree_floor: Callable[[np.ndarray], np.ndarray],
    size: int,
    seed: Mapping[int, float],
    *,
    damping: float,
    epsilon: float = EPSILON,
    rounds: int = ROUNDS,
    work: Callable[[np.ndarray], np.ndarray] | None = None,
    budget: int | None = None,
    scratch: PushScratch | None = None,
) -> PushResult:
    """Approximate PPR scores from ``seed`` (node → mass) over ``size`` nodes.

    ``degree_floor(nodes)``: a lower bound of each node's degree, used to decide whether a node
    reached but never expanded is over its threshold (its exact degree is known once it is).
    ``work(nodes)``: the edges ``edges`` reads for each node (needed with ``budget``)."""
    if budget is not None and work is None:
        raise ValueError("forward_push: a budget needs work(nodes), the edges read per node")
    s = scratch if scratch is not None and scratch.size == size else PushScratch(size)
    estimate, residual, degree, known = s.estimate, s.residual, s.degree, s.known
    active = np.fromiter(sorted(seed), dtype=np.int64, count=len(seed))
    residual[active] = [seed[int(u)] for u in active]
    s.touched[active] = True
    reached = [active]
    keep = 1.0 - damping
    read, truncated = 0, False
    try:
        for _ in range(rounds):
            if not len(active):
                break
            cost = None if work is None else np.asarray(work(active), dtype=np.int64)
            if budget is not None and read + int(cost.sum()) > budget:  # type: ignore[union-attr]
                floor = np.where(known[active], degree[active], degree_floor(active))
                order = np.lexsort((active, -(residual[active] / np.maximum(floor, 1e-300))))
                fits = np.sort(order[: int(np.searchsorted(np.cumsum(cost[order]), budget - read, side="right"))])  # type: ignore[index]
                active, cost, truncated = active[fits], cost[fits], True  # type: ignore[index]
                if not len(active):
                    break
            source, target, weight = edges(active)
            read += len(source) if cost is None else int(cost.sum())
            out_degree = np.bincount(source, weights=weight, minlength=len(active))
            degree[active], known[active] = out_degree, True
            mass = residual[active]
            push = (out_degree <= 0.0) | (mass > epsilon * out_degree)
            moved = np.where(push, mass, 0.0)
            estimate[active] += keep * moved
            residual[active] -= moved
            spread = np.divide(damping * moved, out_degree, out=np.zeros_like(moved), where=out_degree > 0)
            pushed = spread[source] > 0.0
            if not pushed.any():
                break
            target, share = target[pushed], spread[source[pushed]] * weight[pushed]
            np.add.at(residual, target, share)  # in edge order
            nodes = _distinct(target, s.slot)
            fresh = nodes[~s.touched[nodes]]
            s.touched[fresh] = True
            reached.append(fresh)
            if truncated:
                break
            floor = np.where(known[nodes], degree[nodes], degree_floor(nodes))
            active = nodes[residual[nodes] > epsilon * np.maximum(floor, 1e-300)]
        positions = np.sort(np.concatenate(reached))
        left = float(residual[positions].sum())
        return PushResult(positions, estimate[positions] + keep * residual[positions], read, left, truncated)
    finally:
        s.reset(np.concatenate(reached))
