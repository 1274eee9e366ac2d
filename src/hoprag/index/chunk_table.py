"""The per-chunk columns every retriever needs: ids, offsets and titles for Hits, filters, exclusions.

BM25 and dense retrieval score chunks in one fixed order; this table turns positions in that order
back into :class:`~hoprag.records.Hit` records, and filters, exclusions and a caller's clearance
(:mod:`hoprag.security.acl`) into boolean masks applied before top-k selection. Over a loaded index the
columns are read lazily (:mod:`hoprag.index.corpus_db`): a clearance mask is one numpy gather over
the memory-mapped class codes, hits look up only their own rows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from hoprag.security.acl import Clearance, ClearancePolicy
from hoprag.errors import ConfigError, EmptyCorpusError, InputError
from hoprag.index.base import Filters
from hoprag.index.corpus_db import CorpusDB
from hoprag.index.corpus_views import ChunkSequence
from hoprag.index.filters import FilterIndex
from hoprag.records import Chunk, Document, Hit


def as_document_map(documents: Mapping[str, Document] | Iterable[Document] | None) -> Mapping[str, Document] | None:
    if documents is None or isinstance(documents, Mapping):
        return documents
    return {d.id: d for d in documents}


class _MemoryColumns:
    """Columns of chunks held in memory (an index being built, or retrievers made in code)."""

    def __init__(self, chunks: list[Chunk], documents: Mapping[str, Document] | None) -> None:
        chunk_docs = [documents.get(c.doc_id) for c in chunks] if documents is not None else [None] * len(chunks)
        self.chunk_ids = [c.id for c in chunks]
        self.doc_ids = [c.doc_id for c in chunks]
        self.starts = [c.start for c in chunks]
        self.ends = [c.end for c in chunks]
        self.titles = [d.title if d is not None else "" for d in chunk_docs]
        self.pos = {cid: i for i, cid in enumerate(self.chunk_ids)}
        if len(self.pos) != len(self.chunk_ids):
            seen: set[str] = set()
            dup = next(c for c in self.chunk_ids if c in seen or seen.add(c))
            raise InputError(f"duplicate chunk id '{dup}'", field="id", fix="make document ids unique")
        self.chunk_documents = chunk_docs
        names = sorted({d.acl for d in chunk_docs if d is not None})
        codes = {name: i for i, name in enumerate(names)}
        self.acl_names = tuple(names)
        # a chunk without a known document has code -1: an unknown class, the highest level
        self.chunk_acl = np.asarray([codes[d.acl] if d is not None else -1 for d in chunk_docs], dtype=np.int16)

    def position(self, chunk_id: str) -> int | None:
        return self.pos.get(chunk_id)

    def hit_rows(self, positions: Sequence[int]) -> list[tuple[str, str, int, int, str]]:
        cids, dids, starts, ends, titles = self.chunk_ids, self.doc_ids, self.starts, self.ends, self.titles
        return [(cids[i], dids[i], starts[i], ends[i], titles[i]) for i in positions]


class _StoredColumns:
    """Columns of an index directory's chunks: numpy columns memory-mapped, the rest looked up."""

    def __init__(self, db: CorpusDB) -> None:
        self.db = db
        self.chunk_ids = _IdColumn(db)
        self.acl_names = db.acl_names
        self.chunk_acl = db.chunk_acl

    @property
    def chunk_documents(self) -> Iterable[Document]:
        return _Once(self.db.chunk_documents)

    def position(self, chunk_id: str) -> int | None:
        return self.db.chunk_position(chunk_id)

    def hit_rows(self, positions: Sequence[int]) -> list[tuple[str, str, int, int, str]]:
        return self.db.hit_rows(positions)


class _IdColumn(Sequence[str]):
    def __init__(self, db: CorpusDB) -> None:
        self.db = db

    def __len__(self) -> int:
        return self.db.chunk_count

    def __getitem__(self, pos: Any) -> Any:
        if isinstance(pos, slice):
            return [self.db.chunk_id(i) for i in range(*pos.indices(len(self)))]
        return self.db.chunk_id(pos + len(self) if pos < 0 else pos)

    def __iter__(self) -> Iterator[str]:
        return self.db.iter_chunk_ids()


class _Once:
    """An iterable that walks a fresh stream each time (the filter index enumerates it per field)."""

    def __init__(self, make: Callable[[], Iterator[Document]]) -> None:
        self._make = make

    def __iter__(self) -> Iterator[Document]:
        return self._make()


