"""An index's documents and chunks in one SQLite file, read lazily by position or by id.

Loading an index must not cost more than its arrays: nothing here is parsed at open time. A
:class:`CorpusDB` answers what retrieval asks of the corpus — hit columns for a few positions, a
chunk or document by id, a position by chunk id — with indexed lookups, and streams rows in
order for the rare consumer that walks the whole corpus. The per-chunk numpy columns that masks
need (document position, ``acl`` class code) sit beside it as ``.npy`` files, memory-mapped.

Tables (``pos`` is the row's place in corpus order: chunk ``pos`` is row ``pos`` of the BM25
matrix and of ``vectors.npy``)::

    documents(pos, id, title, source, version, timestamp, doc_type, acl, record)   record: canonical JSON
    chunks(pos, id, doc_pos, start, end, idx, text)
    title_keys(key, doc_pos)   each titled document's title as a link target (entities.title_key)

Every read error becomes :class:`~hoprag.errors.IndexLoadError` naming the rebuild command, so a
file damaged after loading still never shows a traceback.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.errors import IndexLoadError
from hoprag.index.npy_map import load_npy
from hoprag.index.entities import title_key
from hoprag.records import Chunk, Document

__all__ = ["SCHEMA", "CorpusDB", "CorpusWriter", "canonical_record"]

DB_FILE = "corpus.sqlite"
CHUNK_DOC = "chunk_doc.npy"
CHUNK_ACL = "chunk_acl.npy"
DOC_ACL = "doc_acl.npy"

SCHEMA = """
CREATE TABLE documents (pos INTEGER PRIMARY KEY, id TEXT NOT NULL, title TEXT NOT NULL, source TEXT NOT NULL,
  version TEXT NOT NULL, timestamp TEXT NOT NULL, doc_type TEXT NOT NULL, acl TEXT NOT NULL, record TEXT NOT NULL);
CREATE TABLE chunks (pos INTEGER PRIMARY KEY, id TEXT NOT NULL, doc_pos INTEGER NOT NULL, start INTEGER NOT NULL,
  end INTEGER NOT NULL, idx INTEGER NOT NULL, text TEXT NOT NULL);
CREATE TABLE title_keys (key TEXT NOT NULL, doc_pos INTEGER NOT NULL);
"""
_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS documents_id ON documents(id);
CREATE UNIQUE INDEX IF NOT EXISTS chunks_id ON chunks(id);
CREATE INDEX IF NOT EXISTS title_keys_key ON title_keys(key);
"""
_SCALAR_FIELDS = ("id", "title", "source", "version", "timestamp", "doc_type", "acl")
_BATCH = 900  # SQLite's default limit on bound parameters is 999


_DOC_FIELDS = tuple(f.name for f in fields(Document))


def canonical_record(doc: Document) -> str:
    """A document's canonical JSON (sorted keys): what the corpus hash digests and the file stores.

    The same text as ``json.dumps(doc.to_dict(), sort_keys=True)``, without ``asdict``'s deep copy
    (a third of a large build's time)."""
    return _CANONICAL({name: getattr(doc, name) for name in _DOC_FIELDS})


# json.dumps with options builds a new encoder at every call: one, made once, writes the same text
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


