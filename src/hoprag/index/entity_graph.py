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

On disk, beside the index (``graph/``, format 2): the matrices as ``.npy`` index arrays, with the
transpose of ``entity_chunk`` (the entities of each chunk) written at build time
(:mod:`hoprag.index.graph_arrays`; memory-mapped at load), ``entities.json`` (``[key, kind, chunk
count]`` per row) and ``chunk_ids.json`` (the column order). The column order is the index's chunk
order, so an index maps chunk ids to graph columns through its own chunk positions and the ids file
is read only when a graph is loaded without its index. The manifest records counts, size, build time
and the format (:class:`GraphInfo`); the index loads the files on first use only, and refuses a
format-1 graph (scipy ``.npz`` files) with the rebuild command. The builder that streams a corpus
into a graph is :mod:`hoprag.index.graph_build`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hoprag.errors import ConfigError, IndexLoadError
from hoprag.index.graph_arrays import GRAPH_FORMAT, ChunkIdsByPosition, CsrArrays, StoredChunkIds
from hoprag.index.entities import chunk_entities
from hoprag.index.npy_map import load_npy
from hoprag.ingest.text import STOPWORDS, tokens

__all__ = ["GRAPH_DIR", "EntityGraph", "GraphConfig", "GraphInfo", "load_graph", "open_graph", "save_graph"]

GRAPH_DIR = "graph"
ENTITY_CHUNK = "entity_chunk"
CHUNK_ENTITY = "chunk_entity"
CHUNK_CHUNK = "chunk_chunk"
#: what format 1 wrote instead of the arrays
_FORMAT1_FILE = "entity_chunk.npz"
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
    #: the on-disk layout (:data:`hoprag.index.graph_arrays.GRAPH_FORMAT`); manifests without it are format 1
    format: int = 1


@dataclass
class EntityGraph:
    """The entity–chunk graph of one index (see the module doc). ``chunk_ids`` is the index order.

    ``mentions`` is entities × chunks, ``mentioned`` its transpose (the entities of each chunk),
    ``links`` chunks × chunks. ``chunk_position`` maps a chunk id to its column (the index's own
    position lookup when the graph was opened with its index; else a dictionary of ``chunk_ids``)."""

    keys: tuple[str, ...]
    kinds: tuple[str, ...]
    mentions: CsrArrays
    mentioned: CsrArrays
    links: CsrArrays
    chunk_ids: Sequence[str]
    chunk_position: Callable[[str], int | None] | None = field(default=None, repr=False)
    _entity_index: dict[str, int] | None = field(default=None, repr=False)
    _chunk_index: dict[str, int] | None = field(default=None, repr=False)

    @property
    def n_chunks(self) -> int:
        return self.mentions.shape[1]

    @property
    def entity_chunk(self) -> Any:
        """``mentions`` as a scipy CSR matrix (float32), for analysis; the walk never builds it."""
        return self.mentions.to_scipy()

    @property
    def chunk_chunk(self) -> Any:
        """``links`` as a scipy CSR matrix (float32), for analysis; the walk never builds it."""
        return self.links.to_scipy()

    @property
    def entity_index(self) -> dict[str, int]:
        if self._entity_index is None:
            self._entity_index = {k: i for i, k in enumerate(self.keys)}
        return self._entity_index

    @property
    def chunk_index(self) -> dict[str, int]:
        """Chunk id → column over every chunk (builds a dictionary of all ids: not for the query path)."""
        if self._chunk_index is None:
            self._chunk_index = {c: i for i, c in enumerate(self.chunk_ids)}
        return self._chunk_index

    def position(self, chunk_id: str) -> int | None:
        """The graph column of ``chunk_id`` (``None``: not in the graph)."""
        if self.chunk_position is not None:
            return self.chunk_position(chunk_id)
        return self.chunk_index.get(chunk_id)

    def entity_frequency(self) -> np.ndarray:
        """Chunks per entity (its document frequency in the graph)."""
        return np.diff(np.asarray(self.mentions.indptr)).astype(np.int64)

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
        links = self.links.nnz // 2
        return GraphInfo(config=config or GraphConfig(), entities=len(self.keys), chunks=self.n_chunks, mentions=self.mentions.nnz,
                         chunk_links=links, dropped_common=dropped, bytes=size, build_seconds=round(seconds, 3),
                         format=GRAPH_FORMAT)


