"""A PostgreSQL index's documents and chunks as read-only mappings: rows are looked up by id when
asked for, and the corpus is never read into the process (the counterpart of
:mod:`hoprag.index.corpus_views` for the local store).

- ``index.chunks[id]`` / ``index.documents[id]`` is one indexed lookup (a small cache keeps the rows
  a question reads again; retrieval puts its hits' chunks there, and their documents when small, so
  rendering and the engine read them without a round trip); ``len`` comes from the stored counts;
  iteration streams ids (or rows) in corpus order, a batch at a time.
- A caller's view (:func:`hoprag.security.acl.visible_corpus`) is the set of ``acl`` levels it may see,
  applied as ``WHERE d.acl_level = ANY(...)`` to every lookup, iteration and count.
- ``chunks.term_stats`` gives a term's document frequency from the ``terms`` table (the BM25
  tokens, as :class:`~hoprag.index.term_stats.TermStats` does from the local matrix); under a
  clearance, from ``term_levels`` (frequency per term and level, written at build) summed over the
  visible levels, so a hidden document never changes what a lower caller's weights are.
- ``documents.title_keys()`` answers ``key in keys`` from the indexed ``title_keys`` table, after
  the build's Bloom filter of the keys (read on first use: 10 bits a title) has ruled out most
  candidates that are no title without a query.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, ItemsView, Iterable, Iterator, Mapping, ValuesView
from typing import Any

from hoprag.index.bloom import BloomFilter
from hoprag.index.corpus_views import StreamedItems, StreamedValues
from hoprag.index.pg_schema import Connections, quote
from hoprag.index.tokenize import Tokenizer
from hoprag.records import Chunk, Document

__all__ = ["PgChunks", "PgCorpus", "PgDocuments", "PgTermStats", "PgTitleKeys"]

Levels = frozenset[str] | None  # the acl levels a view shows; None: every level
_BATCH = 2000
_CHUNK_CACHE = 8192
_DOCUMENT_CACHE = 2048
_SEEN_LIMIT = 100_000
_CHUNK_COLUMNS = 'c.id, c.doc_id, c.text, c.start, c."end", c.index, d.acl_level'


class _Lru:
    """A bounded, thread-safe map from id to row (the most recently used kept)."""

    def __init__(self, size: int) -> None:
        self._rows: OrderedDict[str, Any] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows.move_to_end(key)
            return row

    def put(self, key: str, row: Any) -> None:
        with self._lock:
            self._rows[key] = row
            self._rows.move_to_end(key)
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)


class PgCorpus:
    """The reads the mappings make of one index schema; shared by every view of one index."""

    def __init__(self, pool: Connections, schema: str, *, documents: int, chunks: int,
                 level_counts: Mapping[str, tuple[int, int]], tokenizer: Tokenizer) -> None:
        self.pool = pool
        self.s = quote(schema)
        self.tokenizer = tokenizer
        self.reset(documents=documents, chunks=chunks, level_counts=level_counts)

    def reset(self, *, documents: int, chunks: int, level_counts: Mapping[str, tuple[int, int]]) -> None:
        """Take the index's counts (again) and forget every row and statistic read so far."""
        self.document_count = documents
        self.chunk_count = chunks
        #: acl level -> (documents, chunks) of that level, as the build (or the last update) counted them
        self.level_counts = dict(level_counts)
        self.levels = frozenset(self.level_counts)
        self._chunks = _Lru(_CHUNK_CACHE)
        self._documents = _Lru(_DOCUMENT_CACHE)
        # per term / title key, over every level: each view sums or tests the levels it may see
        self._frequencies: dict[str, dict[str, int]] = {}
        self._titled: dict[str, frozenset[str]] = {}
        self._title_filter: BloomFilter | None = None  # read on the first title lookup

    def narrowed(self, current: Levels, allows: Callable[[str], bool]) -> Levels:
        """The levels of ``current`` that ``allows`` accepts (``None`` again when that is every level)."""
        kept = frozenset(level for level in (self.levels if current is None else current) if allows(level))
        return None if kept == self.levels else kept

    def counts(self, levels: Levels) -> tuple[int, int]:
        """``(documents, chunks)`` a view of ``levels`` holds."""
        if levels is None:
            return self.document_count, self.chunk_count
        shown = [self.level_counts.get(level, (0, 0)) for level in levels]  # a level an update emptied: none
        return sum(d for d, _ in shown), sum(c for _, c in shown)

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self.pool.borrow() as conn:
            return conn.execute(sql, list(params)).fetchall()

    # --- rows by id ---------------------------------------------------------------------------

    def remember_chunks(self, rows: Iterable[tuple[Chunk, str]]) -> None:
        """Keep chunks another query already read (retrieval's hits) for the lookups that follow."""
        for chunk, level in rows:
            self._chunks.put(chunk.id, (chunk, level))

    def chunks(self, ids: Collection[str]) -> dict[str, tuple[Chunk, str]]:
        """``id -> (chunk, acl level)`` for the ids that exist (one query for those not cached)."""
        found: dict[str, tuple[Chunk, str]] = {}
        missing = []
        for cid in ids:
            row = self._chunks.get(cid)
            if row is None:
                missing.append(cid)
            else:
                found[cid] = row
        for lo in range(0, len(missing), _BATCH):
            part = missing[lo: lo + _BATCH]
            for cid, did, text, start, end, index, level in self.rows(
                f"SELECT {_CHUNK_COLUMNS} FROM {self.s}.chunks c JOIN {self.s}.documents d ON d.pos = c.doc_pos "
                "WHERE c.id = ANY(%s::text[])", [part],
            ):
                found[cid] = row = (Chunk(cid, did, text, start, end, index), level)
                self._chunks.put(cid, row)
        return found

    def remember_documents(self, rows: Iterable[tuple[str, str | None, str]]) -> None:
        """Keep ``(id, JSON text, acl level)`` rows another query read (``None``: not read); parsed when asked for."""
        for did, body, level in rows:
            if body is not None and self._documents.get(did) is None:
                self._documents.put(did, (body, level))

    def documents(self, ids: Collection[str]) -> dict[str, tuple[Document, str]]:
        """``id -> (document, acl level)`` for the ids that exist (one query for those not cached)."""
        found: dict[str, tuple[Document, str]] = {}
        missing = []
        for did in ids:
            row = self._documents.get(did)
            if row is None:
                missing.append(did)
            elif isinstance(row[0], str):
                found[did] = row = (Document.from_dict(json.loads(row[0])), row[1])
                self._documents.put(did, row)
            else:
                found[did] = row
        for lo in range(0, len(missing), _BATCH):
            part = missing[lo: lo + _BATCH]
            for did, body, level in self.rows(
                f"SELECT id, body, acl_level FROM {self.s}.documents WHERE id = ANY(%s::text[])", [part],
            ):
                found[did] = row = (Document.from_dict(body), level)
                self._documents.put(did, row)
        return found

    # --- streams in corpus order ----------------------------------------------------------------

    def stream(self, table: str, columns: str, levels: Levels) -> Iterator[tuple[Any, ...]]:
        """``columns`` of every row of ``table`` (``chunks`` or ``documents``) a view shows, by
        position, ``_BATCH`` rows per query (no connection is held between batches)."""
        if levels is not None and not levels:
            return
        if table == "chunks":
            source = f"{self.s}.chunks c JOIN {self.s}.documents d ON d.pos = c.doc_pos"
            pos = "c.pos"
        else:
            source, pos = f"{self.s}.documents d", "d.pos"
        where = "" if levels is None else " AND d.acl_level = ANY(%s::text[])"
        sql = f"SELECT {pos}, {columns} FROM {source} WHERE {pos} > %s{where} ORDER BY {pos} LIMIT {_BATCH}"
        last = -1
        while True:
            batch = self.rows(sql, [last] if levels is None else [last, sorted(levels)])
            for row in batch:
                yield row[1:]
            if len(batch) < _BATCH:
                return
            last = batch[-1][0]

    # --- statistics and title keys -----------------------------------------------------------

    def document_frequency(self, term: str, levels: Levels) -> int:
        """Chunks holding ``term`` (a BM25 token; else all the tokens it splits into) in a view."""
        by_level = self._frequencies.get(term)
        if by_level is None:
            by_level = self._level_frequencies(term)
            if len(self._frequencies) > _SEEN_LIMIT:
                self._frequencies.clear()
            self._frequencies[term] = by_level
        return sum(n for level, n in by_level.items() if levels is None or level in levels)

    def _level_frequencies(self, term: str) -> dict[str, int]:
        """acl level -> chunks of that level holding ``term``."""
        found = self.rows(f"SELECT l.acl_level, l.df FROM {self.s}.terms t JOIN {self.s}.term_levels l "
                          "ON l.term_id = t.id WHERE t.term = %s", [term])
        if found:
            return dict(found)
        parts = list(dict.fromkeys(self.tokenizer.query(term)))
        if not parts or parts == [term]:  # a one-letter or unseen token: never indexed
            return {}
        # a term of several index tokens (spider-man: spider + man) counts the chunks holding all of them
        return dict(self.rows(
            f"SELECT d.acl_level, count(*) FROM (SELECT p.chunk_pos FROM {self.s}.postings p JOIN {self.s}.terms t "
            "ON t.id = p.term_id WHERE t.term = ANY(%s::text[]) GROUP BY p.chunk_pos HAVING count(*) = %s) x "
            f"JOIN {self.s}.chunks c ON c.pos = x.chunk_pos JOIN {self.s}.documents d ON d.pos = c.doc_pos "
            "GROUP BY d.acl_level", [parts, len(parts)]))

    def has_title_key(self, key: str, levels: Levels) -> bool:
        """Whether a document of the view has a title with link key ``key`` (the Bloom filter rules
        most keys out without a query)."""
        if self._title_filter is None:
            hashes, bits = self.rows(f"SELECT hashes, bits FROM {self.s}.title_filter")[0]
            self._title_filter = BloomFilter(bits, hashes)
        if key not in self._title_filter:
            return False
        titled = self._titled.get(key)
        if titled is None:
            titled = frozenset(level for (level,) in self.rows(
                f"SELECT DISTINCT d.acl_level FROM {self.s}.title_keys k JOIN {self.s}.documents d "
                "ON d.pos = k.doc_pos WHERE k.key = %s", [key]))
            if len(self._titled) > _SEEN_LIMIT:
                self._titled.clear()
            self._titled[key] = titled
        return bool(titled if levels is None else titled & levels)


