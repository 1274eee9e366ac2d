"""An index update's entity graph, changed in place from the old graph (:class:`IncrementalGraph`)
rather than rebuilt from every kept mention: the same files a build of the updated corpus writes.

What the graph is made of, and which part a delta touches (the rules are
:meth:`hoprag.index.graph_build.GraphBuilder.build`'s):

- local: a chunk's entity keys (its mentions' keys, and the document titles inside its multi-word
  names). Only removed and new chunks change them — and the kept chunks' titles-inside pairs for a
  title the update adds or takes away, recounted from the saved mentions for those titles alone;
- per key: its chunk count (df). An update keeps every key's count — the graph's ``entities.json``
  for the kept entities, ``analysis/common_entities.json`` for those left out as common — and adds
  the new chunks' keys and takes off the removed chunks';
- global: the cap on a key's count (``max(min_cap, max_share × chunks)``) and so which keys are
  entities, their order (key order), the entity rows, each key's kind (a title, else the kind of
  its first mention in chunk order), and the chunk links. These are recomputed from the counts, in
  numpy: the kept chunks' entity rows are the old rows renumbered (every map is monotone, so they
  stay in order), the new chunks' rows follow, and the transpose and links are made from them as a
  build makes them (an update that only adds chunks extends both old matrices instead:
  :mod:`hoprag.index.graph_append`). A key that comes back under the cap (a common entity whose
  count fell, or the cap rose past it) has its kept chunks found in the saved mentions, like a changed title.

The update runs in a fork of the updating process on Linux with two cores (:mod:`hoprag.index.graph_fork`),
else in the updating process (the saved mentions read in a thread, the graph changed in a thread beside
the BM25 work) — no worker to start — when the documents added and the chunks removed are at most
:data:`INCREMENTAL_MAX_SHARE` of the index's chunks and fewer than
:data:`~hoprag.index.graph_worker.WORKER_MIN_CHUNKS` documents are added; otherwise, or when the index
lacks the common entities' counts (built before they were kept, with common entities), the graph
worker rebuilds the graph from every kept mention (:meth:`GraphWorker.resume`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hoprag.errors import IndexLoadError
from hoprag.index.analysis import ANALYSIS_DIR, COMMON, MENTION_ENDS, MENTION_STREAM, save_common
from hoprag.index.entities import title_heads, titles_inside
from hoprag.index.entity_graph import CHUNK_CHUNK, CHUNK_ENTITY, ENTITIES, ENTITY_CHUNK, GRAPH_DIR, GraphInfo
from hoprag.index.bm25_arrays import sorted_unique
from hoprag.index.graph_append import appended_matrices, entities_json, entity_pairs, write_chunk_ids
from hoprag.index.graph_arrays import GRAPH_FORMAT, CsrArrays
from hoprag.index import graph_worker
from hoprag.index.graph_build import GraphBuilder, chunk_links, csr_indptr, first_seen, transpose_ones
from hoprag.index.graph_worker import GraphWorker
from hoprag.index.npy_map import load_npy
from hoprag.records import Chunk

if TYPE_CHECKING:
    from hoprag.index.corpus_db import CorpusDB

__all__ = ["INCREMENTAL_MAX_SHARE", "IncrementalGraph", "graph_for_update"]

#: a (chunk, key) pair is ``chunk << _SHIFT | key``: sorted pairs are sorted by chunk, then key id
_SHIFT = 31
_KEY_MASK = (1 << _SHIFT) - 1
_NONE = np.zeros(0, dtype=np.int64)

#: the largest delta (documents added plus chunks removed, as a share of the index's chunks) whose graph
#: is changed in place: past half the index most of the graph changes anyway, and the worker scans the
#: many new chunks in a second process while the update tokenises them
INCREMENTAL_MAX_SHARE = 0.5


def graph_for_update(index_dir: Path, info: GraphInfo, keep_chunks: np.ndarray, keep_docs: np.ndarray, db: CorpusDB,
                     added_documents: int, in_place: Any = None) -> Any:
    """The graph of an update of the index in ``index_dir`` (whose manifest records ``info``): changed
    in place when the delta is small and the index keeps every key's count (by ``in_place(index_dir,
    info, keep_chunks, keep_docs, db)``, :class:`IncrementalGraph` by default), else rebuilt by a worker."""
    removed = int(keep_chunks.size - np.count_nonzero(keep_chunks))
    small = (added_documents + removed <= INCREMENTAL_MAX_SHARE * max(keep_chunks.size, 1)
             and added_documents < graph_worker.WORKER_MIN_CHUNKS)  # read at each call, as the worker reads it
    counted = info.dropped_common == 0 or (index_dir / ANALYSIS_DIR / COMMON).is_file()
    if small and counted and info.format == GRAPH_FORMAT and np.count_nonzero(keep_chunks):
        return (in_place or IncrementalGraph)(index_dir, info, keep_chunks, keep_docs, db)
    worker = GraphWorker(info.config)
    worker.resume(index_dir, keep_chunks, keep_docs, db)
    return worker


class IncrementalGraph:
    """:class:`GraphWorker`'s interface for an update whose graph is changed in place (module doc):
    :meth:`add` the new documents' chunks in index order, then :meth:`finish`."""

    peak_rss_mb: float | None = None
    in_worker = False

    def __init__(self, index_dir: Path, info: GraphInfo, keep_chunks: np.ndarray, keep_docs: np.ndarray,
                 db: CorpusDB) -> None:
        self.index_dir, self.info, self.keep = index_dir, info, keep_chunks
        self.kept = int(np.count_nonzero(keep_chunks))
        kept_titles = db.title_keys(keep_docs)
        removed_docs = not bool(keep_docs.all())
        self.old_titles = {t for t in (db.title_keys(np.ones_like(keep_docs)) if removed_docs else kept_titles) if t}
        # read in a thread while the update copies the kept rows (a file copy, without the interpreter
        # lock); the chunk ids are written here from the old graph's list, the builder's copy is never read
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hoprag-graph-update")
        self._resuming: Future[GraphBuilder] | None = self._pool.submit(
            GraphBuilder.resumed, index_dir / ANALYSIS_DIR, info.config, keep_chunks, [""] * self.kept, kept_titles)
        self._builder: GraphBuilder | None = None
        self._writing: Future[GraphInfo] | None = None
        self.new_ids: list[str] = []

    @property
    def builder(self) -> GraphBuilder:
        if self._builder is None:
            resuming, self._resuming = self._resuming, None
            try:
                self._builder = resuming.result()  # type: ignore[union-attr]
            except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
                raise _damaged(self.index_dir, exc) from None
        return self._builder

    def add(self, chunks: Sequence[Chunk], title: str) -> None:
        self.builder.add(chunks, title)
        self.new_ids.extend(c.id for c in chunks)

    def submit(self, index_dir: Path) -> None:
        """No more chunks: the graph is changed in a thread now, beside the BM25 work (numpy's sorts and
        copies and the file writes run without the interpreter lock)."""
        if self._writing is None:
            builder = self.builder
            self._writing = self._pool.submit(self._write, builder, index_dir)

    def _write(self, builder: GraphBuilder, stage: Path) -> GraphInfo:
        start = time.perf_counter()
        info = _Delta(self, stage).write()
        return info.model_copy(update={"build_seconds": round(builder.seconds + time.perf_counter() - start, 3)})

    def abort(self) -> None:
        """Wait for the thread (it ends by itself; what it wrote is in the stage, which is discarded)."""
        self._pool.shutdown(wait=True)

    def finish(self, stage: Path) -> GraphInfo:
        """Write the updated graph into ``stage/graph`` and its analysis into ``stage/analysis``."""
        self.submit(stage)
        try:
            return self._writing.result()  # type: ignore[union-attr]
        except (ValueError, KeyError, IndexError, TypeError) as exc:  # saved files that do not fit together
            raise _damaged(self.index_dir, exc) from None
        finally:
            self._pool.shutdown(wait=True)


