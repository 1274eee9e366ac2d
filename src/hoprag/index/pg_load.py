"""Load a PostgreSQL index's rows a batch at a time, keeping only the tallies that need the whole corpus.

:class:`PgLoader` takes documents one by one (:meth:`PgLoader.add`), chunks each, and every
``batch`` chunks tokenises them, embeds them (with dense vectors) and writes their rows with
``COPY``: documents, chunks, title keys, and postings into an unsorted load table. What depends on
the whole corpus is counted as the batches pass: the vocabulary (term ids in first-seen order),
document frequencies overall and per acl level, documents and chunks per level, the token total
behind ``avgdl``, the corpus hash and the Bloom filter's key digests (:class:`BloomBuilder`).
:meth:`PgLoader.finish` writes those tables and copies the postings into ``postings`` in term
order, sorted by the server. The rows equal those of one pass over the whole corpus, whatever the
batch size (``tests/index/test_pg_build.py``).

With dense vectors a batch is a whole number of embedding batches (256 texts), so every vector is
embedded beside the same texts as in one pass, and its bytes do not depend on the batch size.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from hoprag.errors import EmptyCorpusError, InputError
from hoprag.index.bloom import BloomBuilder, BloomFilter
from hoprag.index.bm25 import index_text
from hoprag.index.corpus_db import canonical_record
from hoprag.index.entities import title_key
from hoprag.index.filters import FILTER_FIELDS
from hoprag.index.store import IndexConfig
from hoprag.ingest.chunking import chunk_document
from hoprag.records import Chunk, Document

__all__ = ["BATCH", "EMBED_BATCH", "IDF_SQL", "PgLoader", "Progress", "acl_level", "filter_keys"]

Progress = Callable[[str, int, int], None]
#: chunks tokenised and written per batch (a multiple of EMBED_BATCH)
BATCH = 10_240
#: texts per embedding call, as in a one-pass build (``embed_in_batches``)
EMBED_BATCH = 256
_SCALARS = (str, int, float, bool)
_UNSORTED = "postings_unsorted"
#: every term's idf from its stored df and the chunk count: one statement, so a build and an update
#: compute the same float8 for the same counts; in float8, not numeric (an update recomputes every
#: term's idf, and numeric's ln was half of that statement's time)
IDF_SQL = "UPDATE {s}.terms SET idf = ln(1 + (%s - df + 0.5::float8) / (df + 0.5::float8))"


def filter_keys(doc: Document) -> dict[str, list[str]]:
    """The strings each filter field matches for ``doc`` (the local index's rules: values compare
    as ``str(value)``; a metadata list matches any of its scalar items)."""
    keys = {f: [str(getattr(doc, "id" if f == "doc_id" else f))] for f in FILTER_FIELDS}
    for key, value in doc.metadata.items():
        items = value if isinstance(value, (list, tuple)) else [value]
        keys[f"metadata.{key}"] = [str(v) for v in items if v is not None and isinstance(v, _SCALARS)]
    return keys


def acl_level(acl: str) -> str:
    """A document's class as clearance policies compare it (case and surrounding spaces ignored)."""
    return str(acl or "").strip().lower()