class CorpusWriter:
    """Appends documents and their chunks in corpus order; :meth:`close` adds the id indexes and
    writes the numpy columns. One transaction: a killed build leaves no half-written file behind
    (the staging directory is discarded anyway)."""

    def __init__(self, directory: Path, *, after: tuple[np.ndarray, list[str]] | None = None) -> None:
        """``after``: append to the file already in ``directory`` (an update), whose documents' ``acl``
        classes and chunks' document positions are given, instead of creating it."""
        self.directory = directory
        self._conn = sqlite3.connect(directory / DB_FILE, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=OFF")
        self._conn.execute("PRAGMA synchronous=OFF")
        if after is None:
            self._conn.executescript(SCHEMA)
        self._conn.execute("BEGIN")
        self._docs: list[tuple[Any, ...]] = []
        self._chunks: list[tuple[Any, ...]] = []
        self._keys: list[tuple[str, int]] = []
        chunk_doc, doc_acl = after if after is not None else (np.zeros(0, dtype=np.int32), [])
        self._chunk_doc: list[int] = chunk_doc.tolist()
        self._doc_acl: list[str] = list(doc_acl)
        self.documents = len(self._doc_acl)
        self.chunks = len(self._chunk_doc)

    def add(self, doc: Document, record: str, chunks: Sequence[Chunk]) -> None:
        pos = self.documents
        self._docs.append((pos, doc.id, doc.title, doc.source, doc.version, doc.timestamp, doc.doc_type, doc.acl, record))
        if doc.title:
            self._keys.append((title_key(doc.title), pos))
        for chunk in chunks:
            self._chunks.append((self.chunks, chunk.id, pos, chunk.start, chunk.end, chunk.index, chunk.text))
            self._chunk_doc.append(pos)
            self.chunks += 1
        self._doc_acl.append(doc.acl)
        self.documents += 1
        if len(self._docs) >= 2000:
            self._flush()

    def _flush(self) -> None:
        self._conn.executemany("INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?)", self._docs)
        self._conn.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?)", self._chunks)
        self._conn.executemany("INSERT INTO title_keys VALUES (?,?)", self._keys)
        self._docs.clear()
        self._chunks.clear()
        self._keys.clear()

    def close(self, acl_classes: Sequence[str]) -> None:
        """Finish the file; ``acl_classes`` is the code table of ``chunk_acl.npy`` (the manifest's)."""
        self._flush()
        for statement in _INDEXES.strip().split(";"):
            if statement.strip():
                self._conn.execute(statement)
        self._conn.execute("COMMIT")
        self._conn.close()
        chunk_doc = np.asarray(self._chunk_doc, dtype=np.int32)
        codes = {name: i for i, name in enumerate(acl_classes)}
        doc_acl = np.asarray([codes[a] for a in self._doc_acl], dtype=np.int16)
        np.save(self.directory / CHUNK_DOC, chunk_doc, allow_pickle=False)
        np.save(self.directory / DOC_ACL, doc_acl, allow_pickle=False)
        np.save(self.directory / CHUNK_ACL, doc_acl[chunk_doc] if chunk_doc.size else doc_acl[:0], allow_pickle=False)

    def abort(self) -> None:
        try:
            self._conn.close()
        except sqlite3.Error:
            pass


ROW_CACHE = 8192  # chunk and document rows a CorpusDB keeps once read (a passage is about a kilobyte)