class PgTermStats:
    """Document frequencies over the chunks of a view (see the module docstring); ``count`` is
    the view's chunk count."""

    def __init__(self, corpus: PgCorpus, levels: Levels = None) -> None:
        self._corpus = corpus
        self._levels = levels

    @property
    def count(self) -> int:
        return self._corpus.counts(self._levels)[1]

    def df(self, term: str) -> int:
        return self._corpus.document_frequency(term, self._levels)


class PgChunks(Mapping[str, Chunk]):
    """Chunks by id, in corpus order, read when asked for; ``levels`` restricts the view."""

    def __init__(self, corpus: PgCorpus, levels: Levels = None) -> None:
        self.corpus = corpus
        self.levels = levels
        self.term_stats = PgTermStats(corpus, levels)

    def visible(self, allows: Callable[[str], bool]) -> PgChunks:
        """The view of a caller who may see the documents whose ``acl`` level ``allows`` accepts."""
        return PgChunks(self.corpus, self.corpus.narrowed(self.levels, allows))

    def many(self, ids: Iterable[str]) -> dict[str, Chunk]:
        """The chunks of ``ids`` this view shows (one query for those not already read)."""
        return {cid: chunk for cid, (chunk, level) in self.corpus.chunks(list(dict.fromkeys(ids))).items()
                if self.levels is None or level in self.levels}

    def __getitem__(self, chunk_id: str) -> Chunk:
        if isinstance(chunk_id, str):
            found = self.many([chunk_id]).get(chunk_id)
            if found is not None:
                return found
        raise KeyError(chunk_id)

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and chunk_id in self.many([chunk_id])

    def __iter__(self) -> Iterator[str]:
        return (cid for (cid,) in self.corpus.stream("chunks", "c.id", self.levels))

    def __len__(self) -> int:
        return self.corpus.counts(self.levels)[1]

    def _rows(self) -> Iterator[Chunk]:
        return (Chunk(*row[:6]) for row in self.corpus.stream("chunks", _CHUNK_COLUMNS, self.levels))

    def values(self) -> ValuesView[Chunk]:
        return StreamedValues(self, self._rows)

    def items(self) -> ItemsView[str, Chunk]:
        return StreamedItems(self, lambda: ((c.id, c) for c in self._rows()))


