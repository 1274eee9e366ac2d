"""Chunk QA: length distribution (characters and tokens) and the realised overlap of adjacent chunks.

Stage output: a :class:`ChunkOutput` (chunks and the documents they came from) or a list of
chunks. Context keys: ``chunk_config`` (a :class:`~hoprag.ingest.chunking.ChunkConfig`, for the
configured overlap) and ``floor_chars`` (default 32: chunks shorter than this count as fragments).

Realised overlap of chunk ``i`` and ``i+1`` of one document is ``max(0, end_i - start_{i+1})``
characters, and the number of tokens in that shared span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoprag.gates.hooks import hook, metric
from hoprag.metrics import Metric
from hoprag.ingest.chunking import token_count
from hoprag.records import Chunk, Document

__all__ = ["OVERLAP_BINS", "ChunkOutput", "chunk_lengths", "overlap_histogram", "realised_overlaps", "token_count"]

# Histogram bin edges in tokens: [0,1), [1,6), [6,11), [11,21), [21,51), [51, inf)
OVERLAP_BINS = (0, 1, 6, 11, 21, 51)
DEFAULT_FLOOR = 32


@dataclass(frozen=True)
class ChunkOutput:
    chunks: Sequence[Chunk]
    documents: Sequence[Document] = ()


def chunk_lengths(chunks: Sequence[Chunk]) -> tuple[np.ndarray, np.ndarray]:
    chars = np.fromiter((len(c.text) for c in chunks), dtype=np.float64, count=len(chunks))
    tokens = np.fromiter((token_count(c.text) for c in chunks), dtype=np.float64, count=len(chunks))
    return chars, tokens


def realised_overlaps(chunks: Sequence[Chunk], documents: Sequence[Document] = ()) -> list[tuple[int, int]]:
    """``(chars, tokens)`` shared by each adjacent pair of chunks of one document, in order."""
    texts = {d.id: d.text for d in documents}
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    pairs: list[tuple[int, int]] = []
    for doc_id, group in by_doc.items():
        group.sort(key=lambda c: c.index)
        for prev, cur in zip(group, group[1:]):
            chars = max(0, prev.end - cur.start)
            if chars == 0:
                pairs.append((0, 0))
                continue
            # the shared span is the head of the later chunk (its text is doc.text[start:end])
            shared = texts[doc_id][cur.start:prev.end] if doc_id in texts else cur.text[:chars]
            pairs.append((chars, token_count(shared)))
    return pairs


def overlap_histogram(tokens: Sequence[int]) -> dict[str, int]:
    """Counts per token bin, labelled ``"0"``, ``"1-5"``, ``"6-10"``, ``"11-20"``, ``"21-50"``, ``"51+"``."""
    labels = []
    for lo, hi in zip(OVERLAP_BINS, OVERLAP_BINS[1:] + (None,)):
        labels.append(str(lo) if hi == lo + 1 else (f"{lo}+" if hi is None else f"{lo}-{hi - 1}"))
    counts = dict.fromkeys(labels, 0)
    edges = np.asarray(OVERLAP_BINS)
    for value in tokens:
        counts[labels[int(np.searchsorted(edges, value, side="right")) - 1]] += 1
    return counts


def _pct(values: np.ndarray, p: float) -> float:
    return float(np.percentile(values, p, method="linear")) if len(values) else 0.0


@hook("chunk")
def chunk_length_check(out: Any, ctx: dict[str, Any]) -> list[Metric]:
    chunks = list(out.chunks if isinstance(out, ChunkOutput) else out)
    floor = int(ctx.get("floor_chars", DEFAULT_FLOOR))
    chars, tokens = chunk_lengths(chunks)
    result = [metric(ctx, "chunks", len(chunks))]
    for unit, values in (("chars", chars), ("tokens", tokens)):
        result += [metric(ctx, f"len_{unit}_p50", _pct(values, 50)),
                   metric(ctx, f"len_{unit}_p95", _pct(values, 95)),
                   metric(ctx, f"len_{unit}_max", float(values.max()) if len(values) else 0.0)]
    below = float((chars < floor).mean()) if len(chars) else 0.0
    result.append(metric(ctx, "below_floor_frac", below, floor_chars=floor))
    return result


@hook("chunk")
def chunk_overlap_check(out: Any, ctx: dict[str, Any]) -> list[Metric]:
    chunks = list(out.chunks if isinstance(out, ChunkOutput) else out)
    documents = list(out.documents) if isinstance(out, ChunkOutput) else []
    pairs = realised_overlaps(chunks, documents)
    config = ctx.get("chunk_config")
    configured = getattr(config, "overlap_chars", None)
    chars = np.asarray([p[0] for p in pairs], dtype=np.float64)
    tokens = [p[1] for p in pairs]
    result = [metric(ctx, "overlap_pairs", len(pairs), configured_overlap_chars=configured)]
    if not pairs:
        return result  # single-chunk documents only: nothing to measure, the gate sees it missing
    zero = float((chars == 0).mean())
    result += [
        metric(ctx, "overlap_chars_p50", _pct(chars, 50), configured_overlap_chars=configured),
        metric(ctx, "overlap_tokens_p50", _pct(np.asarray(tokens, dtype=np.float64), 50),
               histogram=overlap_histogram(tokens)),
        metric(ctx, "overlap_zero_frac", zero, histogram=overlap_histogram(tokens)),
    ]
    if configured:
        result.append(metric(ctx, "overlap_ratio", _pct(chars, 50) / configured, configured_overlap_chars=configured))
    return result
