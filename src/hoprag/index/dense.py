"""Dense retrieval: inner product of unit vectors (cosine similarity) between query and chunks.

Each chunk is embedded as BM25 sees it (``title + "\\n" + text``, see
:func:`hoprag.index.bm25.index_text`). The default search is exact: one float32 matrix-vector
product over every chunk, then filters, exclusions, the caller's clearance and the score threshold
remove candidates *before* the top k are selected, so they never make a result run short. Ties are broken by chunk
order, so the same index and query always give the same hits.

For large corpora ``backend="hnsw"`` searches an HNSW graph (:mod:`hoprag.index.ann`; built at
index time and memory-mapped, or built here when none is given) with the same semantics: the
allowed chunks are selected inside the graph search, a sparse filter is searched exactly, and a
search that returns fewer than ``k`` falls back to the exact one. Hits are re-scored from the
stored vectors either way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Callable, Literal

import numpy as np

from hoprag.security.acl import Clearance
from hoprag.security.clearance import resolve_clearance
from hoprag.errors import ConfigError
from hoprag.index.ann import SPARSE_SHARE, HnswIndex
from hoprag.index.base import Filters
from hoprag.index.bm25 import index_text
from hoprag.index.embedders import Embedder, embed_in_batches
from hoprag.index.chunk_table import ChunkTable
from hoprag.records import Chunk, Document, Hit

__all__ = ["BACKENDS", "DenseRetriever", "chunk_texts"]

Backend = Literal["exact", "hnsw"]
BACKENDS: tuple[str, ...] = ("exact", "hnsw")
Progress = Callable[[str, int, int], None]
_QUERY_CACHE = 2048


def chunk_texts(chunks: Sequence[Chunk], documents: Mapping[str, Document] | None) -> list[str]:
    """The text embedded for each chunk: its document's title, a newline, the chunk text."""
    docs = documents or {}
    return [index_text(c, docs[c.doc_id].title if c.doc_id in docs else "") for c in chunks]


class DenseRetriever:
    """Exact (or HNSW) cosine search over embedded chunks."""

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
        ann: HnswIndex | None = None,
    ) -> None:
        """Embed ``chunks`` (or take ``vectors``, row ``i`` for chunk ``i``, from a saved index).

        ``min_score`` drops hits whose cosine similarity is below it (``None`` keeps every hit).
        ``ann`` is the saved graph of ``vectors`` for ``backend="hnsw"`` (built here when ``None``).
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
        self._ann: HnswIndex | None = None
        if backend == "hnsw":
            self._ann = ann if ann is not None else HnswIndex.build(self.vectors)
            if len(self._ann) != len(self._chunks):
                raise ConfigError(f"the HNSW graph holds {len(self._ann)} vectors but there are {len(self._chunks)} "
                                  "chunks; rebuild the index with --dense")
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
        """The graph's top ``k`` among ``allowed``, or ``None`` when the exact search must decide."""
        graph = self._ann
        if graph is None:
            return None
        n = len(self._chunks)
        eligible = n if allowed is None else int(allowed.sum())
        if eligible == 0:
            return []
        if allowed is not None and eligible < SPARSE_SHARE * n:
            # few allowed chunks: scoring just those is exact and cheaper than a filtered graph walk
            positions = np.flatnonzero(allowed)
            scores = np.zeros(n, dtype=np.float32)
            scores[positions] = np.asarray(self.vectors[positions], dtype=np.float32) @ qv
            return self._top(scores, k, allowed)
        found = graph.search(qv, min(k, eligible), allowed)[0]
        found = np.unique(found[found >= 0])
        scores = np.asarray(self.vectors[found], dtype=np.float32) @ qv
        if self.min_score is not None:
            keep = scores >= self.min_score
            found, scores = found[keep], scores[keep]
        if found.size < min(k, eligible):
            return None  # the graph missed some, or the threshold cut the list: the exact search decides
        order = np.lexsort((found, -scores))[:k]
        return self.table.hits(found[order].tolist(), scores[order].tolist(), "dense")