class PgDocuments(Mapping[str, Document]):
    """Documents by id, in corpus order, read when asked for; ``levels`` restricts the view."""

    def __init__(self, corpus: PgCorpus, levels: Levels = None) -> None:
        self.corpus = corpus
        self.levels = levels

    def visible(self, allows: Callable[[str], bool]) -> PgDocuments:
        return PgDocuments(self.corpus, self.corpus.narrowed(self.levels, allows))

    def many(self, ids: Iterable[str]) -> dict[str, Document]:
        """The documents of ``ids`` this view shows (one query for those not already read)."""
        return {did: doc for did, (doc, level) in self.corpus.documents(list(dict.fromkeys(ids))).items()
                if self.levels is None or level in self.levels}

    def __getitem__(self, doc_id: str) -> Document:
        if isinstance(doc_id, str):
            found = self.many([doc_id]).get(doc_id)
            if found is not None:
                return found
        raise KeyError(doc_id)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and doc_id in self.many([doc_id])

    def __iter__(self) -> Iterator[str]:
        return (did for (did,) in self.corpus.stream("documents", "d.id", self.levels))

    def __len__(self) -> int:
        return self.corpus.counts(self.levels)[0]

    def _rows(self) -> Iterator[Document]:
        return (Document.from_dict(body) for (body,) in self.corpus.stream("documents", "d.body", self.levels))

    def values(self) -> ValuesView[Document]:
        return StreamedValues(self, self._rows)

    def items(self) -> ItemsView[str, Document]:
        return StreamedItems(self, lambda: ((d.id, d) for d in self._rows()))

    def titles(self) -> Iterator[str]:
        """Every title of the view, in corpus order, without parsing the records."""
        return (title for (title,) in self.corpus.stream("documents", "d.title", self.levels))

    def title_keys(self) -> PgTitleKeys:
        """The link keys of the view's titles, looked up one at a time."""
        return PgTitleKeys(self)


class PgTitleKeys(Collection[str]):
    """``key in keys``: whether a document of the view has a title with that link key (one indexed
    lookup per new key; iterating walks every title)."""

    def __init__(self, documents: PgDocuments) -> None:
        self._documents = documents

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._documents.corpus.has_title_key(key, self._documents.levels)

    def __iter__(self) -> Iterator[str]:
        from hoprag.index.entities import title_key

        return iter({title_key(t) for t in self._documents.titles() if t})

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        return len(self._documents) > 0
