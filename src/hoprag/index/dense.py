"""Dense retrieval: inner product of unit vectors (cosine similarity) between query and chunks.

Each chunk is embedded as BM25 sees it (``title + "\\n" + text``, see
:func:`hoprag.index.bm25.index_text`). The default search is exact: one float32 matrix-vector
product over every chunk, then filters, exclusions, the caller's clearance and the score threshold
remove candidates *before* the top k are selected, so they never make a result run short. Ties are broken by chunk
order, so the same index and query always give the same hits.

For large corpora ``backend="faiss"`` (``IndexFlatIP``, exact) or ``backend="usearch"`` (HNSW,
approximate) can serve the search when the package is installed; they fetch more candidates than
asked, drop the disallowed ones, and fall back to the exact search if that still leaves fewer
than ``k``.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Callable, Literal

import numpy as np

from hoprag.acl import Clearance, resolve_clearance
from hoprag.errors import ConfigError
from hoprag.index.base import Filters
from hoprag.index.bm25 import index_text
from hoprag.index.embedders import Embedder, embed_in_batches
from hoprag.index.chunk_table import ChunkTable
from hoprag.records import Chunk, Document, Hit

__all__ = ["BACKENDS", "DenseRetriever", "chunk_texts"]

Backend = Literal["exact", "faiss", "usearch"]
BACKENDS: tuple[str, ...] = ("exact", "faiss", "usearch")
Progress = Callable[[str, int, int], None]
_QUERY_CACHE = 2048


def chunk_texts(chunks: Sequence[Chunk], documents: Mapping[str, Document] | None) -> list[str]:
    """The text embedded for each chunk: its document's title, a newline, the chunk text."""
    docs = documents or {}
    return [index_text(c, docs[c.doc_id].title if c.doc_id in docs else "") for c in chunks]


