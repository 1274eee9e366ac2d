"""Build an index into PostgreSQL: documents, chunks, BM25 term statistics and pgvector embeddings.

The corpus is streamed: chunked and tokenised exactly as for a local index (same chunker, same
:class:`~hoprag.index.tokenize.Tokenizer`), a batch of chunks at a time, and each batch's rows are
bulk-loaded with ``COPY`` into a staging schema (:mod:`hoprag.index.pg_load`); only the vocabulary
and the counts that need the whole corpus stay in the process. The staging schema replaces the
index's schema in one transaction once everything, indexes included, is in place. A build that
fails or is killed leaves the previous index untouched (its rows are loaded in one transaction, so
a killed build rolls back; a leftover staging schema is dropped by the next build of the same name).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from hoprag import __version__
from hoprag.errors import ConfigError
from hoprag.index.pg_load import BATCH, PgLoader, Progress, acl_level, filter_keys
from hoprag.index.pg_schema import PG_FORMAT, Connections, PgTarget, index_ddl, parse_target, quote, schema_ddl
from hoprag.index.store import DenseInfo, IndexConfig, IndexManifest, config_hash
from hoprag.records import Document

__all__ = ["BATCH", "acl_level", "build_pg_index", "filter_keys"]


def build_pg_index(
    documents: Iterable[Document],
    url: str,
    config: IndexConfig | None = None,
    *,
    progress: Progress | None = None,
    batch: int = BATCH,
) -> IndexManifest:
    """Chunk, tokenise, (with ``config.dense``) embed and load ``documents`` into the index ``url``.

    ``documents`` is read once, in order (an iterator works); ``batch`` chunks are tokenised and
    written at a time (rounded up to whole embedding batches with dense vectors). The index is the
    same whatever the batch size."""
    config = config or IndexConfig()
    if config.graph:  # the entity graph is a local-index artifact; this store keeps none
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
        return _build(documents, target, pool, config, progress, batch)
    finally:
        pool.close()


def _build(documents: Iterable[Document], target: PgTarget, pool: Connections, config: IndexConfig,
           progress: Progress | None, batch: int) -> IndexManifest:
    embedder = None
    if config.dense:
        from hoprag.index.embedders import make_embedder

        embedder = make_embedder(config.embedder)
    with pool.borrow() as conn:
        return _load(conn, target, documents, config, embedder, progress, batch)


def _manifest(config: IndexConfig, loader: PgLoader, embedder: Any) -> IndexManifest:
    dense_info: DenseInfo | None = None
    if embedder is not None:
        found = embedder.info()
        dense_info = DenseInfo(embedder=embedder.name, model_id=str(found["model_id"]), dim=embedder.dim,
                               count=loader.chunks, file="chunks.embedding", weights_sha256=str(found["weights_sha256"]))
    return IndexManifest(
        hoprag_version=__version__,
        config=config,
        config_hash=config_hash(config),
        document_count=loader.documents,
        chunk_count=loader.chunks,
        corpus_hash=loader.corpus_hash,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        artifact_id=uuid.uuid4().hex,
        dense=dense_info,
        acl_classes=dict(sorted(loader.acl_classes.items())),
    )


def _load(conn: Any, target: PgTarget, documents: Iterable[Document], config: IndexConfig, embedder: Any,
          progress: Progress | None, batch: int) -> IndexManifest:
    stage = f"{target.schema}__stage"
    final, staged = quote(target.schema), quote(stage)
    dim = embedder.dim if embedder is not None else None
    total = len(documents) if hasattr(documents, "__len__") else 0  # type: ignore[arg-type]
    if dim:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(f"DROP SCHEMA IF EXISTS {staged} CASCADE")
    try:
        # one transaction for every row: a build killed while streaming leaves no staging schema at all
        with conn.transaction():
            for statement in schema_ddl(stage, dim):
                conn.execute(statement)
            loader = PgLoader(conn, staged, config, embedder=embedder, batch=batch, progress=progress, total=total,
                              source=target.display)
            for doc in documents:
                loader.add(doc)
            avgdl = loader.finish()
            if progress:
                progress("write", 0, 3)
            manifest = _manifest(config, loader, embedder)
            conn.execute(f"INSERT INTO {staged}.manifest (id, format, body, chunk_count, avgdl) "
                         "VALUES (1, %s, %s::jsonb, %s, %s)", (PG_FORMAT, manifest.model_dump_json(), loader.chunks, avgdl))
            del loader
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
            # the lock an update holds (hoprag.index.pg_update): a running update finishes before the swap
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (target.schema,))
            conn.execute(f"DROP SCHEMA IF EXISTS {final} CASCADE")
            conn.execute(f"ALTER SCHEMA {staged} RENAME TO {final}")
    except BaseException:
        _drop_quietly(conn, staged)
        raise
    if progress:
        progress("write", 3, 3)
    return manifest


def _drop_quietly(conn: Any, staged: str) -> None:
    """Drop a half-built staging schema; a connection that is gone leaves it to the next build."""
    try:
        if not conn.closed:
            conn.execute(f"DROP SCHEMA IF EXISTS {staged} CASCADE")
    except Exception:  # noqa: BLE001 - the build's own error is the one to report
        pass