class PgLoader:
    """Writes one index's rows into the (new, empty) schema ``s`` (quoted) over ``conn``, inside
    the caller's transaction; ``embedder`` is ``None`` without dense vectors."""

    def __init__(self, conn: Any, s: str, config: IndexConfig, *, embedder: Any = None, batch: int = BATCH,
                 progress: Progress | None = None, total: int = 0, source: str = "") -> None:
        self.source = source  # the index, as messages name it
        self.conn, self.s, self.config, self.embedder, self.progress = conn, s, config, embedder, progress
        whole = -(-max(1, batch) // EMBED_BATCH) * EMBED_BATCH
        self.batch = whole if embedder is not None else max(1, batch)
        self.total = total  # documents expected (0: unknown)
        self.tokenizer = config.tokenizer()
        self.vocab: dict[str, int] = {}
        self.df: Counter[int] = Counter()
        #: per acl level, in the order documents first show it: chunks of that level holding each term id
        self.df_by_level: dict[str, Counter[int]] = {}
        self.docs_per_level: Counter[str] = Counter()
        self.chunks_per_level: Counter[str] = Counter()
        self.acl_classes: dict[str, int] = {}
        self.documents = self.chunks = self.tokens = 0
        self._digest = hashlib.sha256()
        self._seen: set[str] = set()
        self._titles = BloomBuilder()
        self._doc_rows: list[tuple[Any, ...]] = []
        self._title_rows: list[tuple[str, int]] = []
        self._pending: list[tuple[Chunk, int, str, str]] = []  # chunk, document position, acl level, title
        self._next_term = 0
        conn.execute(f"CREATE UNLOGGED TABLE {s}.{_UNSORTED} (term_id int NOT NULL, chunk_pos int NOT NULL, "
                     "tf int NOT NULL, length int NOT NULL)")

    def resume(self, *, document_pos: int, chunk_pos: int, vocab: dict[str, int], next_term: int) -> None:
        """Append to an index that holds rows already (:mod:`hoprag.index.pg_update`): new rows from
        these positions, its terms keep their ids and a new one takes ``next_term`` on; the tallies then
        count the appended rows only (the update merges them into the stored ones)."""
        self.documents, self.chunks = document_pos, chunk_pos
        self.vocab, self._next_term = vocab, next_term

    @property
    def corpus_hash(self) -> str:
        """sha256 over the documents' canonical JSON in order (:func:`~hoprag.index.store.corpus_hash`)."""
        return self._digest.hexdigest()

    def add(self, doc: Document) -> None:
        """One document, in corpus order; its chunks are written with the batch they complete."""
        if doc.id in self._seen:
            raise InputError(f"duplicate document id '{doc.id}'", field="id", fix="make document ids unique")
        self._seen.add(doc.id)
        self._digest.update(canonical_record(doc).encode("utf-8") + b"\n")
        pos, level = self.documents, acl_level(doc.acl)
        self.documents += 1
        self.acl_classes[doc.acl] = self.acl_classes.get(doc.acl, 0) + 1
        self.df_by_level.setdefault(level, Counter())
        self.docs_per_level[level] += 1
        body = json.dumps(doc.to_dict(), ensure_ascii=False)
        self._doc_rows.append((pos, doc.id, doc.title, level, json.dumps(filter_keys(doc), ensure_ascii=False),
                               body, len(body)))
        if doc.title:
            self._title_rows.append((title_key(doc.title), pos))
        self._pending.extend((c, pos, level, doc.title) for c in chunk_document(doc, self.config.chunk))
        while len(self._pending) >= self.batch:
            self._write_chunks(self._pending[: self.batch])
            del self._pending[: self.batch]
        if len(self._doc_rows) >= self.batch:
            self._write_documents()

    def finish(self) -> float:
        """Write the last batch and the whole-corpus tables; returns ``avgdl``. Raises
        :class:`EmptyCorpusError` for a corpus with no chunks or no indexable words."""
        self.flush()
        if self.progress:
            self.progress("chunk", self.documents, self.documents)
        if not self.documents:
            raise EmptyCorpusError("the corpus has no documents", source=self.source,
                                   fix="give at least one document with 'id' and 'text'")
        if not self.chunks:
            raise EmptyCorpusError(f"all {self.documents} documents have empty text, nothing to index",
                                   fix="give documents with non-empty 'text'")
        if not self.vocab:
            raise EmptyCorpusError(
                "the corpus has no indexable words (only stopwords, punctuation or one-letter tokens)",
                fix="index documents with real text",
            )
        s = self.s
        with self.conn.cursor().copy(f"COPY {s}.terms (id, term, df, idf) FROM STDIN") as copy:
            for term, tid in self.vocab.items():
                copy.write_row((tid, term, self.df[tid], 0.0))
        with self.conn.cursor().copy(f"COPY {s}.term_levels (term_id, acl_level, df) FROM STDIN") as copy:
            for level, found in self.df_by_level.items():
                for tid, count in found.items():
                    copy.write_row((tid, level, count))
        with self.conn.cursor().copy(f"COPY {s}.acl_levels (acl_level, documents, chunks) FROM STDIN") as copy:
            for level in self.df_by_level:
                copy.write_row((level, self.docs_per_level[level], self.chunks_per_level[level]))
        titles: BloomFilter = self._titles.finish()
        self.conn.execute(f"INSERT INTO {s}.title_filter (hashes, bits) VALUES (%s, %s)", (titles.hashes, titles.bits))
        # Lucene's idf, from the stored document frequencies (Kamphuis et al., ECIR 2020)
        self.conn.execute(IDF_SQL.format(s=s), (self.chunks,))
        self.move_postings()
        return self.tokens / self.chunks

    def move_postings(self) -> None:
        """The written postings into ``postings`` in term order, so one term's postings sit on neighbouring
        pages (the server sorts, spilling to disk)."""
        self.conn.execute(f"INSERT INTO {self.s}.postings (term_id, chunk_pos, tf, length) SELECT term_id, chunk_pos, "
                          f"tf, length FROM {self.s}.{_UNSORTED} ORDER BY term_id, chunk_pos")
        self.conn.execute(f"DROP TABLE {self.s}.{_UNSORTED}")

    def flush(self) -> None:
        """Write the rows still held (the last, partial batch)."""
        if self._pending:
            self._write_chunks(self._pending)
            self._pending = []
        self._write_documents()
        self._seen.clear()

    def _write_documents(self) -> None:
        if self._doc_rows:
            with self.conn.cursor().copy(f"COPY {self.s}.documents (pos, id, title, acl_level, fkeys, body, size) "
                                         "FROM STDIN") as copy:
                for row in self._doc_rows:
                    copy.write_row(row)
            self._doc_rows = []
        if self._title_rows:
            with self.conn.cursor().copy(f"COPY {self.s}.title_keys (key, doc_pos) FROM STDIN") as copy:
                for row in self._title_rows:
                    copy.write_row(row)
            self._titles.add(key for key, _ in self._title_rows)
            self._title_rows = []

    def _write_chunks(self, part: list[tuple[Chunk, int, str, str]]) -> None:
        """Tokenise, embed and write one batch of chunks, counting its terms into the tallies."""
        first = self.chunks
        texts = [index_text(c, title) for c, _, _, title in part]
        counts = [Counter(self.tokenizer.query(t)) for t in texts]
        lengths = [sum(tf.values()) for tf in counts]
        vectors = self._embed(texts) if self.embedder is not None else None
        del texts
        columns = 'pos, id, doc_pos, doc_id, start, "end", index, text, length' + (", embedding" if vectors is not None else "")
        with self.conn.cursor().copy(f"COPY {self.s}.chunks ({columns}) FROM STDIN") as copy:
            for i, (c, doc_pos, _, _) in enumerate(part):
                row: tuple[Any, ...] = (first + i, c.id, doc_pos, c.doc_id, c.start, c.end, c.index, c.text, lengths[i])
                if vectors is not None:
                    row += ("[" + ",".join(map(repr, vectors[i].tolist())) + "]",)
                copy.write_row(row)
        vocab, df = self.vocab, self.df
        with self.conn.cursor().copy(f"COPY {self.s}.{_UNSORTED} (term_id, chunk_pos, tf, length) FROM STDIN") as copy:
            for i, ((_, _, level, _), tf, length) in enumerate(zip(part, counts, lengths)):
                level_df = self.df_by_level[level]
                for term, count in tf.items():
                    tid = vocab.get(term)
                    if tid is None:
                        tid = vocab[term] = self._next_term
                        self._next_term += 1
                    df[tid] += 1
                    level_df[tid] += 1
                    copy.write_row((tid, first + i, count, length))
                self.chunks_per_level[level] += 1
        self.chunks += len(part)
        self.tokens += sum(lengths)
        if self.progress:
            self.progress("chunk", self.documents, self.total or self.documents)
            self.progress("tokenize", self.chunks, self.chunks)

    def _embed(self, texts: list[str]) -> Any:
        import numpy as np

        parts = []
        for lo in range(0, len(texts), EMBED_BATCH):
            parts.append(self.embedder.embed(texts[lo: lo + EMBED_BATCH]))
            if self.progress:
                self.progress("embed", self.chunks + min(lo + EMBED_BATCH, len(texts)), self.chunks + len(texts))
        return np.vstack(parts)