class DenseRetriever:
    """Exact (or optionally faiss/usearch) cosine search over embedded chunks."""

    name = "dense"

    def __init__(
        self,
        chunks: Sequence[Chunk],
        documents: Mapping[str, Document] | Iterable[Document] | None,
        embedder: Embedder,
        vectors: np.ndarray | None = None,
        *,
        min_score: float | None = None,
        backend: Backend = "exact",
        batch_size: int = 256,
        progress: Progress | None = None,
    ) -> None:
        """Embed ``chunks`` (or take ``vectors``, row ``i`` for chunk ``i``, from a saved index).

        ``min_score`` drops hits whose cosine similarity is below it (``None`` keeps every hit).
        """
        self.table = ChunkTable(chunks, documents, kind="dense")
        self._chunks = self.table.chunks
        if backend not in BACKENDS:
            raise ConfigError(f"unknown dense backend '{backend}'; valid: {', '.join(BACKENDS)}")
        if min_score is not None and not -1.0 <= min_score <= 1.0:
            raise ConfigError(f"min_score {min_score} is not a cosine similarity; give a value in [-1, 1]")
        self.embedder = embedder
        self.min_score = min_score
        self.backend = backend
        if vectors is None:
            texts = chunk_texts(self._chunks, self.table.documents)
            vectors = embed_in_batches(embedder, texts, batch_size=batch_size, progress=progress)
        self.vectors = self._check_vectors(vectors)
        self._ann: Any = None
        if backend != "exact":
            self._ann = _build_ann(backend, self.vectors)
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()  # executors retrieve from several threads at once

    def _check_vectors(self, vectors: np.ndarray) -> np.ndarray:
        n, dim = len(self._chunks), self.embedder.dim
        if vectors.ndim != 2 or vectors.shape != (n, dim):
            raise ConfigError(
                f"dense vectors have shape {tuple(vectors.shape)} but {n} chunks of a {dim}-dimensional "
                f"embedder '{self.embedder.name}' need ({n}, {dim}); rebuild the index with --dense"
            )
        if vectors.dtype != np.float32:
            vectors = vectors.astype(np.float32)
        return vectors

    def __len__(self) -> int:
        return len(self._chunks)

    @property
    def chunks(self) -> list[Chunk]:
        return self._chunks

    def query_vector(self, query: str) -> np.ndarray:
        """The unit vector of ``query`` (cached: multi-hop engines re-issue queries)."""
        with self._cache_lock:
            cached = self._query_cache.get(query)
            if cached is not None:
                self._query_cache.move_to_end(query)
                return cached
        vector = self.embedder.embed([query])[0]
        self._remember(query, vector)
        return vector

    def _remember(self, query: str, vector: np.ndarray) -> None:
        vector.setflags(write=False)
        with self._cache_lock:
            self._query_cache[query] = vector
            if len(self._query_cache) > _QUERY_CACHE:
                self._query_cache.popitem(last=False)

    def get_scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every chunk to ``query`` (float32, chunk order)."""
        return self.vectors @ self.query_vector(query)

    def retrieve(
        self,
        query: str,
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[Hit]:
        cleared = resolve_clearance(clearance)
        if k <= 0 or not query.strip():
            return []
        qv = self.query_vector(query)
        if not qv.any():  # no token the embedder knows: nothing to compare with
            return []
        allowed = self.table.allowed(filters, exclude, cleared)
        if self._ann is not None:
            hits = self._ann_top(qv, k, allowed)
            if hits is not None:
                return hits
        scores = self.vectors @ qv
        return self._top(scores, k, allowed)

    def retrieve_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[list[Hit]]:
        """``retrieve`` for each query, same filters, exclusions and clearance; the queries are embedded in one batch."""
        with self._cache_lock:
            missing = [q for q in dict.fromkeys(queries) if q.strip() and q not in self._query_cache]
        if missing:
            for q, v in zip(missing, self.embedder.embed(missing)):
                self._remember(q, v)
        return [self.retrieve(q, k, filters=filters, exclude=exclude, clearance=clearance) for q in queries]

    # --- selection ----------------------------------------------------------------------------

    def _top(self, scores: np.ndarray, k: int, allowed: np.ndarray | None) -> list[Hit]:
        keep = np.ones(scores.shape[0], dtype=bool) if allowed is None else allowed.copy()
        if self.min_score is not None:
            keep &= scores >= self.min_score
        return self.table.top(scores, k, keep, "dense")

    def _ann_top(self, qv: np.ndarray, k: int, allowed: np.ndarray | None) -> list[Hit] | None:
        n = len(self._chunks)
        want = min(n, k if allowed is None else k + int(n - allowed.sum()))
        while True:
            positions, values = _ann_search(self.backend, self._ann, qv, want)
            pairs = [
                (float(v), int(p))
                for p, v in zip(positions, values)
                if 0 <= p < n
                and (allowed is None or allowed[p])
                and (self.min_score is None or v >= self.min_score)
            ]
            if want >= n:
                break
            if len(pairs) >= k:
                # stop only once the last candidate fetched scores below the k-th kept one: chunks
                # tied at the boundary must all be seen so the tie breaks by chunk order
                kth = sorted((s for s, _ in pairs), reverse=True)[k - 1]
                if float(values[len(positions) - 1]) < kth:
                    break
            want = min(n, want * 2)
        if len(pairs) < k and int((positions >= 0).sum()) < n:
            return None  # the approximate index did not visit every chunk: let the exact search decide
        pairs.sort(key=lambda sv: (-sv[0], sv[1]))
        pairs = pairs[:k]
        return self.table.hits([p for _, p in pairs], [s for s, _ in pairs], "dense")



def _optional(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"dense backend needs the '{extra}' package. Fix: pip install {extra} (or use backend 'exact')") from None


def _build_ann(backend: str, vectors: np.ndarray) -> Any:
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    if backend == "faiss":
        faiss = _optional("faiss", "faiss-cpu")
        index = faiss.IndexFlatIP(data.shape[1])
        index.add(data)
        return index
    usearch = _optional("usearch.index", "usearch")
    index = usearch.Index(ndim=data.shape[1], metric="ip", dtype="f32")
    index.add(np.arange(data.shape[0], dtype=np.uint64), data)
    return index


def _ann_search(backend: str, index: Any, qv: np.ndarray, want: int) -> tuple[np.ndarray, np.ndarray]:
    query = np.ascontiguousarray(qv.reshape(1, -1), dtype=np.float32)
    if backend == "faiss":
        values, positions = index.search(query, want)
        return positions[0], values[0]
    matches = index.search(query[0], want, exact=False)
    # usearch reports the inner-product *distance* 1 - <q, x>
    return matches.keys.astype(np.int64), (1.0 - matches.distances).astype(np.float32)
