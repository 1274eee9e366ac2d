"""Build an index into PostgreSQL: documents, chunks, BM25 term statistics and pgvector embeddings.

The corpus is chunked and tokenised exactly as for a local index (same chunker, same
:class:`~hoprag.index.tokenize.Tokenizer`), then bulk-loaded with ``COPY`` into a staging schema;
the staging schema replaces the index's schema in one transaction once everything, indexes
included, is in place. A build that fails or is killed leaves the previous index untouched (a
leftover staging schema is dropped by the next build of the same name).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from hoprag import __version__
from hoprag.acl import acl_counts
from hoprag.errors import ConfigError, EmptyCorpusError, InputError
from hoprag.index.bloom import BloomFilter
from hoprag.index.bm25 import index_text
from hoprag.index.entities import title_key
from hoprag.index.filters import FILTER_FIELDS
from hoprag.index.pg_schema import PG_FORMAT, Connections, PgTarget, index_ddl, parse_target, quote, schema_ddl
from hoprag.index.store import DenseInfo, IndexConfig, IndexManifest, config_hash, corpus_hash
from hoprag.ingest.chunking import chunk_document
from hoprag.records import Chunk, Document

__all__ = ["build_pg_index", "filter_keys"]

Progress = Callable[[str, int, int], None]
_SCALARS = (str, int, float, bool)


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


def build_pg_index(
    documents: Iterable[Document],
    url: str,
    config: IndexConfig | None = None,
    *,
    progress: Progress | None = None,
) -> IndexManifest:
    """Chunk, tokenise, (with ``config.dense``) embed and load ``documents`` into the index ``url``."""
    config = config or IndexConfig()
    if getattr(config, "graph", False):  # the entity graph is a local-index artifact; this store keeps none
        config = config.model_copy(update={"graph": False})
    if config.bm25.method != "lucene":
        raise ConfigError(
            f"the PostgreSQL index ranks with BM25 'lucene' only, not '{config.bm25.method}'; "
            "use the default method or a local index (--out DIR)"
        )
    target = parse_target(url)
    pool = Connections(target)
    with pool.borrow() as conn:  # an unreachable server is reported before the corpus is chunked and embedded
        conn.execute("SELECT 1")
    try:
        return _build(documents, target, pool, config, progress)
    finally:
        pool.close()


def _build(documents: Iterable[Document], target: PgTarget, pool: Connections, config: IndexConfig,
           progress: Progress | None) -> IndexManifest:
    docs = _checked(list(documents), target)
    chunks: list[Chunk] = []
    for i, doc in enumerate(docs, start=1):
        chunks.extend(chunk_document(doc, config.chunk))
        if progress and (i % 1000 == 0 or i == len(docs)):
            progress("chunk", i, len(docs))
    if not chunks:
        raise EmptyCorpusError(f"all {len(docs)} documents have empty text, nothing to index",
                               fix="give documents with non-empty 'text'")
    titles = {d.id: d.title for d in docs}
    texts = [index_text(c, titles[c.doc_id]) for c in chunks]
    tokenizer = config.tokenizer()
    if progress:
        progress("tokenize", 0, len(chunks))
    counts = [Counter(tokenizer.query(t)) for t in texts]
    if progress:
        progress("tokenize", len(chunks), len(chunks))
    vocab: dict[str, int] = {}
    for tf in counts:
        for term in tf:
            vocab.setdefault(term, len(vocab))
    if not vocab:
        raise EmptyCorpusError(
            "the corpus has no indexable words (only stopwords, punctuation or one-letter tokens)",
            fix="index documents with real text",
        )
    vectors = None
    dense_info: DenseInfo | None = None
    if config.dense:
        from hoprag.index.embedders import embed_in_batches, make_embedder

        embedder = make_embedder(config.embedder)
        vectors = embed_in_batches(embedder, texts, progress=progress)
        found = embedder.info()
        dense_info = DenseInfo(embedder=embedder.name, model_id=str(found["model_id"]), dim=embedder.dim,
                               count=len(chunks), file="chunks.embedding", weights_sha256=str(found["weights_sha256"]))
    lengths = [sum(tf.values()) for tf in counts]
    manifest = IndexManifest(
        hoprag_version=__version__,
        config=config,
        config_hash=config_hash(config),
        document_count=len(docs),
        chunk_count=len(chunks),
        corpus_hash=corpus_hash(docs),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        artifact_id=uuid.uuid4().hex,
        dense=dense_info,
        acl_classes=acl_counts(docs),
    )
    with pool.borrow() as conn:
        _load(conn, target, manifest, docs, chunks, counts, vocab, lengths, vectors, progress)
    return manifest


def _checked(docs: list[Document], target: PgTarget) -> list[Document]:
    if not docs:
        raise EmptyCorpusError("the corpus has no documents", source=target.display,
                               fix="give at least one document with 'id' and 'text'")
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise InputError(f"duplicate document id '{doc.id}'", field="id", fix="make document ids unique")
        seen.add(doc.id)
    return docs


def _load(conn: Any, target: PgTarget, manifest: IndexManifest, docs: list[Document], chunks: list[Chunk],
          counts: list[Counter[str]], vocab: dict[str, int], lengths: list[int], vectors: Any,
          progress: Progress | None) -> None:
    stage = f"{target.schema}__stage"
    final, staged = quote(target.schema), quote(stage)
    dim = manifest.dense.dim if manifest.dense else None
    if progress:
        progress("write", 0, 3)
    if dim:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(f"DROP SCHEMA IF EXISTS {staged} CASCADE")
    try:
        with conn.transaction():
            for statement in schema_ddl(stage, dim):
                conn.execute(statement)
            _copy_rows(conn, staged, manifest, docs, chunks, counts, vocab, lengths, vectors)
        if progress:
            progress("write", 1, 3)
        with conn.transaction():
            for statement in index_ddl(stage, dim):
                conn.execute(statement)
        # statistics for the planner, and the visibility map index-only scans need
        for table in ("chunks", "postings", "documents", "terms", "term_levels", "title_keys"):
            conn.execute(f"VACUUM (ANALYZE) {staged}.{table}")
        if progress:
            progress("write", 2, 3)
        with conn.transaction():
            conn.execute(f"DROP SCHEMA IF EXISTS {final} CASCADE")
            conn.execute(f"ALTER SCHEMA {staged} RENAME TO {final}")
    except BaseException:
        _drop_quietly(conn, staged)
        raise
    if progress:
        progress("write", 3, 3)


def _drop_quietly(conn: Any, staged: str) -> None:
    """Drop a half-built staging schema; a connection that is gone leaves it to the next build."""
    try:
        if not conn.closed:
            conn.execute(f"DROP SCHEMA IF EXISTS {staged} CASCADE")
    except Exception:  # noqa: BLE001 - the build's own error is the one to report
        pass


def _copy_rows(conn: Any, s: str, manifest: IndexManifest, docs: list[Document], chunks: list[Chunk],
               counts: list[Counter[str]], vocab: dict[str, int], lengths: list[int], vectors: Any) -> None:
    n = len(chunks)
    avgdl = sum(lengths) / n
    conn.execute(f"INSERT INTO {s}.manifest (id, format, body, chunk_count, avgdl) VALUES (1, %s, %s::jsonb, %s, %s)",
                 (PG_FORMAT, manifest.model_dump_json(), n, avgdl))
    doc_pos = {d.id: i for i, d in enumerate(docs)}
    with conn.cursor().copy(f"COPY {s}.documents (pos, id, title, acl_level, fkeys, body, size) FROM STDIN") as copy:
        for i, d in enumerate(docs):
            body = json.dumps(d.to_dict(), ensure_ascii=False)
            copy.write_row((i, d.id, d.title, acl_level(d.acl), json.dumps(filter_keys(d), ensure_ascii=False),
                            body, len(body)))
    columns = 'pos, id, doc_pos, doc_id, start, "end", index, text, length' + (", embedding" if vectors is not None else "")
    with conn.cursor().copy(f"COPY {s}.chunks ({columns}) FROM STDIN") as copy:
        for i, c in enumerate(chunks):
            row: tuple[Any, ...] = (i, c.id, doc_pos[c.doc_id], c.doc_id, c.start, c.end, c.index, c.text, lengths[i])
            if vectors is not None:
                row += ("[" + ",".join(map(repr, vectors[i].tolist())) + "]",)
            copy.write_row(row)
    doc_levels = [acl_level(d.acl) for d in docs]
    chunk_levels = [doc_levels[doc_pos[c.doc_id]] for c in chunks]
    # document frequencies overall and per acl level (a clearance sums the levels it may see)
    df: Counter[str] = Counter()
    df_by_level: dict[str, Counter[str]] = {level: Counter() for level in dict.fromkeys(doc_levels)}
    for tf, level in zip(counts, chunk_levels):
        df.update(tf.keys())
        df_by_level[level].update(tf.keys())
    with conn.cursor().copy(f"COPY {s}.terms (id, term, df, idf) FROM STDIN") as copy:
        for term, tid in vocab.items():
            copy.write_row((tid, term, df[term], 0.0))
    with conn.cursor().copy(f"COPY {s}.term_levels (term_id, acl_level, df) FROM STDIN") as copy:
        for level, found in df_by_level.items():
            for term, count in found.items():
                copy.write_row((vocab[term], level, count))
    docs_per_level, chunks_per_level = Counter(doc_levels), Counter(chunk_levels)
    with conn.cursor().copy(f"COPY {s}.acl_levels (acl_level, documents, chunks) FROM STDIN") as copy:
        for level in df_by_level:
            copy.write_row((level, docs_per_level[level], chunks_per_level[level]))
    keys = [(title_key(d.title), i) for i, d in enumerate(docs) if d.title]
    with conn.cursor().copy(f"COPY {s}.title_keys (key, doc_pos) FROM STDIN") as copy:
        for row in keys:
            copy.write_row(row)
    titles = BloomFilter.of(key for key, _ in keys)
    conn.execute(f"INSERT INTO {s}.title_filter (hashes, bits) VALUES (%s, %s)", (titles.hashes, titles.bits))
    # Lucene's idf, from the stored document frequencies (Kamphuis et al., ECIR 2020)
    conn.execute(f"UPDATE {s}.terms SET idf = ln(1 + (%s - df + 0.5) / (df + 0.5))", (n,))
    postings = sorted((vocab[term], pos, count) for pos, tf in enumerate(counts) for term, count in tf.items())
    with conn.cursor().copy(f"COPY {s}.postings (term_id, chunk_pos, tf, length) FROM STDIN") as copy:
        for term_id, pos, count in postings:  # term order: one term's postings sit on neighbouring pages
            copy.write_row((term_id, pos, count, lengths[pos]))