class ChunkTable:
    """Columns over ``chunks`` in retrieval order; ``kind`` names the index in error messages.

    ``chunks`` is a list of chunks with their ``documents``, or the :class:`ChunkSequence` of a
    loaded index directory, whose columns are read lazily (``documents`` is then its mapping).
    """

    def __init__(
        self,
        chunks: Sequence[Chunk],
        documents: Mapping[str, Document] | Iterable[Document] | None,
        *,
        kind: str,
    ) -> None:
        self.kind = kind
        self.documents = as_document_map(documents)
        self.chunks: Sequence[Chunk] = chunks if isinstance(chunks, ChunkSequence) else list(chunks)
        if not len(self.chunks):
            raise EmptyCorpusError("no chunks to index", fix="give documents with non-empty text (check the corpus path)")
        columns: _MemoryColumns | _StoredColumns
        if isinstance(self.chunks, ChunkSequence):
            columns = _StoredColumns(self.chunks.db)
        else:
            columns = _MemoryColumns(self.chunks, self.documents)  # type: ignore[arg-type]
        self._columns = columns
        self.chunk_ids: Sequence[str] = columns.chunk_ids
        self._filters = FilterIndex(columns.chunk_documents, len(self.chunks))
        self._acl_ranks: dict[ClearancePolicy, np.ndarray] = {}
        self._acl_masks: dict[Clearance, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.chunks)

    def allowed(
        self, filters: Filters | None, exclude: Collection[str], clearance: Clearance | None = None
    ) -> np.ndarray | None:
        """Boolean mask of chunks that may be returned, or ``None`` when every chunk may."""
        mask: np.ndarray | None = None
        if filters:
            mask = self._filter_mask(filters).copy()
        if clearance is not None:
            cleared = self.clearance_mask(clearance)
            mask = cleared.copy() if mask is None else mask & cleared
        if exclude:
            found = (self._columns.position(c) for c in exclude)
            drop = [p for p in found if p is not None]
            if drop:
                if mask is None:
                    mask = np.ones(len(self.chunks), dtype=bool)
                mask[drop] = False
        return mask

    def allowed_at(
        self, filters: Filters | None, exclude: Collection[str], clearance: Clearance | None = None
    ) -> Callable[[np.ndarray], np.ndarray | None]:
        """``allowed`` for given positions only: ``fn(positions)`` is which of them may be returned
        (``None``: all), with no array the size of the corpus built per call."""
        masks = []
        if filters:
            masks.append(self._filter_mask(filters))
        if clearance is not None:
            masks.append(self.clearance_mask(clearance))
        dropped = None
        if exclude:
            found = (self._columns.position(c) for c in exclude)
            drop = sorted({p for p in found if p is not None})
            dropped = np.asarray(drop, dtype=np.int64) if drop else None

        def at(positions: np.ndarray) -> np.ndarray | None:
            keep = None
            for mask in masks:
                keep = mask[positions] if keep is None else keep & mask[positions]
            if dropped is not None:
                out = ~np.isin(positions, dropped)
                keep = out if keep is None else keep & out
            return keep

        return at

    def _filter_mask(self, filters: Filters) -> np.ndarray:
        if self.documents is None:
            raise ConfigError(f"this {self.kind} index was built without documents, so it cannot filter")
        return self._filters.mask(filters)

    def clearance_mask(self, clearance: Clearance) -> np.ndarray:
        """Chunks a caller at ``clearance`` may see (read-only; one rank column per policy, cached)."""
        if self.documents is None:
            raise ConfigError(
                f"this {self.kind} index was built without documents, so it cannot enforce a clearance; "
                "build it with the documents (their 'acl' classes)"
            )
        cached = self._acl_masks.get(clearance)
        if cached is not None:
            return cached
        policy = clearance.policy
        ranks = self._acl_ranks.get(policy)
        if ranks is None:
            top = len(policy.levels) - 1
            # rank of each class code, code -1 (no known document) last: the highest level
            by_code = np.asarray([policy.rank(name) for name in self._columns.acl_names] + [top], dtype=np.int16)
            ranks = by_code[np.asarray(self._columns.chunk_acl)]
            ranks.setflags(write=False)
            self._acl_ranks[policy] = ranks
        mask = ranks <= clearance.rank
        mask.setflags(write=False)
        self._acl_masks[clearance] = mask
        return mask

    def top(self, scores: np.ndarray, k: int, keep: np.ndarray, retriever: str) -> list[Hit]:
        """The ``k`` best chunks among ``keep`` (a boolean mask), ties broken by chunk order.

        Selecting among the kept candidates only is much cheaper than partitioning the whole corpus
        when most chunks are out (BM25's many zero scores).
        """
        candidates = np.flatnonzero(keep)
        return self.top_of(candidates, scores[candidates], k, retriever)

    def top_of(self, positions: np.ndarray, values: np.ndarray, k: int, retriever: str) -> list[Hit]:
        """The ``k`` best of scored ``positions`` (ascending), ties broken by chunk order."""
        m = positions.size
        if m == 0 or k <= 0:
            return []
        if m > k:
            # keep everything tied with the k-th best, so the stable sort breaks ties by chunk order
            tied = values >= np.partition(values, m - k)[m - k]
            positions, values = positions[tied], values[tied]
        order = np.argsort(-values, kind="stable")[:k]
        return self.hits(positions[order].tolist(), values[order].tolist(), retriever)

    def hits(self, positions: Sequence[int], scores: Sequence[float], retriever: str) -> list[Hit]:
        rows = self._columns.hit_rows(positions)
        return [
            Hit(cid, did, float(s), rank, retriever, start, end, title)
            for rank, ((cid, did, start, end, title), s) in enumerate(zip(rows, scores), start=1)
        ]
