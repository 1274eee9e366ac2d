"""The offline entity graph built at index time: which chunks mention which entities, and which
chunks are linked through a rare entity they share.

Two sparse matrices (scipy CSR, float32), row and column order fixed by the entity vocabulary and the
index's chunk order, so the same corpus and config always give the same files:

- ``entity_chunk`` (entities × chunks): 1 where the chunk mentions the entity
  (:func:`hoprag.index.entities.chunk_entities`: its document's title, capitalised names, quoted
  titles, identifiers, dates, and document titles found inside longer names);
- ``chunk_chunk`` (chunks × chunks, symmetric, zero diagonal): for every entity held by at most
  ``GraphConfig.link_max_chunks`` chunks, each pair of its chunks gets ``1 / (df - 1)``; summed over
  the entities the two share. A rare shared name is a strong link; a common one is none.

An entity held by more than ``max(min_cap, max_share × chunks)`` chunks names nothing specific
("United States", "1990") and is left out of both. Entity keys are :func:`title_key` forms, so an
alias that differs from a title only by case, accents, a leading article or a trailing
parenthetical ("Neil Peart (drummer)") is the same node.

On disk, beside the index (``graph/``): ``entity_chunk.npz`` and ``chunk_chunk.npz``
(``scipy.sparse.save_npz``), ``entities.json`` (``[key, kind, chunk count]`` per row) and
``chunk_ids.json`` (the column order). The
manifest records counts, size and build time (:class:`GraphInfo`); the index loads the files on
first use only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hoprag.errors import ConfigError, IndexLoadError
from hoprag.index.entities import Mention, chunk_entities, chunk_mentions, resolve_mentions, title_key
from hoprag.ingest.text import STOPWORDS, tokens
from hoprag.records import Chunk, Document

__all__ = ["GRAPH_DIR", "EntityGraph", "GraphBuilder", "GraphConfig", "GraphInfo", "build_entity_graph", "load_graph", "open_graph", "save_graph"]

GRAPH_DIR = "graph"
ENTITY_CHUNK = "entity_chunk.npz"
CHUNK_CHUNK = "chunk_chunk.npz"
ENTITIES = "entities.json"
CHUNK_IDS = "chunk_ids.json"
GRAPH_FIX = "rebuild the index: `hoprag index CORPUS --out DIR` (the entity graph is built unless --no-graph)"
#: longest question n-gram looked up in the entity vocabulary
_MAX_QUESTION_WORDS = 6


def _sparse():
    try:
        from scipy import sparse
    except ImportError:  # pragma: no cover - scipy is a core dependency
        raise ConfigError(
            "the entity graph needs scipy; install it with pip install scipy, or index with --no-graph"
        ) from None
    return sparse


class GraphConfig(BaseModel):
    """How the entity graph is built (part of the index config, so part of its hash)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_share: float = Field(default=0.01, gt=0.0, le=1.0, description="an entity in more than this share of chunks is dropped")
    min_cap: int = Field(default=20, ge=1, description="…but never below this many chunks")
    link_max_chunks: int = Field(default=5, ge=2, description="entities in at most this many chunks link them chunk to chunk")


