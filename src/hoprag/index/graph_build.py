"""Building the entity graph while an index streams its corpus (:class:`GraphBuilder`), and from a
list of chunks at once (:func:`build_entity_graph`). What the graph holds, its files and loading are
:mod:`hoprag.index.entity_graph`'s."""

from __future__ import annotations

import json
import time
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.index.analysis import ANALYSIS_DIR, MENTION_ENDS, MENTION_STREAM, MENTIONS, save_common
from hoprag.index.entities import SHAPE_KINDS, mention_of, spans_by_kind, title_heads, title_key, titles_inside
from hoprag.index.entity_graph import GRAPH_DIR, EntityGraph, GraphConfig, GraphInfo, save_graph
from hoprag.index.graph_arrays import CsrArrays
from hoprag.records import Chunk, Document

__all__ = ["GraphBuilder", "MentionTable", "build_entity_graph", "chunk_links", "csr_indptr", "first_seen", "transpose_ones"]


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


@dataclass(frozen=True)
class MentionTable:
    """A builder's mentions (:meth:`GraphBuilder.table`): views of its arrays, valid until it adds chunks.
    ``key_ids`` is the builder's own table (entity key -> id), which :meth:`GraphBuilder.key` extends."""

    titles: set[str]  # the document title keys
    key_ids: dict[str, int]
    mention_keys: np.ndarray  # mention id -> key id
    mention_words: list[tuple[str, ...]]  # mention id -> the words of a multi-word name, else ()
    mention_kinds: list[str]
    named: list[int]  # the mentions of multi-word names
    stream: np.ndarray  # every chunk's mention ids (-1: a span naming nothing), chunk after chunk
    ends: np.ndarray  # per chunk: where its run in ``stream`` ends


