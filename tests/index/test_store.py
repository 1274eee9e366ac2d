"""Index directory: build -> load round trip, manifest, and every load error naming the fix."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from hoprag import __version__
from hoprag.errors import EmptyCorpusError, IndexLoadError, InputError
from hoprag.index.bm25 import BM25Params
from hoprag.index.store import IndexConfig, build_index, config_hash, corpus_hash, load_index
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.records import Document

pytestmark = pytest.mark.unit
QUERIES = ["retention period telemetry", "New England Revolution", "pilot grace period", "the of", "rugby"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, fixture_docs: list[Document]) -> Path:
    out = tmp_path_factory.mktemp("index")
    build_index(fixture_docs, out, IndexConfig(chunk=ChunkConfig(max_chars=500, overlap_chars=100, min_chars=100)))
    return out


def test_layout_and_manifest(built: Path, fixture_docs: list[Document]) -> None:
    names = {p.name for p in built.iterdir()}
    assert {"manifest.json", "corpus.sqlite", "chunk_doc.npy", "chunk_acl.npy", "doc_acl.npy", "bm25"} <= names
    assert not names & {"documents.jsonl", "chunks.jsonl", "vectors.npy"}
    manifest = json.loads((built / "manifest.json").read_text(encoding="utf-8"))
    config = IndexConfig(chunk=ChunkConfig(max_chars=500, overlap_chars=100, min_chars=100))
    chunks = chunk_documents(fixture_docs, config.chunk)
    assert manifest["hoprag_version"] == __version__
    assert manifest["format_version"] == 2
    assert manifest["build"]["seconds"] > 0 and manifest["build"]["peak_rss_mb"] > 0
    assert manifest["config"] == config.model_dump(mode="json")
    assert manifest["config_hash"] == config_hash(config) and len(manifest["config_hash"]) == 16
    assert manifest["document_count"] == 8
    assert manifest["chunk_count"] == len(chunks)
    assert manifest["corpus_hash"] == corpus_hash(fixture_docs)
    assert datetime.fromisoformat(manifest["created_at"].replace("Z", "+00:00")).tzinfo is not None
    assert len(manifest["artifact_id"]) == 32 and int(manifest["artifact_id"], 16) >= 0


def test_round_trip_gives_the_same_hits(built: Path, fixture_docs: list[Document]) -> None:
    from hoprag.index.bm25 import BM25Retriever

    config = IndexConfig(chunk=ChunkConfig(max_chars=500, overlap_chars=100, min_chars=100))
    fresh = BM25Retriever(chunk_documents(fixture_docs, config.chunk), fixture_docs)
    loaded = load_index(built)
    assert list(loaded.documents) == [d.id for d in fixture_docs]
    assert loaded.documents["contract-09"] == next(d for d in fixture_docs if d.id == "contract-09")
    assert list(loaded.chunks.values()) == chunk_documents(fixture_docs, config.chunk)
    retriever = loaded.retriever()
    assert retriever is loaded.bm25
    for q in QUERIES:
        assert retriever.retrieve(q, k=10) == fresh.retrieve(q, k=10)
        assert retriever.retrieve(q, k=5, filters={"acl": "internal"}) == fresh.retrieve(
            q, k=5, filters={"acl": "internal"}
        )
    mapped = load_index(built, mmap=True)
    assert mapped.bm25.retrieve(QUERIES[0]) == fresh.retrieve(QUERIES[0])


def test_config_hash_is_canonical_and_sensitive() -> None:
    a = IndexConfig()
    assert config_hash(a) == config_hash(IndexConfig(bm25=BM25Params(k1=1.5)))
    assert config_hash(a) != config_hash(IndexConfig(bm25=BM25Params(k1=1.2)))
    assert config_hash(a) != config_hash(IndexConfig(chunk=ChunkConfig(max_chars=800)))


def test_rebuild_same_config_hash_new_artifact(tmp_path: Path, fixture_docs: list[Document]) -> None:
    one = build_index(fixture_docs, tmp_path / "a")
    two = build_index(fixture_docs, tmp_path / "b")
    assert one.config_hash == two.config_hash and one.corpus_hash == two.corpus_hash
    assert one.artifact_id != two.artifact_id
    three = build_index(fixture_docs[:3], tmp_path / "c")
    assert three.corpus_hash != one.corpus_hash and three.document_count == 3


def test_progress_reports_every_stage(tmp_path: Path, fixture_docs: list[Document]) -> None:
    seen: list[tuple[str, int, int]] = []
    build_index(fixture_docs, tmp_path / "p", progress=lambda s, d, t: seen.append((s, d, t)))
    assert seen[0] == ("chunk", 8, 8)
    assert ("chunk", 8, 8) in seen and ("write", 3, 3) == seen[-1]
    assert {s for s, _, _ in seen} == {"chunk", "tokenize", "index", "write"}


def test_config_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError):
        IndexConfig(bm25={"method": "bm42"})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        IndexConfig(stemmers="english")  # type: ignore[call-arg]


def test_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(EmptyCorpusError, match="no documents"):
        build_index([], tmp_path / "e")
    with pytest.raises(EmptyCorpusError, match="empty text"):
        build_index([Document(id="a", title="", text="  ")], tmp_path / "e")
    assert not (tmp_path / "e" / "manifest.json").exists()


def test_duplicate_ids_refused(tmp_path: Path) -> None:
    docs = [Document(id="a", title="", text="One."), Document(id="a", title="", text="Two.")]
    with pytest.raises(InputError, match="duplicate document id 'a'"):
        build_index(docs, tmp_path / "d")


FIX = r"Fix: run `hoprag index CORPUS --out DIR`"


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match=rf"nope: index directory not found\. {FIX}"):
        load_index(tmp_path / "nope")


def test_missing_manifest(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    with pytest.raises(IndexLoadError, match=rf"half: no manifest\.json .*{FIX}"):
        load_index(tmp_path / "half")


def _copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(built, target)
    return target


def test_corrupted_manifest(built: Path, tmp_path: Path) -> None:
    target = _copy(built, tmp_path)
    (target / "manifest.json").write_text('{"hoprag_version": ', encoding="utf-8")
    with pytest.raises(IndexLoadError, match=rf"unreadable manifest.*{FIX}"):
        load_index(target)


def test_other_format_version(built: Path, tmp_path: Path) -> None:
    target = _copy(built, tmp_path)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    manifest["format_version"] = 99
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexLoadError, match=r"index format 99, this hoprag reads 2\. Fix: rebuild it from its "
                       rf"corpus with `hoprag index CORPUS --out {target}`"):
        load_index(target)


def test_a_format_1_index_says_to_rebuild_it(built: Path, tmp_path: Path) -> None:
    target = _copy(built, tmp_path)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    (target / "corpus.sqlite").unlink()
    (target / "documents.jsonl").write_text("{}\n", encoding="utf-8")  # what format 1 kept instead
    (target / "manifest.json").write_text(json.dumps({**manifest, "format_version": 1}), encoding="utf-8")
    with pytest.raises(IndexLoadError, match=rf"index format 1, this hoprag reads 2\. .*`hoprag index CORPUS --out {target}`"):
        load_index(target)
    build_index([Document(id="a", title="", text="Rebuilt over the old one.")], target)  # the old files are its own
    assert load_index(target).manifest.document_count == 1


def test_rows_missing_from_the_corpus_file(built: Path, tmp_path: Path) -> None:
    import sqlite3

    target = _copy(built, tmp_path)
    with sqlite3.connect(target / "corpus.sqlite") as conn:
        last = conn.execute("SELECT max(pos) FROM chunks").fetchone()[0]
        conn.execute("DELETE FROM chunks WHERE pos = ?", (last,))
    with pytest.raises(IndexLoadError, match=rf"corpus\.sqlite holds 8 / {last}\. {FIX}"):
        load_index(target)


def test_a_damaged_corpus_file_is_a_load_error_even_after_loading(built: Path, tmp_path: Path) -> None:
    target = _copy(built, tmp_path)
    raw = bytearray((target / "corpus.sqlite").read_bytes())
    (target / "corpus.sqlite").write_bytes(b"not a database" + bytes(raw[14:100]))
    with pytest.raises(IndexLoadError, match=rf"corpus\.sqlite unreadable .*{FIX}"):
        load_index(target).bm25.retrieve("pilot order form")
    # damaged after a successful load: lookups fail as load errors, never as sqlite tracebacks
    from concurrent.futures import ThreadPoolExecutor

    fresh = _copy(built, tmp_path / "later")
    index = load_index(fresh)
    (fresh / "corpus.sqlite").write_bytes(bytes(len(raw)))
    with ThreadPoolExecutor(1) as pool:  # a new thread opens its own connection, to the damaged file
        with pytest.raises(IndexLoadError, match=rf"corpus\.sqlite unreadable .*{FIX}"):
            pool.submit(index.bm25.retrieve, "pilot order form").result()


def test_missing_corpus_file(built: Path, tmp_path: Path) -> None:
    target = _copy(built, tmp_path)
    (target / "corpus.sqlite").unlink()
    with pytest.raises(IndexLoadError, match=rf"corpus\.sqlite is missing.*{FIX}"):
        load_index(target)


def test_damaged_numpy_column(built: Path, tmp_path: Path) -> None:
    import numpy as np

    target = _copy(built, tmp_path)
    np.save(target / "chunk_acl.npy", np.full(3, 7, dtype=np.int16))
    with pytest.raises(IndexLoadError, match=rf"chunk_acl\.npy holds int16 \(3,\), expected int16 \(\d+,\)\. {FIX}"):
        load_index(target)
    n = json.loads((target / "manifest.json").read_text(encoding="utf-8"))["chunk_count"]
    np.save(target / "chunk_acl.npy", np.full(n, 7, dtype=np.int16))
    with pytest.raises(IndexLoadError, match=rf"chunk_acl\.npy holds codes out of range\. {FIX}"):
        load_index(target)


def test_missing_bm25_arrays(built: Path, tmp_path: Path) -> None:
    target = _copy(built, tmp_path)
    shutil.rmtree(target / "bm25")
    with pytest.raises(IndexLoadError, match=rf"bm25 index unreadable.*{FIX}"):
        load_index(target)


def test_unknown_retriever_mode(built: Path) -> None:
    with pytest.raises(IndexLoadError, match=r"retrieval mode 'dense' is not available in this index \(valid: bm25\)"):
        load_index(built).retriever("dense")