class GraphInfo(BaseModel):
    """The manifest's record of the entity graph."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    directory: str = GRAPH_DIR
    config: GraphConfig = Field(default_factory=GraphConfig)
    entities: int
    chunks: int
    mentions: int
    chunk_links: int
    dropped_common: int
    bytes: int
    build_seconds: float


@dataclass
class EntityGraph:
    """The entity–chunk graph of one index (see the module doc). ``chunk_ids`` is the index order."""

    keys: tuple[str, ...]
    kinds: tuple[str, ...]
    entity_chunk: Any  # scipy.sparse.csr_matrix, entities × chunks
    chunk_chunk: Any  # scipy.sparse.csr_matrix, chunks × chunks
    chunk_ids: tuple[str, ...]
    _entity_index: dict[str, int] | None = field(default=None, repr=False)
    _chunk_index: dict[str, int] | None = field(default=None, repr=False)

    @property
    def entity_index(self) -> dict[str, int]:
        if self._entity_index is None:
            self._entity_index = {k: i for i, k in enumerate(self.keys)}
        return self._entity_index

    @property
    def chunk_index(self) -> dict[str, int]:
        if self._chunk_index is None:
            self._chunk_index = {c: i for i, c in enumerate(self.chunk_ids)}
        return self._chunk_index

    def entity_frequency(self) -> np.ndarray:
        """Chunks per entity (its document frequency in the graph)."""
        return np.diff(self.entity_chunk.indptr).astype(np.int64)

    def question_entities(self, question: str) -> list[int]:
        """Rows of the entities a question names: its mentions by shape, and any run of up to six of
        its words that is an entity key (so "the composer of flight of the bumblebee" still meets
        the title), longest first, without a shorter key inside a longer one already found."""
        index = self.entity_index
        found: list[int] = []
        for key in chunk_entities(question):
            if key in index and index[key] not in found:
                found.append(index[key])
        words = tokens(question)
        taken = [False] * len(words)
        for size in range(min(_MAX_QUESTION_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                if any(taken[start : start + size]):
                    continue
                piece = words[start : start + size]
                if size == 1 and (piece[0] in STOPWORDS or len(piece[0]) < 3):
                    continue
                row = index.get(" ".join(piece))
                if row is not None:
                    taken[start : start + size] = [True] * size
                    if row not in found:
                        found.append(row)
        return found

    def info(self, *, size: int, seconds: float, dropped: int, config: GraphConfig | None = None) -> GraphInfo:
        links = int(self.chunk_chunk.nnz // 2)
        return GraphInfo(config=config or GraphConfig(), entities=len(self.keys), chunks=len(self.chunk_ids), mentions=int(self.entity_chunk.nnz),
                         chunk_links=links, dropped_common=dropped, bytes=size, build_seconds=round(seconds, 3))


class GraphBuilder:
    """Builds the graph while the index streams its corpus: :meth:`add` each document's chunks in index
    order, then :meth:`finish`. Only the mentions are kept (titles inside longer names are looked
    up at the end, once every document title is known); ``seconds`` counts the time spent here."""

    def __init__(self, config: GraphConfig | None = None) -> None:
        self.config = config or GraphConfig()
        self.seconds = 0.0
        self._mentions: list[list[Mention]] = []
        self._chunk_ids: list[str] = []
        self._titles: set[str] = set()

    def add(self, chunks: Sequence[Chunk], title: str) -> None:
        start = time.perf_counter()
        key = title_key(title) if title else ""
        if key:
            self._titles.add(key)
        for chunk in chunks:
            self._mentions.append(chunk_mentions(chunk.text, title=title))
            self._chunk_ids.append(chunk.id)
        self.seconds += time.perf_counter() - start

    def build(self) -> tuple[EntityGraph, int]:
        """The graph, and how many common entities were dropped."""
        start = time.perf_counter()
        sparse = _sparse()
        titles = frozenset(self._titles)
        cache: dict = {}
        per_chunk = [resolve_mentions(m, titles, cache) for m in self._mentions]
        df: dict[str, int] = {}
        kind_of: dict[str, str] = {}
        for found in per_chunk:
            for key, kind in found.items():
                df[key] = df.get(key, 0) + 1
                if kind == "title" or key not in kind_of:
                    kind_of[key] = kind
        n = len(per_chunk)
        cap = max(self.config.min_cap, int(self.config.max_share * n))
        keys = tuple(sorted(k for k, c in df.items() if c <= cap))
        row_of = {k: i for i, k in enumerate(keys)}
        rows: list[int] = []
        cols: list[int] = []
        for col, found in enumerate(per_chunk):
            for key in found:
                row = row_of.get(key)
                if row is not None:
                    rows.append(row)
                    cols.append(col)
        data = np.ones(len(rows), dtype=np.float32)
        entity_chunk = sparse.csr_matrix((data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                                         shape=(len(keys), n), dtype=np.float32)
        entity_chunk.sum_duplicates()
        entity_chunk.sort_indices()
        freq = np.diff(entity_chunk.indptr)
        rare = (freq >= 2) & (freq <= self.config.link_max_chunks)
        weights = np.where(rare, 1.0 / np.maximum(freq - 1, 1), 0.0).astype(np.float32)
        chunk_chunk = (entity_chunk.T.tocsr() @ (sparse.diags(weights) @ entity_chunk)).tocsr()
        chunk_chunk.setdiag(0)
        chunk_chunk.eliminate_zeros()
        chunk_chunk = chunk_chunk.astype(np.float32)
        chunk_chunk.sort_indices()
        graph = EntityGraph(keys=keys, kinds=tuple(kind_of[k] for k in keys), entity_chunk=entity_chunk,
                            chunk_chunk=chunk_chunk, chunk_ids=tuple(self._chunk_ids))
        self.seconds += time.perf_counter() - start
        return graph, len(df) - len(keys)

    def finish(self, index_dir: Path) -> GraphInfo:
        """Build the graph and write it into ``index_dir/graph``; the manifest's record of it."""
        graph, dropped = self.build()
        start = time.perf_counter()
        size = save_graph(graph, index_dir / GRAPH_DIR)
        self.seconds += time.perf_counter() - start
        return graph.info(size=size, seconds=self.seconds, dropped=dropped, config=self.config)