class GraphBuilder:
    """Builds the graph while the index streams its corpus: :meth:`add` each document's chunks in index
    order, then :meth:`finish`. ``seconds`` counts the time spent here.

    Only compact arrays grow with the corpus: each distinct mention (key and, for a multi-word name,
    its words) gets an id when first seen, and a chunk is the run of its mention ids in one flat array.
    Titles inside longer names are looked up at the end, once per distinct name, when every document
    title is known; the matrices are then assembled with numpy from the flat arrays, without scipy:
    keys are ranked in string order first, so the sorted (chunk, key rank) pairs are already the
    chunks' entity rows in order, and the links sum each pair's float32 weights in the order a
    sparse product would (the files are those the scipy assembly wrote, byte for byte)."""

    def __init__(self, config: GraphConfig | None = None) -> None:
        self.config = config or GraphConfig()
        self.seconds = 0.0
        self._chunk_ids: list[str] = []
        self._titles: set[str] = set()
        self._key_ids: dict[str, int] = {}  # entity key -> id, in order of first mention
        self._mention_ids: dict[tuple[str, str, tuple[str, ...]], int] = {}  # (key, kind, words) -> mention id
        #: a resumed builder's saved mention table (its JSON text, its rows), written again as a prefix
        self._saved_table: tuple[str, int] | None = None
        self._saved_stream = 0  # how much of ``_mentions`` is that builder's saved stream, unchanged
        self._mention_keys = array("q")  # mention id -> key id
        self._mention_kinds: list[str] = []
        self._mention_words: list[tuple[str, ...]] = []
        self._named: list[int] = []  # mentions of multi-word names, where titles are looked up inside
        self._raw = {kind: _RawMemo(self._resolve, kind) for kind in SHAPE_KINDS}
        self._mentions = array("i")  # every chunk's mention ids (-1: a span naming nothing), chunk after chunk
        self._ends = array("q")  # per chunk: where its run in ``_mentions`` ends
        #: ``[key, chunks]`` of each entity left out as common, in key order (set by :meth:`build`)
        self.common: list[list[Any]] = []

    def add(self, chunks: Sequence[Chunk], title: str) -> None:
        """One document's chunks, in index order, and its title."""
        self.add_texts([c.id for c in chunks], [c.text for c in chunks], title)

    def add_texts(self, ids: Sequence[str], texts: Sequence[str], title: str) -> None:
        """:meth:`add` given the chunks' ids and texts (what a worker process receives)."""
        start = time.perf_counter()
        key = title_key(title) if title else ""
        if key:
            self._titles.add(key)
        own = self._mention(key, "title", ()) if key and texts else -1
        memos, mentions, ends = self._raw, self._mentions, self._ends
        for text in texts:
            if own >= 0:
                mentions.append(own)
            for kind, raws in spans_by_kind(text):
                mentions.extend(map(memos[kind].__getitem__, raws))  # a new raw span: _RawMemo.__missing__
            ends.append(len(mentions))
        self._chunk_ids.extend(ids)
        self.seconds += time.perf_counter() - start

    def _resolve(self, raw: str, kind: str) -> int:
        mention = mention_of(raw, kind)
        return -1 if mention is None else self._mention(*mention)

    def _mention(self, key: str, kind: str, words: tuple[str, ...]) -> int:
        found = self._mention_ids.get((key, kind, words))
        if found is None:
            found = self._mention_ids[(key, kind, words)] = len(self._mention_words)
            self._mention_keys.append(self.key(key))
            self._mention_kinds.append(kind)
            self._mention_words.append(words)
            if len(words) > 1:
                self._named.append(found)
        return found

    def key(self, key: str) -> int:
        """The id of entity ``key`` (a new id when first seen)."""
        found = self._key_ids.get(key)
        if found is None:
            found = self._key_ids[key] = len(self._key_ids)
        return found

    def table(self) -> MentionTable:
        """What the builder holds of its chunks' mentions, as read by an update in place."""
        keys = np.frombuffer(self._mention_keys, dtype=np.int64) if self._mention_keys else np.zeros(0, np.int64)
        ends = np.frombuffer(self._ends, dtype=np.int64) if self._ends else np.zeros(0, np.int64)
        return MentionTable(self._titles, self._key_ids, keys, self._mention_words, self._mention_kinds, self._named,
                            self._stream(), ends)

    def build(self) -> tuple[EntityGraph, int]:
        """The graph, and how many common entities were dropped."""
        start = time.perf_counter()
        subs, sub_counts = self._titles_inside_names()  # may add keys: before the keys are ranked
        keys = list(self._key_ids)
        # every key's place in string order: entity rows are kept keys in that order, so (chunk, rank)
        # pairs in sorted order are the chunks' entity rows in sorted order too
        by_name = sorted(range(len(keys)), key=keys.__getitem__)
        rank = np.empty(len(keys), dtype=np.int64)
        rank[by_name] = np.arange(len(keys), dtype=np.int64)
        width = max(len(keys), 1)
        pairs = self._chunk_rank_pairs(rank, width, subs, sub_counts)
        n = len(self._chunk_ids)
        chunk_of, rank_of = np.divmod(pairs, width)
        df = np.bincount(rank_of, minlength=len(keys))
        cap = max(self.config.min_cap, int(self.config.max_share * n))
        kept = (df >= 1) & (df <= cap)
        common = np.flatnonzero(df > cap)  # ranks: in key order
        self.common = [[keys[by_name[r]], int(df[r])] for r in common.tolist()]
        row_of = np.cumsum(kept) - 1  # rank -> entity row (where kept)
        keep = kept[rank_of]
        chunks, rows = chunk_of[keep], row_of[rank_of[keep]]
        del pairs, chunk_of, rank_of, keep  # a build's peak memory: gone before the matrices are made
        entities = int(np.count_nonzero(kept))
        mentioned = CsrArrays(csr_indptr(chunks, n), rows.astype(np.int32), None, (n, entities))
        mentions = transpose_ones(mentioned, chunks, rows)
        del chunks, rows
        # a key that is a document title is kind "title" wherever it is mentioned; any other keeps
        # the kind of its first mention in chunk order
        titles = self._titles
        ids = np.asarray(by_name, dtype=np.int64)[kept].tolist() if by_name else []
        names, first_kinds = [keys[k] for k in ids], self._first_kinds(len(keys))
        kinds = tuple("title" if key in titles else first_kinds[k] for key, k in zip(names, ids))
        graph = EntityGraph(keys=tuple(names), kinds=kinds, mentions=mentions, mentioned=mentioned,
                            links=chunk_links(mentions, n, self.config.link_max_chunks), chunk_ids=tuple(self._chunk_ids))
        self.seconds += time.perf_counter() - start
        return graph, int(np.count_nonzero(df > cap))

    def _titles_inside_names(self) -> tuple[list[int], np.ndarray]:
        """The document titles inside each multi-word name (looked up once per distinct name), flat in
        mention order, and how many each mention has."""
        titles = frozenset(self._titles)
        heads = title_heads(titles)
        clear = heads.isdisjoint  # a run can only be a title if it starts with a title's first word
        inside: dict[tuple[str, ...], tuple[int, ...]] = {}
        named: list[int] = []
        counts: list[int] = []
        subs: list[int] = []
        all_words = self._mention_words
        for mention in self._named if titles else ():
            words = all_words[mention]
            if clear(words):
                continue
            found = inside.get(words)
            if found is None:
                found = inside[words] = tuple(self.key(t) for t in titles_inside(words, titles, heads))
            if found:
                named.append(mention)
                counts.append(len(found))
                subs.extend(found)
        sub_counts = np.zeros(len(all_words), dtype=np.int64)
        sub_counts[np.asarray(named, dtype=np.int64)] = counts
        return subs, sub_counts

    def _first_kinds(self, count: int) -> list[str]:
        """Each key's kind where the chunks first mention it ("title" for a key only found inside names).

        Read from the chunks' mentions in order, not from when a key was first seen: an update that
        keeps some chunks' mentions and drops others' (:mod:`hoprag.index.graph_state`) then gives
        each key the kind a build of the same chunks gives it."""
        kinds = ["title"] * count
        mentions = self._stream()
        mentions = mentions[mentions >= 0]
        if mentions.size:
            keys = np.frombuffer(self._mention_keys, dtype=np.int64)[mentions]
            first = first_seen(keys, count)
            found = np.flatnonzero(first < keys.size)
            names = self._mention_kinds
            for key, mention in zip(found.tolist(), mentions[first[found]].tolist()):
                kinds[key] = names[mention]
        return kinds

    def _stream(self) -> np.ndarray:
        """Every chunk's mention ids, chunk after chunk (-1: a span naming nothing)."""
        return np.frombuffer(self._mentions, dtype=np.int32) if self._mentions else np.zeros(0, np.int32)

    def _chunk_rank_pairs(self, rank: np.ndarray, width: int, subs: list[int], sub_counts: np.ndarray) -> np.ndarray:
        """``chunk * width + rank`` for every (chunk, entity key) the corpus holds, sorted, unique: each
        mention stands for its key, a multi-word name also for the document titles inside it."""
        mentions = self._stream()
        ends = np.frombuffer(self._ends, dtype=np.int64) if self._ends else np.zeros(0, np.int64)
        chunks = np.repeat(np.arange(ends.size, dtype=np.int64), np.diff(ends, prepend=0))
        naming = mentions >= 0
        mentions, chunks = mentions[naming], chunks[naming]
        keys = np.frombuffer(self._mention_keys, dtype=np.int64) if self._mention_keys else np.zeros(0, np.int64)
        own = chunks * width
        own += rank[keys[mentions]]  # in place: each int64 temporary is a build's peak at scale
        pairs = [own]
        if subs:
            named = sub_counts[mentions] > 0
            mentions, chunks = mentions[named], chunks[named]
            per = sub_counts[mentions]
            first = (np.cumsum(sub_counts) - sub_counts)[mentions]
            at = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(np.cumsum(per) - per - first, per)
            pairs.append(np.repeat(chunks, per) * width + rank[np.asarray(subs, dtype=np.int64)[at]])
        flat = np.concatenate(pairs) if len(pairs) > 1 else own
        del pairs, own, chunks, mentions
        flat.sort()
        return flat[np.concatenate(([True], flat[1:] != flat[:-1]))] if flat.size else flat

    def finish(self, index_dir: Path) -> GraphInfo:
        """Build the graph and write it into ``index_dir/graph``, and the mentions it was built from into
        ``index_dir/analysis`` (what an update resumes from); the manifest's record of the graph."""
        graph, dropped = self.build()
        start = time.perf_counter()
        size = save_graph(graph, index_dir / GRAPH_DIR)
        self.save_mentions(index_dir / ANALYSIS_DIR)
        save_common(index_dir / ANALYSIS_DIR, self.common)
        self.seconds += time.perf_counter() - start
        return graph.info(size=size, seconds=self.seconds, dropped=dropped, config=self.config)

    def save_mentions(self, directory: Path) -> None:
        """Every chunk's mentions (ids into a table of ``[key, kind, words]``: those still used, numbered by
        first occurrence, as a build numbers them, so an update writes what a build of its corpus writes)."""
        stream = self._stream()
        saved, kept = self._saved_table or ("[]", 0)
        # resumed with every saved chunk: the stream starts with the saved one, whose mentions are the saved
        # rows in order (what this method wrote), so only the new chunks' run is searched for new mentions
        start, offset = (self._saved_stream, kept) if self._saved_stream and kept else (0, 0)
        naming = stream[start:]
        naming = naming[naming >= offset] - offset
        first = first_seen(naming, len(self._mention_words) - offset)
        used = np.flatnonzero(first < naming.size)
        used = used[np.argsort(first[used])] + offset  # first positions are distinct: the order is the build's
        if offset:
            used = np.concatenate((np.arange(offset, dtype=used.dtype), used))
        remap = np.full(len(self._mention_words) + 1, -1, dtype=np.int32)  # the extra slot maps -1 to -1
        remap[used] = np.arange(used.size, dtype=np.int32)
        keys = list(self._key_ids)
        key_of = self._mention_keys.tolist()  # Python ints: indexing an array element by element is slow
        kinds, words = self._mention_kinds, self._mention_words
        if not (used.size >= kept and np.array_equal(used[:kept], np.arange(kept))):
            saved, kept = "[]", 0  # rows were dropped or moved: the table is written whole
        rows = [[keys[key_of[m]], kinds[m], list(words[m])] for m in used[kept:].tolist()]
        text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
        if kept:  # an update that only added: the saved rows, as json.dumps wrote them, then the new ones
            text = saved[:-1] + ("," + text[1:] if rows else "]")
        directory.mkdir(parents=True, exist_ok=True)
        (directory / MENTIONS).write_text(text, encoding="utf-8")
        same = used.size == len(words) and bool((used[offset:] == np.arange(offset, used.size)).all())
        np.save(directory / MENTION_STREAM, stream if same else remap[stream], allow_pickle=False)
        ends = np.frombuffer(self._ends, dtype=np.int64) if self._ends else np.zeros(0, np.int64)
        np.save(directory / MENTION_ENDS, ends, allow_pickle=False)

    @classmethod
    def resumed(cls, directory: Path, config: GraphConfig, keep: np.ndarray, chunk_ids: Sequence[str],
                titles: Iterable[str]) -> GraphBuilder:
        """A builder holding the saved mentions (:meth:`save_mentions`) of the chunks ``keep`` (a mask over
        the saved chunks) in their order, whose ids are ``chunk_ids``, and the document ``titles`` (keys)
        of the corpus; :meth:`add` then appends new chunks as a build would. ``ValueError``/``OSError``
        when the files are missing or do not fit."""
        saved = (directory / MENTIONS).read_text(encoding="utf-8")
        rows = json.loads(saved)
        stream = np.load(directory / MENTION_STREAM, allow_pickle=False)
        ends = np.load(directory / MENTION_ENDS, allow_pickle=False)
        if ends.shape != keep.shape or (ends.size and int(ends[-1]) != stream.size) or int(keep.sum()) != len(chunk_ids):
            raise ValueError("the saved mentions do not fit the index's chunks")
        builder = cls(config)
        builder._saved_table = (saved, len(rows))
        builder._saved_stream = int(stream.size) if keep.all() else 0
        # the table as _mention would grow it row by row (its rows are distinct), built in bulk
        mention_words = [tuple(words) for _, _, words in rows]
        builder._mention_words = mention_words
        builder._mention_kinds = [kind for _, kind, _ in rows]
        builder._mention_ids = {(key, kind, words): i for i, ((key, kind, _), words) in enumerate(zip(rows, mention_words))}
        key_ids = builder._key_ids
        builder._mention_keys = array("q", [key_ids.setdefault(key, len(key_ids)) for key, _, _ in rows])
        builder._named = [i for i, words in enumerate(mention_words) if len(words) > 1]
        if keep.all():  # every saved chunk stays: the saved arrays as they are, no mask over every mention
            builder._mentions.frombytes(np.ascontiguousarray(stream, dtype=np.int32).data.cast("B"))
            builder._ends.frombytes(np.ascontiguousarray(ends, dtype=np.int64).data.cast("B"))
        else:
            runs = np.diff(ends, prepend=0)
            builder._mentions = array("i", stream[np.repeat(keep, runs)].astype(np.int32).tobytes())
            builder._ends = array("q", np.cumsum(runs[keep]).astype(np.int64).tobytes())
        builder._chunk_ids = list(chunk_ids)
        builder._titles = {t for t in titles if t}
        return builder


