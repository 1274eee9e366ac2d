"""Approximate nearest-neighbour search over the dense vectors: an HNSW graph (faiss), saved with the index.

``--ann`` chooses how dense search runs:

``exact``
    a matrix-vector product over every chunk (:class:`~hoprag.index.dense.DenseRetriever`'s default).
``hnsw``
    a hierarchical navigable small-world graph (Malkov and Yashunin, TPAMI 2018) built once at
    index time (``faiss.IndexHNSWFlat``, inner product), written as ``vectors.hnsw`` beside
    ``vectors.npy`` and memory-mapped at load.
``auto`` (default)
    ``hnsw`` from :data:`AUTO_MIN_CHUNKS` chunks up, ``exact`` below: under that size the exact
    product takes a few milliseconds, less than the graph costs to build (see docs/benchmarks.md).

Filters, exclusions and the caller's clearance are applied *inside* the graph search (a bitmap of
the allowed chunks, ``faiss.IDSelectorBitmap``), so the top ``k`` are chosen among allowed chunks
only; when the allowed chunks are few (under :data:`SPARSE_SHARE` of the corpus) the search is
exact over them instead, and when the graph returns fewer than ``k`` the caller falls back to the
exact search. Candidates are re-scored from the stored vectors, so a hit's score is the same
cosine the exact search gives.

At build time the graph's recall@10 against exact search is measured on a seeded sample of the
corpus' own chunk vectors used as queries, and written to the manifest (:class:`AnnInfo`).
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from hoprag.errors import ConfigError, IndexLoadError

__all__ = [
    "ANN_FILE",
    "ANN_MODES",
    "AUTO_MIN_CHUNKS",
    "AnnInfo",
    "HnswIndex",
    "SPARSE_SHARE",
    "build_ann",
    "choose_ann",
    "exact_top_positions",
    "measure_recall",
    "open_ann",
]

AnnMode = Literal["auto", "exact", "hnsw"]
ANN_MODES: tuple[str, ...] = ("auto", "exact", "hnsw")
ANN_FILE = "vectors.hnsw"
#: from this many chunks ``auto`` builds the graph: exact search over 384-d vectors costs about 3.8 / 11 / 37
#: CPU-ms per query at 10k / 50k / 200k chunks, and a multi-hop question makes about 11 retrieval calls
AUTO_MIN_CHUNKS = 50_000
#: below this share of allowed chunks, a filtered search is exact over the allowed ones
SPARSE_SHARE = 0.02
#: graph degree and build/search beam widths (faiss names: M, efConstruction, efSearch)
HNSW_M = 32
EF_CONSTRUCTION = 80
EF_SEARCH = 96
RECALL_QUERIES = 200
RECALL_K = 10
INSTALL_FIX = "pip install 'hoprag[ann]'"


class AnnInfo(BaseModel):
    """The manifest's record of the approximate index: what it is, its parameters, what it costs and how good it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["hnsw"] = "hnsw"
    file: str = ANN_FILE
    m: int = HNSW_M
    ef_construction: int = EF_CONSTRUCTION
    ef_search: int = EF_SEARCH
    build_s: float
    size_bytes: int
    #: mean share of the exact top 10 that the graph search returns, over ``recall_queries`` chunk vectors
    recall_at_10: float
    recall_queries: int


def choose_ann(mode: str, chunks: int) -> Literal["exact", "hnsw"]:
    """What ``mode`` means for a corpus of ``chunks`` chunks (``auto``: hnsw from :data:`AUTO_MIN_CHUNKS` up)."""
    if mode not in ANN_MODES:
        raise ConfigError(f"unknown ann mode '{mode}'; valid: {', '.join(ANN_MODES)}")
    if mode == "auto":
        return "hnsw" if chunks >= AUTO_MIN_CHUNKS else "exact"
    return mode  # type: ignore[return-value]


def _faiss() -> Any:
    try:
        return importlib.import_module("faiss")
    except ImportError:
        raise ConfigError(f"approximate dense search needs the 'faiss-cpu' package. Fix: {INSTALL_FIX}, "
                          "or build with --ann exact") from None


