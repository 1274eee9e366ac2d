"""The streamed PostgreSQL build: any batch size loads the same tables, row for row, as one batch;
a build that fails while streaming leaves the previous index as it was and no staging schema."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.index.open import open_index
from hoprag.index.pg_build import build_pg_index
from hoprag.index.store import IndexConfig
from hoprag.ingest.loaders import load_corpora
from hoprag.records import Document

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data"
#: every table of an index schema, and the key its rows are compared in
TABLES = {"manifest": "id", "documents": "pos", "chunks": "pos", "terms": "id", "postings": "term_id, chunk_pos",
          "term_levels": "term_id, acl_level", "acl_levels": "acl_level", "title_keys": "key, doc_pos",
          "title_filter": "hashes"}


@pytest.fixture(scope="module")
def database(pg_server: object) -> str:
    import psycopg

    base = pg_server.get_uri()  # type: ignore[attr-defined]
    name = f"pgbuild_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.replace("/postgres?", f"/{name}?", 1)


def _tables(database: str, name: str) -> dict[str, list[tuple]]:
    """Every row of the index ``name``; the manifest without the two fields each build draws anew."""
    index = open_index(f"{database}&index={name}")
    try:
        with index.pool.borrow() as conn:
            rows = {t: conn.execute(f"SELECT * FROM hoprag_idx_{name}.{t} ORDER BY {key}").fetchall()
                    for t, key in TABLES.items()}
            # the postings as the heap holds them: term order, as a one-pass build wrote them
            rows["postings, stored order"] = conn.execute(f"SELECT term_id, chunk_pos FROM hoprag_idx_{name}.postings").fetchall()
    finally:
        index.close()
    (_, fmt, body, chunks, avgdl), = rows["manifest"]
    kept = {k: v for k, v in body.items() if k not in ("created_at", "artifact_id")}
    rows["manifest"] = [(fmt, kept, chunks, avgdl)]
    return rows


def _same_whatever_the_batch(database: str, name: str, docs: list[Document], config: IndexConfig, small: int) -> None:
    one = build_pg_index(docs, f"{database}&index={name}_one", config, batch=100_000)
    many = build_pg_index(iter(docs), f"{database}&index={name}_many", config, batch=small)  # an iterator, too
    assert (many.document_count, many.chunk_count, many.corpus_hash) == (one.document_count, one.chunk_count,
                                                                         one.corpus_hash)
    whole, batched = _tables(database, f"{name}_one"), _tables(database, f"{name}_many")
    for table in whole:
        assert batched[table] == whole[table], table
    assert whole["postings, stored order"] == sorted(whole["postings, stored order"])


def test_one_chunk_a_batch_loads_the_tables_of_one_batch(database: str) -> None:
    """The enterprise corpus (three acl levels, 36 chunks) written a chunk at a time."""
    docs = load_corpora([DATA / "enterprise" / "corpus.jsonl"])
    _same_whatever_the_batch(database, "ent", docs, IndexConfig(), small=1)


@pytest.mark.slow
def test_dense_batches_of_256_load_the_vectors_of_one_batch(database: str) -> None:
    """The HotpotQA sample (1,132 chunks: five batches), a third restricted, static vectors."""
    docs = import_dataset("hotpotqa", sorted((DATA / "hotpotqa").glob("*.json"))).documents
    docs = [replace(d, acl="restricted" if i % 3 == 0 else "public") for i, d in enumerate(docs)]
    _same_whatever_the_batch(database, "hot", docs, IndexConfig(dense=True, embedder="static"), small=1)


def test_a_build_that_fails_while_streaming_leaves_the_previous_index(database: str) -> None:
    url = f"{database}&index=halfway"
    docs = load_corpora([DATA / "enterprise" / "corpus.jsonl"])
    before = build_pg_index(docs[:10], url)

    def failing() -> Iterator[Document]:
        yield from docs[:20]  # ten batches of two chunks are written first
        raise RuntimeError("the corpus file went away")

    with pytest.raises(RuntimeError, match="went away"):
        build_pg_index(failing(), url, batch=2)
    index = open_index(url)
    try:
        assert index.manifest.artifact_id == before.artifact_id
        assert sorted(index.documents) == sorted(d.id for d in docs[:10])
        with index.pool.borrow() as conn:
            schemas = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'hoprag_idx_%'")}
        assert "hoprag_idx_halfway__stage" not in schemas
    finally:
        index.close()