def build_entity_graph(
    chunks: Sequence[Chunk], documents: Mapping[str, Document], config: GraphConfig | None = None
) -> tuple[EntityGraph, int]:
    """The graph of ``chunks`` (in index order) and how many common entities were dropped."""
    builder = GraphBuilder(config)
    for chunk in chunks:
        document = documents.get(chunk.doc_id)
        builder.add([chunk], document.title if document else "")
    return builder.build()


def csr_indptr(rows: np.ndarray, count: int) -> np.ndarray:
    """CSR row pointers (int32) of entries whose rows, in stored order, are ``rows``."""
    indptr = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=count), out=indptr[1:])
    return indptr


def first_seen(values: np.ndarray, count: int) -> np.ndarray:
    """Per value in ``range(count)``: where it first occurs in ``values`` (``values.size`` if nowhere);
    ``np.unique(return_index=True)`` without its sort."""
    first = np.full(count, values.size, dtype=np.int64)
    np.minimum.at(first, values.astype(np.intp, copy=False), np.arange(values.size, dtype=np.int64))
    return first


def transpose_ones(matrix: CsrArrays, rows: np.ndarray, columns: np.ndarray) -> CsrArrays:
    """The transpose of a values-1 ``matrix`` whose entries, in stored order, are (``rows``,
    ``columns``): a stable sort by column keeps each new row's entries in ascending order."""
    # a stable sort of small integers is a radix sort in numpy: far faster than a merge sort of int64
    narrow = columns.astype(np.uint16) if matrix.shape[1] <= 1 << 16 else columns
    order = np.argsort(narrow, kind="stable")
    return CsrArrays(csr_indptr(columns, matrix.shape[1]), rows[order].astype(np.int32), None,
                     (matrix.shape[1], matrix.shape[0]))