def exact_top_positions(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Row ``i``: the positions of the ``k`` best chunks for ``queries[i]`` by exact inner product
    (ties by position)."""
    k = min(k, vectors.shape[0])
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    for start in range(0, queries.shape[0], 16):  # 16 score rows at a time: bounded memory at 1M chunks
        scores = queries[start : start + 16] @ vectors.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        for row in range(part.shape[0]):
            cand = part[row]
            out[start + row] = cand[np.lexsort((cand, -scores[row, cand]))]
    return out


class HnswIndex:
    """A faiss HNSW graph over the chunk vectors (position ``i`` = chunk ``i``)."""

    def __init__(self, index: Any, ef_search: int = EF_SEARCH) -> None:
        self._index = index
        self.ef_search = ef_search

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @classmethod
    def build(cls, vectors: np.ndarray, *, m: int = HNSW_M, ef_construction: int = EF_CONSTRUCTION,
              ef_search: int = EF_SEARCH) -> HnswIndex:
        faiss = _faiss()
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        index = faiss.IndexHNSWFlat(data.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.add(data)
        return cls(index, ef_search)

    def save(self, path: Path) -> None:
        _faiss().write_index(self._index, str(path))

    @classmethod
    def load(cls, path: Path, *, ef_search: int = EF_SEARCH) -> HnswIndex:
        faiss = _faiss()
        try:
            index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
            raise IndexLoadError(f"{path}: the HNSW graph is unreadable ({first}). Fix: rebuild the index "
                                 "with `hoprag index CORPUS --out DIR --dense`") from None
        return cls(index, ef_search)

    def search(self, queries: np.ndarray, want: int, allowed: np.ndarray | None = None) -> np.ndarray:
        """Positions of up to ``want`` nearest chunks per query row (``-1`` pads a short row);
        with ``allowed`` (a bool mask over chunks) only allowed chunks are returned."""
        faiss = _faiss()
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(self.ef_search, want)
        bits = None
        if allowed is not None:
            bits = np.packbits(np.asarray(allowed, dtype=bool), bitorder="little")
            selector = faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bits))
            params.sel = selector
        _, positions = self._index.search(q, want, params=params)
        del bits  # the selector reads this buffer during the search: keep it alive until here
        return positions.astype(np.int64)


#: a found chunk whose exact score is within this of the k-th best exact score ties with it
TIE_TOLERANCE = 1e-6


def measure_recall(vectors: np.ndarray, index: HnswIndex, *, queries: int = RECALL_QUERIES, k: int = RECALL_K,
                   seed: int = 0) -> tuple[float, int]:
    """Recall@k of ``index`` vs exact search, the queries a seeded sample of the chunk vectors themselves.

    A found chunk counts when its exact score reaches the exact ``k``-th best score (as ann-benchmarks
    counts by distance, not by id): where passages repeat, many chunks share the ``k``-th score, and
    the graph returning other copies than the exact scan's position order picks is not a miss. Each
    query counts at most ``k``."""
    n = vectors.shape[0]
    k = min(k, n)
    picked = np.sort(np.random.default_rng(seed).choice(n, size=min(queries, n), replace=False))
    sample = np.asarray(vectors[picked], dtype=np.float32)
    truth = exact_top_positions(vectors, sample, k)
    found = index.search(sample, k)
    shares = []
    for query, best, got in zip(sample, truth, found):
        got = got[got >= 0]
        scores = np.asarray(vectors[np.concatenate([best[-1:], got])], dtype=np.float32) @ query
        shares.append(min(k, int(np.count_nonzero(scores[1:] >= scores[0] - TIE_TOLERANCE))) / k)
    return float(np.mean(shares)), len(picked)


def build_ann(vectors: np.ndarray, out_dir: Path, mode: str = "auto") -> AnnInfo | None:
    """Build, measure and save the graph into ``out_dir`` when ``mode`` asks for one there; ``None`` when exact."""
    if choose_ann(mode, vectors.shape[0]) == "exact":
        return None
    started = time.perf_counter()
    index = HnswIndex.build(vectors)
    build_s = time.perf_counter() - started
    path = out_dir / ANN_FILE
    index.save(path)
    recall, asked = measure_recall(vectors, index)
    return AnnInfo(build_s=round(build_s, 3), size_bytes=path.stat().st_size, recall_at_10=round(recall, 4),
                   recall_queries=asked)


def open_ann(directory: Path, info: AnnInfo | None) -> HnswIndex | None:
    """The saved graph the manifest records, memory-mapped; ``None`` when the index has none."""
    if info is None:
        return None
    path = directory / info.file
    if not path.is_file():
        raise IndexLoadError(f"{directory}: the manifest records an HNSW graph but {info.file} is missing. "
                             "Fix: rebuild the index with `hoprag index CORPUS --out DIR --dense`")
    return HnswIndex.load(path, ef_search=info.ef_search)