class CorpusDB:
    """Read access to ``corpus.sqlite`` and its columns; safe to share between threads (one
    connection per thread) and to pickle (reopened on first use)."""

    def __init__(self, directory: Path, *, documents: int, chunks: int, acl_classes: Sequence[str], fix: str) -> None:
        self.directory = directory
        self.document_count = documents
        self.chunk_count = chunks
        self.acl_names: tuple[str, ...] = tuple(acl_classes)
        self.fix = fix
        self._local = threading.local()
        self._cached: dict[tuple[str, int], Any] = {}
        self.chunk_doc = self._column(CHUNK_DOC, np.int32, chunks)
        self.chunk_acl = self._column(CHUNK_ACL, np.int16, chunks)
        self.doc_acl = self._column(DOC_ACL, np.int16, documents)
        db = directory / DB_FILE
        if not db.is_file():
            raise IndexLoadError(f"{directory}: {DB_FILE} is missing. Fix: {fix}")
        last_doc = self._one("SELECT max(pos) FROM documents")
        last_chunk = self._one("SELECT max(pos) FROM chunks")
        found = ((last_doc[0] if last_doc[0] is not None else -1) + 1, (last_chunk[0] if last_chunk[0] is not None else -1) + 1)
        if found != (documents, chunks):
            raise IndexLoadError(
                f"{directory}: manifest says {documents} documents / {chunks} chunks, "
                f"{DB_FILE} holds {found[0]} / {found[1]}. Fix: {fix}"
            )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_local")
        state["_cached"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def _remembered(self, kind: str, pos: int, read: Callable[[int], Any]) -> Any:
        """A row read once per object: the engine reads the same passages at every hop of every question;
        the file is opened immutable (an update writes a new one, opened by a new index object)."""
        found = self._cached.get((kind, pos))
        if found is None:
            if len(self._cached) >= ROW_CACHE:
                self._cached.clear()
            found = self._cached[(kind, pos)] = read(pos)
        return found

    def _column(self, name: str, dtype: type, count: int) -> np.ndarray:
        path = self.directory / name
        try:
            column = load_npy(path)
        except (OSError, ValueError) as exc:
            raise IndexLoadError(f"{self.directory}: {name} unreadable ({exc}). Fix: {self.fix}") from None
        if column.dtype != dtype or column.shape != (count,):
            raise IndexLoadError(
                f"{self.directory}: {name} holds {column.dtype} {tuple(column.shape)}, expected "
                f"{np.dtype(dtype)} ({count},). Fix: {self.fix}"
            )
        if count and (column.min() < -1 or (name != CHUNK_DOC and column.max() >= max(len(self.acl_names), 1))
                      or (name == CHUNK_DOC and column.max() >= self.document_count)):
            raise IndexLoadError(f"{self.directory}: {name} holds codes out of range. Fix: {self.fix}")
        return column

    def visible_masks(self, allows: Callable[[str], bool]) -> tuple[np.ndarray, np.ndarray]:
        """``(documents, chunks)`` boolean masks of what ``allows(acl_class)`` lets a caller see."""
        by_code = np.asarray([bool(allows(name)) for name in self.acl_names] or [False], dtype=bool)
        docs = by_code[np.asarray(self.doc_acl)]
        return docs, docs[np.asarray(self.chunk_doc)]

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            uri = (self.directory / DB_FILE).resolve().as_uri() + "?mode=ro&immutable=1"
            try:
                conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            except sqlite3.Error as exc:
                raise self._broken(exc) from None
            self._local.conn = conn
        return conn

    def _broken(self, exc: Exception) -> IndexLoadError:
        return IndexLoadError(f"{self.directory}: {DB_FILE} unreadable ({exc}). Fix: {self.fix}")

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._broken(exc) from None

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        rows = self._rows(sql, params)
        return rows[0] if rows else ()

    def _stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        try:
            cursor = self._conn().execute(sql)
            while rows := cursor.fetchmany(1000):
                yield from rows
        except sqlite3.Error as exc:
            raise self._broken(exc) from None

    # --- chunks ---------------------------------------------------------------------------

    def hit_rows(self, positions: Sequence[int]) -> list[tuple[str, str, int, int, str]]:
        """``(chunk_id, doc_id, start, end, title)`` for each position, in the order given."""
        found: dict[int, tuple[str, str, int, int, str]] = {}
        unique = list(dict.fromkeys(int(p) for p in positions))
        for i in range(0, len(unique), _BATCH):
            part = unique[i : i + _BATCH]
            marks = ",".join("?" * len(part))
            for pos, cid, did, start, end, title in self._rows(
                "SELECT c.pos, c.id, d.id, c.start, c.end, d.title FROM chunks c JOIN documents d ON d.pos = c.doc_pos "
                f"WHERE c.pos IN ({marks})", part,
            ):
                found[pos] = (cid, did, start, end, title)
        try:
            return [found[int(p)] for p in positions]
        except KeyError as exc:
            raise self._broken(f"no chunk at position {exc}") from None

    def records(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """id -> canonical record, for those of ``doc_ids`` the corpus holds."""
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(doc_ids))
        for i in range(0, len(unique), _BATCH):
            part = unique[i : i + _BATCH]
            found.update(self._rows(f"SELECT id, record FROM documents WHERE id IN ({','.join('?' * len(part))})", part))
        return found

    def title_key_rows(self) -> list[tuple[str, int]]:
        """Every ``(title key, document position)`` row."""
        return [(str(key), int(pos)) for key, pos in self._rows("SELECT key, doc_pos FROM title_keys")]

    def title_keys(self, keep: np.ndarray) -> set[str]:
        """The title keys of the documents the mask ``keep`` keeps (an update carries them over): every
        distinct key, read from the key index, less those only removed documents have."""
        keys = {str(key) for (key,) in self._rows("SELECT DISTINCT key FROM title_keys")}
        removed = np.flatnonzero(~keep).tolist()
        candidates: set[str] = set()
        for i in range(0, len(removed), _BATCH):
            part = removed[i : i + _BATCH]
            candidates.update(str(key) for (key,) in self._rows(
                f"SELECT DISTINCT key FROM title_keys WHERE doc_pos IN ({','.join('?' * len(part))})", part))
        return keys - {key for key in candidates if not self.has_title_keys(key, keep)}

    def document_position(self, doc_id: str) -> int | None:
        row = self._one("SELECT pos FROM documents WHERE id = ?", (doc_id,))
        return int(row[0]) if row else None

    def chunk_position(self, chunk_id: str) -> int | None:
        row = self._one("SELECT pos FROM chunks WHERE id = ?", (chunk_id,))
        return int(row[0]) if row else None

    def chunk_id(self, pos: int) -> str:
        row = self._one("SELECT id FROM chunks WHERE pos = ?", (int(pos),))
        if not row:
            raise IndexError(pos)
        return str(row[0])

    def chunk_at(self, pos: int) -> Chunk:
        return self._remembered("chunk", pos, self._chunk_at)

    def _chunk_at(self, pos: int) -> Chunk:
        row = self._one("SELECT c.id, d.id, c.text, c.start, c.end, c.idx FROM chunks c JOIN documents d "
                        "ON d.pos = c.doc_pos WHERE c.pos = ?", (int(pos),))
        if not row:
            raise IndexError(pos)
        return Chunk(*row)

    def iter_chunks(self, mask: np.ndarray | None = None) -> Iterator[Chunk]:
        for pos, *row in self._stream("SELECT c.pos, c.id, d.id, c.text, c.start, c.end, c.idx FROM chunks c "
                                      "JOIN documents d ON d.pos = c.doc_pos ORDER BY c.pos"):
            if mask is None or mask[pos]:
                yield Chunk(*row)

    def iter_chunk_ids(self, mask: np.ndarray | None = None) -> Iterator[str]:
        for pos, cid in self._stream("SELECT pos, id FROM chunks ORDER BY pos"):
            if mask is None or mask[pos]:
                yield cid

    def index_texts(self, positions: Sequence[int]) -> list[str]:
        """What BM25 saw for each chunk (title, newline, text), in the order given."""
        rows = {}
        unique = list(dict.fromkeys(int(p) for p in positions))
        for i in range(0, len(unique), _BATCH):
            part = unique[i : i + _BATCH]
            for pos, title, text in self._rows(
                "SELECT c.pos, d.title, c.text FROM chunks c JOIN documents d ON d.pos = c.doc_pos "
                f"WHERE c.pos IN ({','.join('?' * len(part))})", part,
            ):
                rows[pos] = f"{title}\n{text}" if title else text
        return [rows[int(p)] for p in positions]

    # --- documents ------------------------------------------------------------------------

    def document(self, doc_id: str) -> Document | None:
        row = self._one("SELECT record FROM documents WHERE id = ?", (doc_id,))
        return self._parse(row[0]) if row else None

    def document_at(self, pos: int) -> Document:
        return self._remembered("document", pos, self._document_at)

    def _document_at(self, pos: int) -> Document:
        row = self._one("SELECT record FROM documents WHERE pos = ?", (int(pos),))
        if not row:
            raise IndexError(pos)
        return self._parse(row[0])

    def _parse(self, record: str) -> Document:
        try:
            return Document.from_dict(json.loads(record))
        except (ValueError, KeyError, TypeError) as exc:
            raise self._broken(f"a document record is damaged: {exc!r}") from None

    def iter_documents(self, mask: np.ndarray | None = None) -> Iterator[Document]:
        for pos, record in self._stream("SELECT pos, record FROM documents ORDER BY pos"):
            if mask is None or mask[pos]:
                yield self._parse(record)

    def iter_document_ids(self, mask: np.ndarray | None = None) -> Iterator[str]:
        for pos, did in self._stream("SELECT pos, id FROM documents ORDER BY pos"):
            if mask is None or mask[pos]:
                yield did

    def has_title_keys(self, key: str, mask: np.ndarray | None) -> bool | None:
        """Whether a (visible) document's title has link key ``key``; ``None`` if the file has no key table."""
        if getattr(self, "_no_keys", False):
            return None
        try:
            if mask is None:  # any document will do: the index answers without reading the key's rows
                return self._conn().execute("SELECT 1 FROM title_keys WHERE key = ? LIMIT 1", (key,)).fetchone() is not None
            # a title shared by many documents has as many rows: stop at the first one the mask shows
            rows = self._conn().execute("SELECT doc_pos FROM title_keys WHERE key = ?", (key,))
            return any(mask[pos] for (pos,) in rows)
        except sqlite3.OperationalError:
            self._no_keys = True
            return None
        except sqlite3.Error as exc:
            raise self._broken(exc) from None

    def titles(self, mask: np.ndarray | None = None) -> Iterator[str]:
        for pos, title in self._stream("SELECT pos, title FROM documents ORDER BY pos"):
            if mask is None or mask[pos]:
                yield title

    def chunk_documents(self) -> Iterator[Document]:
        """The document of every chunk, in chunk order (each parsed once, its chunks are adjacent)."""
        current: tuple[int, Document] | None = None
        docs = self.iter_documents()
        pos = -1
        for doc_pos in self.chunk_doc.tolist():
            while current is None or current[0] != doc_pos:
                pos += 1
                current = (pos, next(docs))
            yield current[1]