def build_entity_graph(
    chunks: Sequence[Chunk], documents: Mapping[str, Document], config: GraphConfig | None = None
) -> tuple[EntityGraph, int]:
    """The graph of ``chunks`` (in index order) and how many common entities were dropped."""
    builder = GraphBuilder(config)
    for chunk in chunks:
        document = documents.get(chunk.doc_id)
        builder.add([chunk], document.title if document else "")
    return builder.build()


def save_graph(graph: EntityGraph, directory: Path) -> int:
    """Write the graph's files; returns their size in bytes."""
    sparse = _sparse()
    directory.mkdir(parents=True, exist_ok=True)
    sparse.save_npz(directory / ENTITY_CHUNK, graph.entity_chunk, compressed=False)
    sparse.save_npz(directory / CHUNK_CHUNK, graph.chunk_chunk, compressed=False)
    freq = np.diff(graph.entity_chunk.indptr).tolist()
    rows = [[k, kind, int(f)] for k, kind, f in zip(graph.keys, graph.kinds, freq)]
    (directory / ENTITIES).write_text(json.dumps(rows, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    (directory / CHUNK_IDS).write_text(json.dumps(list(graph.chunk_ids), ensure_ascii=False, separators=(",", ":")),
                                       encoding="utf-8")
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


def load_graph(directory: Path) -> EntityGraph:
    """Read a graph written by :func:`save_graph`; :class:`IndexLoadError` when it is damaged."""
    sparse = _sparse()
    try:
        entity_chunk = sparse.load_npz(directory / ENTITY_CHUNK).tocsr()
        chunk_chunk = sparse.load_npz(directory / CHUNK_CHUNK).tocsr()
        rows = json.loads((directory / ENTITIES).read_text(encoding="utf-8"))
        keys = tuple(str(r[0]) for r in rows)
        kinds = tuple(str(r[1]) for r in rows)
        chunk_ids = tuple(str(c) for c in json.loads((directory / CHUNK_IDS).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise IndexLoadError(f"{directory}: entity graph unreadable ({exc}). Fix: {GRAPH_FIX}") from None
    n = len(chunk_ids)
    if entity_chunk.shape != (len(keys), n) or chunk_chunk.shape != (n, n):
        raise IndexLoadError(
            f"{directory}: entity graph shapes {entity_chunk.shape} / {chunk_chunk.shape} do not fit "
            f"{len(keys)} entities and {n} chunks. Fix: {GRAPH_FIX}"
        )
    return EntityGraph(keys=keys, kinds=kinds, entity_chunk=entity_chunk, chunk_chunk=chunk_chunk, chunk_ids=chunk_ids)


def open_graph(index_dir: Path, info: GraphInfo | None, chunk_count: int) -> EntityGraph | None:
    """The graph of an index directory whose manifest records ``info`` (``None``: built without one)."""
    if info is None:
        return None
    graph = load_graph(index_dir / info.directory)
    if len(graph.chunk_ids) != chunk_count:
        raise IndexLoadError(
            f"{index_dir}: the entity graph covers {len(graph.chunk_ids)} chunks, the index holds {chunk_count}. "
            f"Fix: {GRAPH_FIX}"
        )
    return graph
