"""Corpus statistics read from the BM25 matrix: how many chunks hold a term, never a pass over text.

The bm25s matrix is stored column by column (CSC): column ``t`` lists the chunks that contain
term ``t``, so a term's document frequency is ``indptr[t + 1] - indptr[t]``, and its frequency
among the chunks a caller may see is the count of those rows inside a visibility mask. Both are
computed on demand for the few terms a question has, from the memory-mapped arrays.

Terms are looked up the way the index spells them (the BM25 tokeniser's stems). A term made of
several index tokens (``spider-man``: ``spider`` + ``man``) counts the chunks that hold all of
them; a term the index cannot spell (one letter, or never seen) has frequency 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hoprag.index.tokenize import Tokenizer

__all__ = ["TermStats"]


class TermStats:
    """Document frequencies over the chunks of one index, optionally restricted to ``visible``."""

    def __init__(
        self,
        vocab: Mapping[str, int],
        indptr: np.ndarray,
        indices: np.ndarray,
        tokenizer: Tokenizer,
        *,
        count: int,
        visible: np.ndarray | None = None,
    ) -> None:
        self._vocab = vocab
        self._indptr = indptr
        self._indices = indices
        self._tokenizer = tokenizer
        self._visible = visible
        self._total = count
        self.count = int(visible.sum()) if visible is not None else count
        self._cache: dict[str, int] = {}

    def restricted(self, visible: np.ndarray) -> TermStats:
        """The same statistics over only the chunks where ``visible`` (a boolean mask) is true."""
        mask = visible if self._visible is None else visible & self._visible
        return TermStats(self._vocab, self._indptr, self._indices, self._tokenizer, count=self._total, visible=mask)

    def _rows(self, tid: int) -> np.ndarray:
        return self._indices[int(self._indptr[tid]) : int(self._indptr[tid + 1])]

    def df(self, term: str) -> int:
        """Chunks holding ``term`` (among the visible ones)."""
        found = self._cache.get(term)
        if found is not None:
            return found
        tid = self._vocab.get(term)
        if tid is not None:
            rows = None if self._visible is None else self._rows(tid)
            found = int(self._indptr[tid + 1] - self._indptr[tid]) if rows is None else int(self._visible[rows].sum())
        else:
            found = self._compound_df(term)
        self._cache[term] = found
        return found

    def _compound_df(self, term: str) -> int:
        parts = [self._vocab.get(t) for t in dict.fromkeys(self._tokenizer.query(term))]
        if not parts or any(p is None for p in parts):
            return 0
        rows = self._rows(parts[0])  # type: ignore[arg-type]
        for tid in parts[1:]:
            rows = np.intersect1d(rows, self._rows(tid), assume_unique=True)  # type: ignore[arg-type]
        if self._visible is not None:
            return int(self._visible[rows].sum())
        return int(rows.size)
