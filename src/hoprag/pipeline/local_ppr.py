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
after ``rounds``. Deterministic: the same arrays in the same order give the same floats. The scores
returned are ``p + (1 − α)·q``: still a lower bound of the fixed point, and the first term of
``PPR(q)`` for the nodes reached but not pushed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["EPSILON", "ROUNDS", "forward_push"]

#: residual threshold per unit of degree; picked on the bundled samples against the power iteration
EPSILON = 1e-6
#: at most this many rounds (at damping 0.5 the residual left halves each round)
ROUNDS = 60

#: ``edges(nodes)``: for an array of nodes, every edge leaving them as (index into ``nodes``, target
#: node, weight), the targets only nodes the walk may enter
Edges = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def forward_push(
    edges: Edges,
    degree_floor: Callable[[np.ndarray], np.ndarray],
    size: int,
    seed: Mapping[int, float],
    *,
    damping: float,
    epsilon: float = EPSILON,
    rounds: int = ROUNDS,
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate PPR scores from ``seed`` (node → mass) over ``size`` nodes; returns the reached
    nodes (ascending) and their scores.

    ``degree_floor(nodes)``: a lower bound of each node's degree, used to decide whether a node
    reached but never expanded is over its threshold (its exact degree is known once it is)."""
    estimate = np.zeros(size, dtype=np.float64)
    residual = np.zeros(size, dtype=np.float64)
    degree = np.zeros(size, dtype=np.float64)
    known = np.zeros(size, dtype=bool)
    active = np.fromiter(sorted(seed), dtype=np.int64, count=len(seed))
    residual[active] = [seed[int(u)] for u in active]
    reached = [active]
    keep = 1.0 - damping
    for _ in range(rounds):
        if not len(active):
            break
        source, target, weight = edges(active)
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
        nodes, at = np.unique(target, return_inverse=True)
        residual[nodes] += np.bincount(at, weights=share, minlength=len(nodes))
        reached.append(nodes)
        floor = np.where(known[nodes], degree[nodes], degree_floor(nodes))
        active = nodes[residual[nodes] > epsilon * np.maximum(floor, 1e-300)]
    positions = np.unique(np.concatenate(reached))
    return positions, estimate[positions] + keep * residual[positions]