def _damaged(index_dir: Path, exc: BaseException) -> IndexLoadError:
    return IndexLoadError(f"{index_dir}: the entity graph's saved files (graph/, analysis/) are damaged or do not "
                          f"fit together ({type(exc).__name__}: {exc}); the update changed nothing. Fix: rebuild the "
                          f"index: `hoprag index CORPUS --out {index_dir}`")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path.name} unreadable ({exc.strerror or exc})") from None


def _read_npy(path: Path) -> np.ndarray:
    try:
        return load_npy(path)
    except OSError as exc:
        raise ValueError(f"{path.name} unreadable ({exc.strerror or exc})") from None


class _Delta:
    """One in-place update of the graph (the module doc's steps), keys numbered by the builder's key ids."""

    def __init__(self, owner: IncrementalGraph, stage: Path) -> None:
        self.owner, self.stage, self.b = owner, stage, owner.builder
        self.t = self.b.table()
        self.old = owner.index_dir / GRAPH_DIR
        self.config = owner.info.config
        self._all_heads: frozenset[str] | None = None

    def write(self) -> GraphInfo:
        b, t, owner = self.b, self.t, self.owner
        old_rows = _read_json(self.old / ENTITIES)
        common_file = owner.index_dir / ANALYSIS_DIR / COMMON
        common = _read_json(common_file) if common_file.is_file() else []
        new_titles, old_titles = t.titles, owner.old_titles
        changed_titles = (new_titles - old_titles) | (old_titles - new_titles)
        # every key the update can meet gets an id now, so the id space is fixed before arrays are made
        key_ids = t.key_ids  # builder.key inlined: 28k calls at 100k
        old_ids = np.asarray([key_ids.setdefault(k, len(key_ids)) for k, _, _ in old_rows], dtype=np.int64)
        common_ids = np.asarray([b.key(k) for k, _ in common], dtype=np.int64)
        changed_ids = np.asarray([b.key(t) for t in sorted(changed_titles)], dtype=np.int64)
        gone = self._removed_pairs(old_titles)
        kept_len = owner.kept
        ends, stream = t.ends, t.stream
        split = int(ends[kept_len - 1])
        new_chunks = np.repeat(np.arange(kept_len, ends.size, dtype=np.int64), np.diff(ends[kept_len:], prepend=split))
        fresh = self._pairs(stream[split:], new_chunks, new_titles)
        width = len(t.key_ids)
        n = int(ends.size)
        count = lambda codes: np.bincount(codes & _KEY_MASK, minlength=width)  # noqa: E731
        old_df = np.zeros(width, dtype=np.int64)
        old_df[old_ids] = [r[2] for r in old_rows]
        old_df[common_ids] = [r[1] for r in common]
        was_entity = np.zeros(width, dtype=bool)
        was_entity[old_ids] = True
        gone_df = count(gone)
        df = old_df - gone_df + count(fresh)
        cap = max(self.config.min_cap, int(self.config.max_share * n))
        # keys whose kept chunks must be found again in the saved mentions: a title added or taken away
        # (the titles inside names change), a common key back under the cap (its chunks are in no file)
        recount = np.zeros(width, dtype=bool)
        recount[changed_ids] = True
        recount |= ~was_entity & (old_df > 0) & (df >= 1) & (df <= cap)
        kept_chunks = np.repeat(np.arange(kept_len, dtype=np.int64), np.diff(ends[:kept_len], prepend=0))
        keys = list(t.key_ids)
        again = _NONE
        if recount.any():
            recounted = {keys[k] for k in np.flatnonzero(recount).tolist()} & new_titles
            again = self._pairs(stream[:split], kept_chunks, recounted, recount)
        again_df = count(again)
        df[recount] = (again_df + count(fresh))[recount]
        entity = (df >= 1) & (df <= cap)
        # entity rows: entity keys in key order; the old entities are in it already (as entities.json lists
        # them), so the sort merges the new keys into that run rather than ordering every key
        ids = sorted(old_ids[entity[old_ids]].tolist() + np.flatnonzero(entity & ~was_entity).tolist(),
                     key=keys.__getitem__)
        row = np.full(width, -1, dtype=np.int64)
        row[ids] = np.arange(len(ids), dtype=np.int64)
        # only chunks added and no old entity recounted: the old matrices extended
        appended = owner.keep.all() and not again.size and not recount[old_ids].any()
        if not appended:
            chunks, rows = self._entity_rows(old_ids, row, recount, again, fresh, len(ids))
        suspect = entity & (~was_entity | recount | (gone_df > 0))
        # where the suspects' first mentions can be: a key the kept chunks do not hold is first met in the new
        in_kept = bool((suspect & ((old_df > 0) | (again_df > 0))).any())
        del again, gone
        if appended:
            fresh_chunks, fresh_rows = entity_pairs(fresh, row, len(ids), _SHIFT)
            mentioned, mentions = appended_matrices(self.old, row[old_ids], fresh_chunks, fresh_rows, len(ids), n)
        else:
            mentioned = CsrArrays(csr_indptr(chunks, n), rows.astype(np.int32), None, (n, len(ids)))
            mentions = transpose_ones(mentioned, chunks, rows)
            del chunks, rows
        del fresh
        links = chunk_links(mentions, n, self.config.link_max_chunks)
        kinds = self._kinds(ids, keys, dict(zip(old_ids.tolist(), (r[1] for r in old_rows))), suspect,
                            0 if in_kept else split)
        graph_dir = self.stage / GRAPH_DIR
        graph_dir.mkdir(parents=True, exist_ok=True)
        mentions.save(graph_dir, ENTITY_CHUNK)
        mentioned.save(graph_dir, CHUNK_ENTITY)
        links.save(graph_dir, CHUNK_CHUNK)
        freq = np.diff(mentions.indptr).tolist()
        (graph_dir / ENTITIES).write_text(entities_json([keys[k] for k in ids], kinds, freq), encoding="utf-8")
        write_chunk_ids(self.old, graph_dir, owner.keep, owner.new_ids)
        analysis = self.stage / ANALYSIS_DIR
        b.save_mentions(analysis)
        dropped = sorted(np.flatnonzero(df > cap).tolist(), key=keys.__getitem__)
        save_common(analysis, [[keys[k], int(df[k])] for k in dropped])
        size = sum(p.stat().st_size for p in graph_dir.iterdir() if p.is_file())
        return GraphInfo(config=self.config, entities=len(ids), chunks=n, mentions=mentions.nnz,
                         chunk_links=links.nnz // 2, dropped_common=len(dropped), bytes=size, build_seconds=0.0,
                         format=GRAPH_FORMAT)

    def _pairs(self, mentions: np.ndarray, chunks: np.ndarray, titles: set[str],
               only: np.ndarray | None = None) -> np.ndarray:
        """The sorted distinct (chunk, key) pairs of a run of the mention stream (``chunks``: each
        position's chunk) under the document ``titles``: each mention's key, and for a multi-word name
        the titles inside it — only the keys ``only`` marks, when given."""
        t = self.t
        naming = mentions >= 0
        mentions, chunks = mentions[naming].astype(np.int64), chunks[naming]
        keys = t.mention_keys[mentions]
        direct = (chunks << _SHIFT) | keys
        if only is not None:
            direct = direct[only[keys]]
            # the caller's few titles, looked for once in each name of the table (the kept stream is long)
            named = t.named
        else:
            words = t.mention_words
            named = [m for m in sorted_unique(mentions).tolist() if len(words[m]) > 1]
        counts, flat = self._inside(named, titles)
        parts = [direct]
        if flat.size:
            per = counts[mentions]
            at = per > 0
            mentions, chunks, per = mentions[at], chunks[at], per[at]
            starts = np.cumsum(counts) - counts
            offsets = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
            parts.append((np.repeat(chunks, per) << _SHIFT) | flat[np.repeat(starts[mentions], per) + offsets])
        codes = np.concatenate(parts)
        codes.sort()
        return codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if codes.size else codes

    def _inside(self, named: list[int], titles: set[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per mention of the table: how many of ``titles`` lie inside its words (only ``named`` are
        looked at), and their key ids, flat in mention order."""
        b, t = self.b, self.t
        counts = np.zeros(len(t.mention_words), dtype=np.int64)
        if not titles or not named:
            return counts, _NONE
        heads = self._heads(titles)
        clear = heads.isdisjoint
        found: dict[int, tuple[int, ...]] = {}
        for mention in named:
            words = t.mention_words[mention]
            if not clear(words):
                inside = titles_inside(words, titles, heads)
                if inside:
                    found[mention] = tuple(b.key(title) for title in inside)
        order = sorted(found)
        counts[order] = [len(found[m]) for m in order]
        return counts, np.fromiter((k for m in order for k in found[m]), dtype=np.int64)

    def _heads(self, titles: set[str]) -> frozenset[str]:
        """First words of ``titles`` — a filter, so the first words of the old and new titles together
        serve every scan (one pass over every title, not one per scan)."""
        if len(titles) < 64:
            return title_heads(titles)
        if self._all_heads is None:
            self._all_heads = title_heads(self.t.titles | self.owner.old_titles)
        return self._all_heads

    def _removed_pairs(self, titles: set[str]) -> np.ndarray:
        """The (old chunk, key) pairs of the chunks the update removes, under the old index's titles."""
        keep = self.owner.keep
        gone = np.flatnonzero(~keep)
        if not gone.size:
            return _NONE
        directory = self.owner.index_dir / ANALYSIS_DIR
        stream = _read_npy(directory / MENTION_STREAM)
        ends = _read_npy(directory / MENTION_ENDS).astype(np.int64)
        starts = np.concatenate(([0], ends[:-1]))[gone]
        lengths = ends[gone] - starts
        positions = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        return self._pairs(np.asarray(stream[positions]), np.repeat(gone.astype(np.int64), lengths), titles)

    def _entity_rows(self, old_ids: np.ndarray, row: np.ndarray, recount: np.ndarray, again: np.ndarray,
                     fresh: np.ndarray, entities: int) -> tuple[np.ndarray, np.ndarray]:
        """(chunk, entity row) of every entry of the new ``chunk_entity``, in order: the kept chunks' old
        entries renumbered (less the recounted keys'), the recounted keys' entries merged in, the new
        chunks' entries after them."""
        keep = self.owner.keep
        indptr = _read_npy(self.old / f"{CHUNK_ENTITY}.indptr.npy").astype(np.int64)
        indices = np.asarray(_read_npy(self.old / f"{CHUNK_ENTITY}.indices.npy"))
        lengths = np.diff(indptr)
        # old entity row -> new (-1: no longer an entity, or recounted): one gather of every entry
        new_row = row[old_ids]
        new_row[recount[old_ids]] = -1
        if keep.all():
            rows = new_row[indices]
            chunk_of = np.repeat(np.arange(keep.size, dtype=np.int64), lengths)
        else:
            rows = new_row[indices[np.repeat(keep, lengths)]]
            chunk_of = np.repeat(np.arange(self.owner.kept, dtype=np.int64), lengths[keep])
        if not (valid := rows >= 0).all():
            rows, chunk_of = rows[valid], chunk_of[valid]
        width = max(entities, 1)
        again_chunks, again_rows = entity_pairs(again, row, entities, _SHIFT)
        extra = again_chunks * width + again_rows
        if extra.size:  # merged into the kept chunks' entries, which are in (chunk, row) order
            codes = chunk_of * width + rows
            chunk_of, rows = np.divmod(np.insert(codes, np.searchsorted(codes, extra), extra), width)
        fresh_chunks, fresh_rows = entity_pairs(fresh, row, entities, _SHIFT)
        return np.concatenate((chunk_of, fresh_chunks)), np.concatenate((rows, fresh_rows))

    def _kinds(self, ids: list[int], keys: list[str], old_kinds: dict[int, str], suspect: np.ndarray,
               start: int) -> list[str]:
        """Each entity's kind: a title, else the kind of its first mention in chunk order — the old kind
        unless the key is new, recounted or lost a mention, then read from the mention stream from
        ``start`` on."""
        t = self.t
        titles = t.titles
        first: dict[int, str] = {}
        if suspect.any():
            stream = t.stream[start:]
            mentions = stream[stream >= 0].astype(np.int64)
            key_of = t.mention_keys[mentions]
            at = suspect[key_of]
            mentions, key_of = mentions[at], key_of[at]
            seen = first_seen(key_of, suspect.size)
            found = np.flatnonzero(seen < key_of.size)
            names = t.mention_kinds
            first = {k: names[m] for k, m in zip(found.tolist(), mentions[seen[found]].tolist())}
        return ["title" if keys[k] in titles else first.get(k, "title") if suspect[k] else old_kinds[k] for k in ids]
