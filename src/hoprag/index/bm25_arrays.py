"""The bm25s score matrix, read and scored with numpy alone (no bm25s import on the query path).

An index's ``bm25/`` directory holds what ``bm25s.BM25.save`` writes: the CSC matrix
(``data``/``indices``/``indptr`` ``.csc.index.npy``), ``vocab.index.json`` and ``params.index.json``
(plus ``nonoccurrence_array.index.npy`` for ``bm25l``/``bm25+``); bm25s itself can still open it.
Importing bm25s costs a second of every cold start (it pulls in scipy), so loading and scoring
live here: a query's score of chunk ``d`` is the sum over the query's term ids ``t`` (duplicates
counted, in query order, as bm25s sums them) of ``data[indptr[t] + i]`` where
``indices[indptr[t] + i] == d`` — the same float32 additions, so the same scores bit for bit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.errors import IndexLoadError

__all__ = ["BM25Arrays"]

DATA, INDICES, INDPTR = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"
VOCAB, PARAMS, NONOCCURRENCE = "vocab.index.json", "params.index.json", "nonoccurrence_array.index.npy"


class BM25Arrays:
    """A built BM25 index: score matrix columns per term id, the vocabulary, and its parameters."""

    def __init__(
        self,
        data: np.ndarray,
        indices: np.ndarray,
        indptr: np.ndarray,
        num_docs: int,
        vocab_dict: Mapping[str, int],
        params: Mapping[str, Any],
        nonoccurrence: np.ndarray | None = None,
    ) -> None:
        self.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": int(num_docs)}
        self.vocab_dict = dict(vocab_dict)
        self.params = dict(params)
        self.nonoccurrence_array = nonoccurrence
        self.source = "bm25 index"

    def get_scores_from_ids(self, token_ids: Sequence[int]) -> np.ndarray:
        """BM25 score of every chunk for a query given as term ids (float32, chunk order)."""
        data, indices, indptr = self.scores["data"], self.scores["indices"], self.scores["indptr"]
        scores = np.zeros(self.scores["num_docs"], dtype=np.float32)
        try:
            for tid in token_ids:
                start, end = int(indptr[tid]), int(indptr[tid + 1])
                # a column lists each chunk once, so plain fancy-index addition equals np.add.at
                scores[indices[start:end]] += data[start:end]
        except (IndexError, ValueError) as exc:
            raise IndexLoadError(f"{self.source}: the bm25 score matrix is damaged ({exc}). Fix: run "
                                 "`hoprag index CORPUS --out DIR` to (re)build it") from None
        if self.nonoccurrence_array is not None and len(token_ids):
            scores += self.nonoccurrence_array[np.asarray(token_ids, dtype=np.int64)].sum()
        return scores

    def save(self, directory: str | Path) -> None:
        """Write the files ``bm25s.BM25.save`` writes (bm25s can load the directory)."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        np.save(path / DATA, self.scores["data"], allow_pickle=False)
        np.save(path / INDICES, self.scores["indices"], allow_pickle=False)
        np.save(path / INDPTR, self.scores["indptr"], allow_pickle=False)
        if self.nonoccurrence_array is not None:
            np.save(path / NONOCCURRENCE, self.nonoccurrence_array, allow_pickle=False)
        (path / VOCAB).write_text(json.dumps(self.vocab_dict, ensure_ascii=False), encoding="utf-8")
        (path / PARAMS).write_text(json.dumps({**self.params, "num_docs": self.scores["num_docs"]}, indent=4),
                                   encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = True) -> BM25Arrays:
        """Read a saved index (arrays memory-mapped with ``mmap``); ``ValueError``/``OSError`` if damaged."""
        path = Path(directory)
        mode = "r" if mmap else None
        params = json.loads((path / PARAMS).read_text(encoding="utf-8"))
        vocab = json.loads((path / VOCAB).read_text(encoding="utf-8"))
        if not isinstance(params, dict) or not isinstance(vocab, dict):
            raise ValueError("params or vocabulary is not a JSON object")
        data = np.load(path / DATA, mmap_mode=mode, allow_pickle=False)
        indices = np.load(path / INDICES, mmap_mode=mode, allow_pickle=False)
        indptr = np.load(path / INDPTR, mmap_mode=mode, allow_pickle=False)
        nonoccurrence = None
        if (path / NONOCCURRENCE).is_file():
            nonoccurrence = np.load(path / NONOCCURRENCE, mmap_mode=mode, allow_pickle=False)
        num_docs = params.get("num_docs")
        if (not isinstance(num_docs, int) or data.ndim != 1 or indices.shape != data.shape or indptr.ndim != 1
                or len(indptr) < 2 or int(indptr[-1]) != data.size or indptr.dtype.kind not in "iu"
                or indices.dtype.kind not in "iu"):
            raise ValueError("the score matrix arrays do not fit together")
        if vocab and max(vocab.values()) >= len(indptr) - 1 + 1:
            raise ValueError("the vocabulary names more terms than the matrix has columns")
        arrays = cls(data, indices, indptr, num_docs, vocab, params, nonoccurrence)
        arrays.source = str(path.parent)
        return arrays
