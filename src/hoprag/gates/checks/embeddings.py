"""Embedding QA over any ``np.ndarray`` batch: norms, zero-norm share, OOV share, drift.

Stage output: an :class:`EmbedOutput` (``vectors``; optionally ``token_ids`` per text and the
``unknown_ids`` of the tokenizer) or a bare array. Context: ``reference`` (the frozen reference
batch of the baseline run) turns on the drift metrics:

    centroid_drift      = 1 - cos(mean of unit vectors, mean of unit reference vectors)
    norm_p50_shift      = |median norm - reference median norm|
    pairwise_sim_*      = mean / p05 / p95 of cosine similarity over sampled pairs in the batch
    pairwise_sim_ks     = two-sample Kolmogorov-Smirnov statistic, batch pairs vs reference pairs
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoprag.gates.hooks import hook, metric
from hoprag.metrics import Metric

__all__ = ["EmbedOutput", "centroid_drift", "ks_statistic", "oov_share", "pairwise_similarities",
           "reference_sample", "unknown_token_ids"]

ZERO_NORM = 1e-12
_BYTE_TOKEN = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")


@dataclass(frozen=True)
class EmbedOutput:
    vectors: np.ndarray
    token_ids: Sequence[Sequence[int]] | None = None
    unknown_ids: frozenset[int] = frozenset()
    ignore_ids: frozenset[int] = frozenset()
    model: str = ""


def unknown_token_ids(tokenizer: Any) -> tuple[frozenset[int], frozenset[int]]:
    """``(unknown ids, special ids)`` of a ``tokenizers.Tokenizer``: its unk token and byte-fallback
    tokens ``<0x00>``…``<0xFF>``; special tokens (``[CLS]``, ``[PAD]``, …) are to be ignored."""
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    unknown = {i for tok, i in vocab.items() if _BYTE_TOKEN.match(tok)}
    for name in ("[UNK]", "<unk>", "<UNK>"):
        if name in vocab:
            unknown.add(vocab[name])
    special = {i for i, tok in tokenizer.get_added_tokens_decoder().items() if tok.special} - unknown
    return frozenset(unknown), frozenset(special)


def oov_share(token_ids: Iterable[Sequence[int]], unknown_ids: frozenset[int],
              ignore_ids: frozenset[int] = frozenset()) -> tuple[float, int]:
    """``(share of tokens that are unknown/byte-fallback, tokens counted)``, special tokens ignored."""
    total = oov = 0
    for ids in token_ids:
        arr = np.asarray(list(ids), dtype=np.int64)
        if ignore_ids:
            arr = arr[~np.isin(arr, list(ignore_ids))]
        total += len(arr)
        if unknown_ids:
            oov += int(np.isin(arr, list(unknown_ids)).sum())
    return (oov / total if total else 0.0), total


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > ZERO_NORM)


def centroid_drift(batch: np.ndarray, reference: np.ndarray) -> float:
    """1 - cosine between the centroids of the unit vectors (0 = same direction)."""
    a, b = _unit(batch).mean(axis=0), _unit(reference).mean(axis=0)
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return 1.0 - float(np.dot(a, b)) / denom if denom > 0 else 1.0


def pairwise_similarities(vectors: np.ndarray, max_pairs: int = 20000, seed: int = 0) -> np.ndarray:
    """Cosine similarities of distinct pairs: all of them when few, else a seeded sample."""
    unit = _unit(vectors)
    n = len(unit)
    if n < 2:
        return np.zeros(0)
    if n * (n - 1) // 2 <= max_pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n, size=max_pairs)
        j = (i + rng.integers(1, n, size=max_pairs)) % n
    return np.einsum("ij,ij->i", unit[i], unit[j])


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / len(a)
    cdf_b = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


def reference_sample(vectors: np.ndarray, size: int = 512, seed: int = 0) -> np.ndarray:
    """A seeded sample of rows (all rows when fewer): the batch a baseline freezes for drift."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(vectors) <= size:
        return vectors.copy()
    rows = np.sort(np.random.default_rng(seed).choice(len(vectors), size=size, replace=False))
    return vectors[rows]


@hook("embed")
def embedding_check(out: Any, ctx: dict[str, Any]) -> list[Metric]:
    emb = out if isinstance(out, EmbedOutput) else EmbedOutput(vectors=np.asarray(out))
    vectors = np.asarray(emb.vectors, dtype=np.float64)
    if vectors.ndim != 2:
        raise ValueError(f"embedding batch must be 2-D (texts x dims), got shape {vectors.shape}")
    finite = np.isfinite(vectors).all(axis=1)
    norms = np.linalg.norm(np.where(finite[:, None], vectors, 0.0), axis=1)
    n = len(vectors)
    result = [metric(ctx, "vectors", n, dim=int(vectors.shape[1]), model=emb.model),
              metric(ctx, "nonfinite_frac", float((~finite).mean()) if n else 0.0),
              metric(ctx, "zero_norm_frac", float(((norms <= ZERO_NORM) & finite).mean()) if n else 0.0)]
    if n:
        result += [metric(ctx, f"norm_{name}", float(np.percentile(norms, p)))
                   for name, p in (("p05", 5), ("p50", 50), ("p95", 95))]
    if emb.token_ids is not None:
        share, total = oov_share(emb.token_ids, emb.unknown_ids, emb.ignore_ids)
        result.append(metric(ctx, "oov_frac", share, tokens=total))
    sims = pairwise_similarities(vectors[finite])
    if len(sims):
        result += [metric(ctx, "pairwise_sim_mean", float(sims.mean()), pairs=len(sims)),
                   metric(ctx, "pairwise_sim_p05", float(np.percentile(sims, 5))),
                   metric(ctx, "pairwise_sim_p95", float(np.percentile(sims, 95)))]
    reference = ctx.get("reference")
    if reference is not None and n:
        ref = np.asarray(reference, dtype=np.float64)
        if ref.ndim != 2 or ref.shape[1] != vectors.shape[1]:
            # a new dimensionality is the largest drift there is: the encoder changed
            return result + [metric(ctx, "centroid_drift", 1.0, reason=f"reference has shape {ref.shape}, "
                                    f"batch has {vectors.shape[1]} dimensions")]
        ref_norms = np.linalg.norm(ref, axis=1)
        ref_run = ctx.get("reference_run")
        result += [metric(ctx, "centroid_drift", centroid_drift(vectors[finite], ref), reference_run=ref_run),
                   metric(ctx, "norm_p50_shift", abs(float(np.median(norms)) - float(np.median(ref_norms))),
                          reference_run=ref_run),
                   metric(ctx, "pairwise_sim_ks", ks_statistic(sims, pairwise_similarities(ref)),
                          reference_run=ref_run)]
    return result
