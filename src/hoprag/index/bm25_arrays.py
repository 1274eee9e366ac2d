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
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.errors import IndexLoadError
from hoprag.index.npy_map import all_finite, load_npy

__all__ = ["BM25Arrays", "sorted_unique"]

DATA, INDICES, INDPTR = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"
VOCAB, PARAMS, NONOCCURRENCE = "vocab.index.json", "params.index.json", "nonoccurrence_array.index.npy"
#: below this many chunks every query scores every chunk: the full pass's score array still sits in the
#: processor's caches there, and on the bench's composed corpora scoring everything beat the pruned
#: search at 10k and 100k chunks (median 0.38 vs 0.90 ms, 1.03 vs 1.17 ms) and lost from 200k (2.67 vs
#: 1.48 ms; 1M: 13.97 vs 4.30 ms), the engine's and the samples' queries, k=10
PRUNE_MIN_DOCS = 150_000
REST_SHARE = 0.7
SEED_TERMS = 3  # columns whose best chunks are scored in full to set the floor


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
        self._bounds: dict[int, float] = {}  # term id -> its column's highest score (-1: not prunable)
        #: below this many chunks every query scores every chunk (the pruned search pays from here)
        self.prune_min_docs = PRUNE_MIN_DOCS
        self._local = threading.local()  # per thread: a scratch array of partial scores
        #: the terms left out of the scratch sum may add at most this share of the floor
        self.rest_share = REST_SHARE

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
            raise self._damaged(exc) from None
        if self.nonoccurrence_array is not None and len(token_ids):
            scores += self.nonoccurrence_array[np.asarray(token_ids, dtype=np.int64)].sum()
        return scores

    def column(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        """Term ``tid``'s column: the chunk positions holding it and their scores (views, not copies)."""
        indptr = self.scores["indptr"]
        start, end = int(indptr[tid]), int(indptr[tid + 1])
        return self.scores["indices"][start:end], self.scores["data"][start:end]

    def _bound(self, tid: int) -> float | None:
        """The highest score in term ``tid``'s column, or ``None`` when the column cannot bound a
        pruned search (a negative score, or positions not strictly ascending). Cached per term."""
        bounds = self._bounds
        bound = bounds.get(tid)
        if bound is None:
            rows, values = self.column(tid)
            if values.size == 0:
                bound = 0.0
            elif float(values.min()) < 0.0 or (rows.size > 1 and not bool(np.all(rows[1:] > rows[:-1]))):
                bound = -1.0
            else:
                bound = float(values.max())
            bounds[tid] = bound
        return None if bound < 0.0 else bound

    def _damaged(self, exc: Exception) -> IndexLoadError:
        return IndexLoadError(f"{self.source}: the bm25 score matrix is damaged ({exc}). Fix: run "
                              "`hoprag index CORPUS --out DIR` to (re)build it")

    def candidates(
        self, token_ids: Sequence[int], k: int, allowed_at: Callable[[np.ndarray], np.ndarray | None]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Chunk positions (ascending) with their exact scores, among which lie the query's ``k`` best
        allowed chunks and every chunk tied with the ``k``-th; ``None`` when scoring every chunk is the
        way (a small index, scores below zero, a non-occurrence term, no floor found).

        ``allowed_at(positions)`` gives which of those positions may be returned (``None``: all).
        MaxScore's bound (Turtle & Flood, 1995): the full scores of a few chunks (the best of the
        strongest terms' columns) give ``theta``, a floor under the final ``k``-th best. The
        lowest-bound terms whose column maxima sum to ``rest`` < ``theta`` are not added to every
        chunk: the others' columns are summed into a scratch array (in query order), and only a chunk
        whose partial sum plus ``rest`` reaches ``theta`` can be a hit or tie with one. Those few are
        scored over every query term in query order, the float32 additions ``get_scores_from_ids``
        makes, so scores and ties are the same bit for bit; nothing the size of the corpus is scanned.
        """
        n = self.scores["num_docs"]
        if self.nonoccurrence_array is not None or n < self.prune_min_docs or k <= 0 or not token_ids:
            return None
        try:
            return self._pruned(token_ids, k, allowed_at, n)
        except (IndexError, ValueError) as exc:
            raise self._damaged(exc) from None

    def _pruned(self, token_ids: Sequence[int], k: int, allowed_at: Callable[[np.ndarray], np.ndarray | None],
                n: int) -> tuple[np.ndarray, np.ndarray] | None:
        counts: dict[int, int] = {}
        for tid in token_ids:
            counts[tid] = counts.get(tid, 0) + 1
        bounds: dict[int, float] = {}
        for tid, count in counts.items():
            bound = self._bound(tid)
            if bound is None:
                return None
            bounds[tid] = bound * count
        terms = sorted(counts, key=lambda t: (-bounds[t], t))
        theta = self._floor(token_ids, terms[:SEED_TERMS], k, allowed_at)
        if theta <= 0.0:  # fewer than k allowed chunks among the seeds (a narrow filter): score them all
            return None
        slack = 1.0 + 2.0**-20 * (len(token_ids) + 1)  # float32 sums of up to len(token_ids) scores
        rest = 0.0
        essential = list(terms)
        while len(essential) > 1 and (rest + bounds[essential[-1]]) * slack < theta * self.rest_share:
            rest += bounds[essential.pop()]
        cut = (theta - rest * slack) / slack  # a chunk below this after the essential terms cannot reach theta
        kept = set(essential)
        scratch = self._scratch(n)
        columns = [self.column(t) for t in token_ids if t in kept]
        # the essential columns' positions as one intp array: numpy would convert the stored int32
        # positions to intp again for every gather and scatter below
        touched = np.concatenate([rows for rows, _ in columns]).astype(np.intp, copy=False)
        at = 0  # the positions scattered so far: a damaged column raises before writing, so these are all
        try:
            for rows, values in columns:
                scratch[touched[at:at + rows.size]] += values
                at += rows.size
            positions = sorted_unique(touched[scratch[touched] >= cut])
            partial = scratch[positions].astype(np.float64)
        finally:
            scratch[touched[:at]] = 0.0  # zeros back, even when a later column was damaged
        allowed = allowed_at(positions)
        if allowed is not None:
            positions, partial = positions[allowed], partial[allowed]
        # the other terms, strongest first, each looked up at the chunks still in reach of theta only
        for tid in sorted((t for t in counts if t not in kept), key=lambda t: (-bounds[t], t)):
            if positions.size > k:  # the k-th best partial sum is a floor too: raise theta
                theta = max(theta, float(np.partition(partial, positions.size - k)[positions.size - k]) / slack)
            reach = partial + rest * slack >= theta / slack
            positions, partial = positions[reach], partial[reach]
            held, values = self._lookup(tid, positions)
            partial[held] += values.astype(np.float64) * counts[tid]
            rest -= bounds[tid]
        reach = partial * slack >= theta
        positions = positions[reach]
        return positions, self._score_at(token_ids, positions)

    def _scratch(self, n: int) -> np.ndarray:
        """This thread's all-zero float32 array over the chunks (callers put back the zeros they change)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None or scratch.size != n:
            scratch = self._local.scratch = np.zeros(n, dtype=np.float32)
        return scratch

    def _floor(self, token_ids: Sequence[int], terms: Sequence[int], k: int,
               allowed_at: Callable[[np.ndarray], np.ndarray | None]) -> float:
        """A floor under the query's ``k``-th best allowed score: the ``k``-th best full score among the
        ``k`` best chunks of each of ``terms``' columns (0 when fewer than ``k`` are allowed)."""
        seeds = []
        for tid in terms:
            rows, values = self.column(tid)
            if rows.size > k:
                rows = rows[np.argpartition(values, rows.size - k)[rows.size - k:]]
            seeds.append(rows)
        positions = sorted_unique(np.concatenate(seeds))
        allowed = allowed_at(positions)
        if allowed is not None:
            positions = positions[allowed]
        if positions.size < k:
            return 0.0
        scores = self._score_at(token_ids, positions)
        return float(np.partition(scores, positions.size - k)[positions.size - k])

    def _score_at(self, token_ids: Sequence[int], positions: np.ndarray) -> np.ndarray:
        """Exact scores of ``positions`` (ascending): ``get_scores_from_ids``'s float32 additions, there only."""
        scores = np.zeros(positions.size, dtype=np.float32)
        if positions.size:
            for tid in token_ids:
                held, values = self._lookup(tid, positions)
                scores[held] += values
        return scores

    def _lookup(self, tid: int, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``positions`` (ascending) term ``tid``'s column holds, and their scores there."""
        rows, values = self.column(tid)
        if not rows.size:
            return np.zeros(positions.size, dtype=bool), values
        at = np.minimum(np.searchsorted(rows, positions), rows.size - 1)
        held = rows[at] == positions
        return held, values[at[held]]

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
        params = json.loads((path / PARAMS).read_text(encoding="utf-8"))
        vocab = json.loads((path / VOCAB).read_text(encoding="utf-8"))
        if not isinstance(params, dict) or not isinstance(vocab, dict):
            raise ValueError("params or vocabulary is not a JSON object")
        data = load_npy(path / DATA, mmap=mmap)
        indices = load_npy(path / INDICES, mmap=mmap)
        indptr = load_npy(path / INDPTR, mmap=mmap)
        nonoccurrence = None
        if (path / NONOCCURRENCE).is_file():
            nonoccurrence = load_npy(path / NONOCCURRENCE, mmap=mmap)
        num_docs = params.get("num_docs")
        if (not isinstance(num_docs, int) or data.ndim != 1 or indices.shape != data.shape or indptr.ndim != 1
                or len(indptr) < 2 or int(indptr[-1]) != data.size or indptr.dtype.kind not in "iu"
                or indices.dtype.kind not in "iu" or data.dtype.kind != "f"):
            raise ValueError("the score matrix arrays do not fit together")
        if int(indptr[0]) != 0 or (len(indptr) > 1 and bool((indptr[1:] < indptr[:-1]).any())):
            raise ValueError("the score matrix's column offsets do not start at 0 and ascend")
        if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= num_docs):
            raise ValueError(f"the score matrix names chunks outside 0..{num_docs - 1}")
        if vocab and max(vocab.values()) >= len(indptr) - 1 + 1:
            raise ValueError("the vocabulary names more terms than the matrix has columns")
        # a NaN score never ranks: a search would return no hits and say nothing
        for values in (data, nonoccurrence):
            if values is not None and not all_finite(values):
                raise ValueError("the score matrix holds scores that are not finite (NaN or infinity)")
        arrays = cls(data, indices, indptr, num_docs, vocab, params, nonoccurrence)
        arrays.source = str(path.parent)
        return arrays


def sorted_unique(positions: np.ndarray) -> np.ndarray:
    """``np.unique`` for positions, by one sort (numpy's hashing unique is several times slower here, and
    its first call imports ``numpy.ma``, a tenth of a second of an update's start).
    The stable sort (timsort) merges the ascending runs that concatenated columns are: 1.7x faster
    than the default introsort on them."""
    ordered = np.sort(positions, kind="stable")
    if ordered.size < 2:
        return ordered
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]
