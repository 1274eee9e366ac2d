"""A loaded index's documents and chunks as read-only mappings over its :class:`~hoprag.index.corpus_db.CorpusDB`:
rows are looked up when asked for, and a caller's clearance view is a mask over positions, not a copy."""

from __future__ import annotations

from collections.abc import Callable, Collection, ItemsView, Iterator, Mapping, Sequence, ValuesView
from typing import Any

import numpy as np

from hoprag.index.corpus_db import CorpusDB
from hoprag.index.entities import title_key
from hoprag.index.term_stats import TermStats
from hoprag.records import Chunk, Document

__all__ = ["ChunkSequence", "StoredChunks", "StoredDocuments", "StreamedItems", "StreamedValues", "TitleKeys"]


class StoredChunks(Mapping[str, Chunk]):
    """Chunks by id (a read-only mapping in corpus order) without reading them at load.

    ``mask`` (a boolean column over chunk positions) makes it the view of a caller who may see only
    those chunks: the others are absent from every lookup, iteration and from ``len``.
    ``term_stats`` are the corpus statistics over the chunks in the view.
    """

    def __init__(self, db: CorpusDB, mask: np.ndarray | None = None, term_stats: TermStats | None = None) -> None:
        self.db = db
        self.mask = mask
        self.term_stats = term_stats
        self._len = db.chunk_count if mask is None else int(mask.sum())

    def visible(self, allows: Callable[[str], bool]) -> StoredChunks:
        """The view of a caller who may see the documents whose ``acl`` class ``allows`` accepts."""
        mask = self.db.visible_masks(allows)[1]
        if self.mask is not None:
            mask = mask & self.mask
        stats = self.term_stats.restricted(mask) if self.term_stats is not None else None
        return StoredChunks(self.db, mask, stats)

    def _shown(self, chunk_id: object) -> int | None:
        pos = self.db.chunk_position(chunk_id) if isinstance(chunk_id, str) else None
        return pos if pos is not None and (self.mask is None or self.mask[pos]) else None

    def __getitem__(self, chunk_id: str) -> Chunk:
        pos = self._shown(chunk_id)
        if pos is None:
            raise KeyError(chunk_id)
        return self.db.chunk_at(pos)

    def __contains__(self, chunk_id: object) -> bool:
        return self._shown(chunk_id) is not None

    def __iter__(self) -> Iterator[str]:
        return self.db.iter_chunk_ids(self.mask)

    def __len__(self) -> int:
        return self._len

    def values(self) -> ValuesView[Chunk]:
        return StreamedValues(self, lambda: self.db.iter_chunks(self.mask))

    def items(self) -> ItemsView[str, Chunk]:
        return StreamedItems(self, lambda: ((c.id, c) for c in self.db.iter_chunks(self.mask)))

    def in_order(self) -> ChunkSequence:
        """Every chunk of the index by position (retrievers apply a caller's clearance themselves)."""
        return ChunkSequence(self.db)


class ChunkSequence(Sequence[Chunk]):
    """The chunks by position (BM25 and vector row order); what retrievers index over."""

    def __init__(self, db: CorpusDB) -> None:
        self.db = db

    def __len__(self) -> int:
        return self.db.chunk_count

    def __getitem__(self, pos: Any) -> Any:
        if isinstance(pos, slice):
            return [self.db.chunk_at(i) for i in range(*pos.indices(len(self)))]
        if pos < 0:
            pos += len(self)
        if not 0 <= pos < len(self):
            raise IndexError(pos)
        return self.db.chunk_at(pos)

    def __iter__(self) -> Iterator[Chunk]:
        return self.db.iter_chunks()


class StoredDocuments(Mapping[str, Document]):
    """Documents by id (a read-only mapping in corpus order) without reading them at load;
    ``mask`` (over document positions) restricts it like :class:`StoredChunks`."""

    def __init__(self, db: CorpusDB, mask: np.ndarray | None = None) -> None:
        self.db = db
        self.mask = mask
        self._len = db.document_count if mask is None else int(mask.sum())

    def visible(self, allows: Callable[[str], bool]) -> StoredDocuments:
        mask = self.db.visible_masks(allows)[0]
        return StoredDocuments(self.db, mask if self.mask is None else mask & self.mask)

    def _shown(self, doc_id: object) -> int | None:
        pos = self.db.document_position(doc_id) if isinstance(doc_id, str) else None
        return pos if pos is not None and (self.mask is None or self.mask[pos]) else None

    def __getitem__(self, doc_id: str) -> Document:
        pos = self._shown(doc_id)
        if pos is None:
            raise KeyError(doc_id)
        return self.db.document_at(pos)

    def __contains__(self, doc_id: object) -> bool:
        return self._shown(doc_id) is not None

    def __iter__(self) -> Iterator[str]:
        return self.db.iter_document_ids(self.mask)

    def __len__(self) -> int:
        return self._len

    def values(self) -> ValuesView[Document]:
        return StreamedValues(self, lambda: self.db.iter_documents(self.mask))

    def items(self) -> ItemsView[str, Document]:
        return StreamedItems(self, lambda: ((d.id, d) for d in self.db.iter_documents(self.mask)))

    def titles(self) -> Iterator[str]:
        """Every document's title, in corpus order, without parsing the records."""
        return self.db.titles(self.mask)

    def title_keys(self) -> TitleKeys | None:
        """The link keys of the titles in this view, looked up one at a time (``None``: not stored)."""
        return TitleKeys(self) if self.db.has_title_keys("", self.mask) is not None else None


class TitleKeys(Collection[str]):
    """``key in keys``: whether a document of the view has a title with that link key (indexed
    lookups; iterating walks every title)."""

    def __init__(self, documents: StoredDocuments) -> None:
        self._documents = documents
        self._seen: dict[str, bool] = {}

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        found = self._seen.get(key)
        if found is None:
            found = bool(self._documents.db.has_title_keys(key, self._documents.mask))
            if len(self._seen) > 100_000:
                self._seen.clear()
            self._seen[key] = found
        return found

    def __len__(self) -> int:
        return sum(1 for t in self._documents.titles() if t)

    def __bool__(self) -> bool:
        return len(self._documents) > 0

    def __iter__(self) -> Iterator[str]:
        return iter({title_key(t) for t in self._documents.titles() if t})


class StreamedValues(ValuesView):  # type: ignore[type-arg]
    """A values view that streams rows (one query, or batches) instead of one lookup per key."""

    def __init__(self, mapping: Mapping[str, Any], rows: Callable[[], Iterator[Any]]) -> None:
        super().__init__(mapping)
        self._rows = rows

    def __iter__(self) -> Iterator[Any]:
        return self._rows()


class StreamedItems(ItemsView):  # type: ignore[type-arg]
    def __init__(self, mapping: Mapping[str, Any], rows: Callable[[], Iterator[tuple[str, Any]]]) -> None:
        super().__init__(mapping)
        self._rows = rows

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return self._rows()
