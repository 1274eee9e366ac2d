"""Building the entity graph while an index streams its corpus (:class:`GraphBuilder`), and from a
list of chunks at once (:func:`build_entity_graph`). What the graph holds, its files and loading are
:mod:`hoprag.index.entity_graph`'s."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from hoprag.index.entities import SHAPE_KINDS, mention_of, spans_by_kind, title_heads, title_key, titles_inside
from hoprag.index.entity_graph import GRAPH_DIR, EntityGraph, GraphConfig, GraphInfo, _sparse, save_graph
from hoprag.index.graph_arrays import CsrArrays
from hoprag.records import Chunk, Document

__all__ = ["GraphBuilder", "build_entity_graph"]


class _RawMemo(dict):  # type: ignore[type-arg]
    """raw span -> mention id (-1: names nothing) for one kind; a new span is resolved once, when first
    seen. Starts afresh past ``LIMIT`` spans, which bounds its memory (ids stay: they live in the builder)."""

    LIMIT = 1 << 20

    def __init__(self, resolve: Callable[[str, str], int], kind: str) -> None:
        super().__init__()
        self._resolve, self._kind = resolve, kind

    def __missing__(self, raw: str) -> int:
        if len(self) >= self.LIMIT:
            self.clear()
        found = self[raw] = self._resolve(raw, self._kind)
        return found


class GraphBuilder:
    """Builds the graph while the index streams its corpus: :meth:`add` each document's chunks in index
    order, then :meth:`finish`. ``seconds`` counts the time spent here.

    Only compact arrays grow with the corpus: each distinct mention (key and, for a multi-word name,
    its words) gets an id when first seen, and a chunk is the run of its mention ids in one flat array.
    Titles inside longer names are looked up at the end, once per distinct name, when every document
    title is known; the matrices are then assembled with numpy from the flat arrays."""

    def __init__(self, config: GraphConfig | None = None) -> None:
        self.config = config or GraphConfig()
        self.seconds = 0.0
        self._chunk_ids: list[str] = []
        self._titles: set[str] = set()
        self._key_ids: dict[str, int] = {}  # entity key -> id, in order of first mention
        self._key_kinds: list[str] = []  # the kind of each key's first mention
        self._mention_ids: dict[tuple[str, tuple[str, ...]], int] = {}  # (key, words) -> mention id
        self._mention_keys = array("q")  # mention id -> key id
        self._mention_words: list[tuple[str, ...]] = []
        self._named: list[int] = []  # mentions of multi-word names, where titles are looked up inside
        self._raw = {kind: _RawMemo(self._resolve, kind) for kind in SHAPE_KINDS}
        self._mentions = array("i")  # every chunk's mention ids (-1: a span naming nothing), chunk after chunk
        self._ends = array("q")  # per chunk: where its run in ``_mentions`` ends

    def add(self, chunks: Sequence[Chunk], title: str) -> None:
        start = time.perf_counter()
        key = title_key(title) if title else ""
        if key:
            self._titles.add(key)
        own = self._mention(key, "title", ()) if key and chunks else -1
        memos, mentions, ends, chunk_ids = self._raw, self._mentions, self._ends, self._chunk_ids
        for chunk in chunks:
            if own >= 0:
                mentions.append(own)
            for kind, raws in spans_by_kind(chunk.text):
                mentions.extend(map(memos[kind].__getitem__, raws))  # a new raw span: _RawMemo.__missing__
            ends.append(len(mentions))
            chunk_ids.append(chunk.id)
        self.seconds += time.perf_counter() - start

    def _resolve(self, raw: str, kind: str) -> int:
        mention = mention_of(raw, kind)
        return -1 if mention is None else self._mention(*mention)

    def _mention(self, key: str, kind: str, words: tuple[str, ...]) -> int:
        found = self._mention_ids.get((key, words))
        if found is None:
            found = self._mention_ids[(key, words)] = len(self._mention_words)
            self._mention_keys.append(self._key(key, kind))
            self._mention_words.append(words)
            if len(words) > 1:
                self._named.append(found)
        return found

    def _key(self, key: str, kind: str) -> int:
        found = self._key_ids.get(key)
        if found is None:
            found = self._key_ids[key] = len(self._key_kinds)
            self._key_kinds.append(kind)
        return found

    def build(self) -> tuple[EntityGraph, int]:
        """The graph, and how many common entities were dropped."""
        start = time.perf_counter()
        sparse = _sparse()
        pairs = self._chunk_key_pairs()
        n = len(self._chunk_ids)
        keys = np.asarray(list(self._key_ids), dtype=object)
        chunk_of = pairs // len(keys) if len(keys) else pairs
        key_of = pairs % len(keys) if len(keys) else pairs
        df = np.bincount(key_of, minlength=len(keys))
        cap = max(self.config.min_cap, int(self.config.max_share * n))
        kept = np.flatnonzero((df >= 1) & (df <= cap))
        kept = kept[sorted(range(kept.size), key=keys[kept].__getitem__)]  # rows in key order
        row_of = np.full(len(keys), -1, dtype=np.int64)
        row_of[kept] = np.arange(kept.size)
        rows = row_of[key_of]
        keep = rows >= 0
        order = np.lexsort((chunk_of[keep], rows[keep]))
        indices = chunk_of[keep][order].astype(np.int32)
        indptr = np.zeros(kept.size + 1, dtype=np.int32)
        np.cumsum(np.bincount(rows[keep], minlength=kept.size), out=indptr[1:])
        entity_chunk = sparse.csr_matrix((np.ones(indices.size, dtype=np.float32), indices, indptr),
                                         shape=(kept.size, n))
        freq = np.diff(entity_chunk.indptr)
        rare = (freq >= 2) & (freq <= self.config.link_max_chunks)
        weights = np.where(rare, 1.0 / np.maximum(freq - 1, 1), 0.0).astype(np.float32)
        chunk_chunk = (entity_chunk.T.tocsr() @ (sparse.diags(weights) @ entity_chunk)).tocsr()
        chunk_chunk.setdiag(0)
        chunk_chunk.eliminate_zeros()
        chunk_chunk = chunk_chunk.astype(np.float32)
        chunk_chunk.sort_indices()
        # a key that is a document title is kind "title" wherever it is mentioned; any other keeps
        # the kind of its first mention
        titles = self._titles
        kinds = tuple("title" if keys[k] in titles else self._key_kinds[k] for k in kept.tolist())
        graph = EntityGraph(keys=tuple(keys[kept].tolist()), kinds=kinds, mentions=CsrArrays.from_scipy(entity_chunk, ones=True),
                            mentioned=CsrArrays.from_scipy(entity_chunk.T.tocsr(), ones=True),
                            links=CsrArrays.from_scipy(chunk_chunk), chunk_ids=tuple(self._chunk_ids))
        self.seconds += time.perf_counter() - start
        return graph, int(np.count_nonzero(df > cap))

    def _chunk_key_pairs(self) -> np.ndarray:
        """``chunk * keys + key`` for every (chunk, entity key) the corpus holds, sorted, unique: each
        mention stands for its key, a multi-word name also for the document titles inside it."""
        titles = frozenset(self._titles)
        heads = title_heads(titles)
        inside: dict[tuple[str, ...], tuple[int, ...]] = {}
        sub_counts = np.zeros(len(self._mention_words), dtype=np.int64)
        subs: list[int] = []
        for mention in self._named if titles else ():
            words = self._mention_words[mention]
            found = inside.get(words)
            if found is None:
                found = inside[words] = tuple(self._key(t, "title") for t in titles_inside(words, titles, heads))
            sub_counts[mention] = len(found)
            subs.extend(found)
        width = len(self._key_ids)
        mentions = np.frombuffer(self._mentions, dtype=np.int32) if self._mentions else np.zeros(0, np.int32)
        ends = np.frombuffer(self._ends, dtype=np.int64) if self._ends else np.zeros(0, np.int64)
        chunks = np.repeat(np.arange(ends.size, dtype=np.int64), np.diff(ends, prepend=0))
        naming = mentions >= 0
        mentions, chunks = mentions[naming], chunks[naming]
        keys = np.frombuffer(self._mention_keys, dtype=np.int64) if self._mention_keys else np.zeros(0, np.int64)
        pairs = [chunks * width + keys[mentions]]
        if subs:
            named = sub_counts[mentions] > 0
            mentions, chunks = mentions[named], chunks[named]
            per = sub_counts[mentions]
            first = (np.cumsum(sub_counts) - sub_counts)[mentions]
            at = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(np.cumsum(per) - per - first, per)
            pairs.append(np.repeat(chunks, per) * width + np.asarray(subs, dtype=np.int64)[at])
        flat = np.sort(np.concatenate(pairs))
        return flat[np.concatenate(([True], flat[1:] != flat[:-1]))] if flat.size else flat

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