def chunk_links(mentions: CsrArrays, n: int, link_max_chunks: int) -> CsrArrays:
    """chunks × chunks: each pair of the chunks of an entity held by 2..``link_max_chunks`` chunks gets
    ``1 / (df - 1)``, summed over the entities the two share in ascending entity order, in float32,
    so every sum is the one the sparse product ``Eᵀ · diag(w) · E`` makes (no diagonal, no zeros)."""
    freq = np.diff(mentions.indptr).astype(np.int64)
    rare = np.flatnonzero((freq >= 2) & (freq <= link_max_chunks))
    weights = (1.0 / np.maximum(freq[rare] - 1, 1)).astype(np.float32)
    sizes = freq[rare]
    # every ordered pair (i, j) of each rare entity's chunks, entity after entity
    owner = np.repeat(np.arange(rare.size, dtype=np.int64), sizes * sizes)
    base = np.repeat(mentions.indptr[rare].astype(np.int64), sizes * sizes)
    local = np.arange(owner.size, dtype=np.int64) - np.repeat(np.cumsum(sizes * sizes) - sizes * sizes, sizes * sizes)
    size = sizes[owner]
    first = mentions.indices[base + local // size].astype(np.int64)
    second = mentions.indices[base + local % size].astype(np.int64)
    off = first != second
    first, second, values = first[off], second[off], weights[owner[off]]
    cell = first * max(n, 1) + second
    order = np.argsort(cell, kind="stable")  # entities stay ascending within each cell
    cell, values = cell[order], values[order]
    starts = np.concatenate(([True], cell[1:] != cell[:-1])) if cell.size else np.zeros(0, dtype=bool)
    group = np.cumsum(starts) - 1
    step = np.arange(cell.size, dtype=np.int64) - np.flatnonzero(starts)[group]
    sums = np.zeros(int(starts.sum()), dtype=np.float32)
    for k in range(int(step.max()) + 1 if step.size else 0):  # one addition per shared entity, in order
        at = step == k
        sums[group[at]] += values[at]
    cells = cell[starts]
    return CsrArrays(csr_indptr(cells // max(n, 1), n), (cells % max(n, 1)).astype(np.int32), sums, (n, n))
