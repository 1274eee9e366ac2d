"""Paired cluster bootstrap for case-level differences between two runs.

For paired differences ``d_i = b_i - a_i`` with cluster labels ``g_i`` (graph path, template or
source family) the estimate is the mean difference over cases, and each bootstrap replicate draws
``C`` clusters *with replacement* from the ``C`` observed clusters and recomputes::

    mean_b = sum over drawn clusters of S_c  /  sum over drawn clusters of N_c

(``S_c`` = sum of the cluster's differences, ``N_c`` = its case count), so related cases move
together. The interval is the percentile interval of the replicates at ``confidence`` (numpy
``quantile``, linear). ``p_value`` is the two-sided bootstrap share
``min(1, 2 * min(P(mean_b <= 0), P(mean_b >= 0)))``. The generator is ``numpy.random.default_rng(seed)``;
seed, resamples and cluster count are returned with every interval. Pairs where either side is
``None`` are excluded and counted, never imputed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hoprag.errors import ConfigError


@dataclass(frozen=True)
class BootstrapCI:
    mean: float | None
    low: float | None
    high: float | None
    p_value: float | None
    n: int
    n_clusters: int
    excluded: int
    resamples: int
    seed: int
    confidence: float
    method: str = "paired cluster bootstrap, percentile interval"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_cluster_bootstrap(
    a: Sequence[float | None],
    b: Sequence[float | None],
    clusters: Sequence[str],
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapCI:
    """Interval for ``mean(b - a)`` resampling whole clusters; see the module doc."""
    if not len(a) == len(b) == len(clusters):
        raise ValueError(f"a, b and clusters must have one entry per case (got {len(a)}, {len(b)}, {len(clusters)})")
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    if not 0 <= seed <= 2**32 - 1:  # the range of every --seed (hoprag.commands.seed_option); numpy refuses < 0
        raise ConfigError(f"seed {seed} is outside 0..{2**32 - 1}. Fix: pass a seed from 0 to {2**32 - 1}")
    keep = [i for i in range(len(a)) if a[i] is not None and b[i] is not None]
    excluded = len(a) - len(keep)
    if not keep:
        return BootstrapCI(None, None, None, None, 0, 0, excluded, resamples, seed, confidence)
    diffs = np.array([float(b[i]) - float(a[i]) for i in keep])  # type: ignore[arg-type]
    labels = [str(clusters[i]) for i in keep]
    names, inverse = np.unique(np.array(labels, dtype=object).astype(str), return_inverse=True)
    sums = np.bincount(inverse, weights=diffs, minlength=len(names))
    counts = np.bincount(inverse, minlength=len(names)).astype(float)
    means = _replicate_means(sums, counts, resamples, np.random.default_rng(seed))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    p = min(1.0, 2.0 * min(float(np.mean(means <= 0.0)), float(np.mean(means >= 0.0))))
    return BootstrapCI(
        mean=float(diffs.mean()),
        low=float(low),
        high=float(high),
        p_value=p,
        n=len(keep),
        n_clusters=len(names),
        excluded=excluded,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
    )


#: cluster draws per block of replicates: 2,000 x 10,000 draws at once took 480 MB of temporaries
_BLOCK = 1 << 20


def _replicate_means(sums: np.ndarray, counts: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Each replicate's ratio of drawn sums to drawn counts, drawn in blocks of replicates: the
    generator's stream, each replicate's draws and its sums are those of one
    ``rng.integers(0, C, size=(resamples, C))`` call (test: ``test_eval_stats_trec``)."""
    clusters = len(sums)
    means = np.empty(resamples)
    step = max(1, _BLOCK // clusters)
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        draws = rng.integers(0, clusters, size=(stop - start, clusters))
        means[start:stop] = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return means


def cluster_of(case: Any, by: str) -> str:
    """Cluster label of a case: ``path`` (graph-path seed), ``template``, ``source_family`` or ``case``."""
    keys = case.split_keys
    if by == "path":
        return keys.seed or case.case_id
    if by == "template":
        return keys.template or case.question_type or "(none)"
    if by == "source_family":
        return keys.source_family or case.dataset or "(none)"
    if by == "case":
        return case.case_id
    raise ConfigError(f"unknown cluster key {by!r}; valid: path, template, source_family, case (--cluster)")