def save_graph(graph: EntityGraph, directory: Path) -> int:
    """Write the graph's files (format 2); returns their size in bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.npz"):  # a format-1 graph rebuilt in place
        stale.unlink()
    graph.mentions.save(directory, ENTITY_CHUNK)
    graph.mentioned.save(directory, CHUNK_ENTITY)
    graph.links.save(directory, CHUNK_CHUNK)
    freq = graph.entity_frequency().tolist()
    rows = [[k, kind, int(f)] for k, kind, f in zip(graph.keys, graph.kinds, freq)]
    (directory / ENTITIES).write_text(json.dumps(rows, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    (directory / CHUNK_IDS).write_text(json.dumps(list(graph.chunk_ids), ensure_ascii=False, separators=(",", ":")),
                                       encoding="utf-8")
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


def load_graph(
    directory: Path,
    *,
    chunk_id: Callable[[int], str] | None = None,
    chunk_position: Callable[[str], int | None] | None = None,
) -> EntityGraph:
    """Open a graph written by :func:`save_graph` (arrays memory-mapped); :class:`IndexLoadError` when
    it is damaged or of format 1. ``chunk_id`` / ``chunk_position``: the index's own lookups between
    chunk positions and ids (then ``chunk_ids.json`` is not read)."""
    if (directory / _FORMAT1_FILE).is_file() and not CsrArrays.present(directory, ENTITY_CHUNK):
        raise IndexLoadError(f"{directory}: the entity graph is of format 1 (scipy .npz files), which the graph hop no "
                             f"longer reads. Fix: {GRAPH_FIX}")
    try:
        rows = json.loads((directory / ENTITIES).read_text(encoding="utf-8"))
        keys = tuple(str(r[0]) for r in rows)
        kinds = tuple(str(r[1]) for r in rows)
        mentioned_ptr = load_npy(directory / f"{CHUNK_ENTITY}.indptr.npy")
        n = len(mentioned_ptr) - 1
        mentions = CsrArrays.load(directory, ENTITY_CHUNK, n, ones=True)
        mentioned = CsrArrays.load(directory, CHUNK_ENTITY, len(keys), ones=True)
        links = CsrArrays.load(directory, CHUNK_CHUNK, n, ones=False)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise IndexLoadError(f"{directory}: entity graph unreadable ({exc}). Fix: {GRAPH_FIX}") from None
    if mentions.shape[0] != len(keys) or links.shape[0] != n or mentions.nnz != mentioned.nnz:
        raise IndexLoadError(
            f"{directory}: entity graph arrays {mentions.shape} / {mentioned.shape} / {links.shape} do not fit "
            f"{len(keys)} entities and {n} chunks. Fix: {GRAPH_FIX}"
        )
    ids: Sequence[str] = ChunkIdsByPosition(chunk_id, n) if chunk_id is not None else StoredChunkIds(directory / CHUNK_IDS, n, GRAPH_FIX)
    return EntityGraph(keys=keys, kinds=kinds, mentions=mentions, mentioned=mentioned, links=links, chunk_ids=ids,
                       chunk_position=chunk_position)


def open_graph(
    index_dir: Path,
    info: GraphInfo | None,
    chunk_count: int,
    *,
    chunk_id: Callable[[int], str] | None = None,
    chunk_position: Callable[[str], int | None] | None = None,
) -> EntityGraph | None:
    """The graph of an index directory whose manifest records ``info`` (``None``: built without one);
    ``chunk_id`` / ``chunk_position`` are the index's lookups (its chunk order is the graph's columns)."""
    if info is None:
        return None
    if info.format != GRAPH_FORMAT:
        raise IndexLoadError(f"{index_dir}: the entity graph is of format {info.format}; this version reads format "
                             f"{GRAPH_FORMAT}. Fix: {GRAPH_FIX}")
    graph = load_graph(index_dir / info.directory, chunk_id=chunk_id, chunk_position=chunk_position)
    if graph.n_chunks != chunk_count:
        raise IndexLoadError(
            f"{index_dir}: the entity graph covers {graph.n_chunks} chunks, the index holds {chunk_count}. "
            f"Fix: {GRAPH_FIX}"
        )
    return graph
