"""The evidence buffer: what the engine holds, without exact or near-duplicate passages.

Pooled corpora repeat themselves (the same paragraph under two titles, a policy quoted in a memo),
and a duplicate in the context costs budget and adds no support. A new item is dropped when its
normalised text equals a held item's (exact), or when the Jaccard similarity of their word 3-gram
sets is at least ``near_threshold`` (near-duplicate). Dropped ids are reported so the trace says so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from functools import lru_cache

from hoprag.pipeline.text import tokens
from hoprag.records import Evidence

NEAR_THRESHOLD = 0.9


def _shingles(text: str, n: int = 3) -> frozenset[tuple[str, ...]]:
    return _word_shingles(tokens(text), n)


def _word_shingles(words: list[str], n: int = 3) -> frozenset[tuple[str, ...]]:
    if len(words) < n:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


@lru_cache(maxsize=1024)  # about 10 KB of 3-grams a passage
def _text_signature(text: str) -> tuple[str, frozenset]:
    """A text's digest and word 3-grams. Cached: the same passages are offered to the buffer at
    every hop of every question."""
    words = tokens(text)
    return hashlib.sha1(" ".join(words).encode()).hexdigest(), _word_shingles(words)


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class EvidenceBuffer:
    """Held evidence in the order found, keyed by chunk id, with duplicate removal."""

    def __init__(self, near_threshold: float = NEAR_THRESHOLD) -> None:
        self.near_threshold = near_threshold
        self._items: dict[str, Evidence] = {}
        self._digests: dict[str, str] = {}
        self._shingles: dict[str, frozenset] = {}

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def values(self) -> list[Evidence]:
        return list(self._items.values())

    @staticmethod
    def _signature(item: Evidence) -> tuple[str, frozenset]:
        return _text_signature(item.text)

    def duplicate_of(self, item: Evidence, signature: tuple[str, frozenset] | None = None) -> str | None:
        """The held chunk id that ``item`` duplicates, or None."""
        digest, grams = signature or self._signature(item)
        for chunk_id, held in self._digests.items():
            if held == digest:
                return chunk_id
        if self.near_threshold < 1.0:
            size = len(grams)
            for chunk_id, held_grams in self._shingles.items():
                # the Jaccard similarity of two sets is at most the smaller's size over the larger's:
                # a pair whose sizes are already too far apart is skipped without intersecting them (rounded
                # division is monotone, so the bound as computed is never below the similarity as computed)
                held_size = len(held_grams)
                if size and held_size and min(size, held_size) / max(size, held_size) < self.near_threshold:
                    continue
                if jaccard(grams, held_grams) >= self.near_threshold:
                    return chunk_id
        return None

    def add(self, items: Iterable[Evidence]) -> tuple[list[Evidence], list[str]]:
        """Add new items; returns (items kept, chunk ids dropped as duplicates)."""
        kept: list[Evidence] = []
        dropped: list[str] = []
        for item in items:
            if item.chunk_id in self._items:
                continue
            signature = self._signature(item)
            if self.duplicate_of(item, signature) is not None:
                dropped.append(item.chunk_id)
                continue
            self._items[item.chunk_id] = item
            self._digests[item.chunk_id], self._shingles[item.chunk_id] = signature
            kept.append(item)
        return kept, dropped
