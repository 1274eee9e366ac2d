"""HNSW dense search on real passages: chosen by size, recall vs exact, filters and clearance before
top-k, the fall back to exact, and the saved graph."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.errors import ConfigError, IndexLoadError
from hoprag.index import ann as ann_module
from hoprag.index.ann import ANN_FILE, AUTO_MIN_CHUNKS, SPARSE_SHARE, build_ann, choose_ann, exact_top_positions, open_ann
from hoprag.index.dense import DenseRetriever
from hoprag.index.embedders import make_embedder
from hoprag.ingest.chunking import ChunkConfig, chunk_documents

pytest.importorskip("faiss")
pytestmark = pytest.mark.integration
HOTPOT = Path(__file__).resolve().parents[2] / "data" / "hotpotqa" / "hotpot_dev_distractor_migres_part1.json"
K = 10


@pytest.fixture(scope="module")
def corpus():
    """The 992 context paragraphs of the HotpotQA dev sample; every third document is ``internal``,
    the rest ``public``, and each document's ``doc_type`` is its position modulo 100 (``t0`` … ``t99``)."""
    data = import_dataset("hotpotqa", [HOTPOT])
    docs = [replace(d, acl="internal" if i % 3 == 0 else "public", doc_type=f"t{i % 100}")
            for i, d in enumerate(data.documents)]
    chunks = chunk_documents(docs, ChunkConfig())
    embedder = make_embedder("static")
    exact = DenseRetriever(chunks, docs, embedder)
    questions = [c.query for c in data.cases]
    return docs, chunks, embedder, exact, questions


@pytest.fixture(scope="module")
def hnsw(corpus) -> DenseRetriever:
    docs, chunks, embedder, exact, _ = corpus
    return DenseRetriever(chunks, docs, embedder, exact.vectors, backend="hnsw")


def _ids(hits) -> list[str]:
    return [h.chunk_id for h in hits]


def test_auto_is_exact_below_the_size_and_hnsw_from_it() -> None:
    assert choose_ann("auto", AUTO_MIN_CHUNKS - 1) == "exact"
    assert choose_ann("auto", AUTO_MIN_CHUNKS) == "hnsw"
    assert choose_ann("exact", 10 * AUTO_MIN_CHUNKS) == "exact"
    assert choose_ann("hnsw", 10) == "hnsw"
    with pytest.raises(ConfigError, match="unknown ann mode 'ivf'; valid: auto, exact, hnsw"):
        choose_ann("ivf", 10)


def test_exact_top_positions_break_ties_by_position() -> None:
    vectors = np.asarray([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    # query (1, 0): chunks 0 and 2 tie at 1.0, then chunk 3 at 0.6, then chunk 1 at 0
    assert exact_top_positions(vectors, np.asarray([[1, 0]], dtype=np.float32), 3).tolist() == [[0, 2, 3]]


def test_graph_recall_on_the_corpus_own_vectors_and_on_questions(corpus, hnsw, tmp_path: Path) -> None:
    _, _, _, exact, questions = corpus
    info = build_ann(exact.vectors, tmp_path, "hnsw")
    assert info is not None and info.recall_at_10 >= 0.95 and info.recall_queries == 200
    assert (tmp_path / ANN_FILE).stat().st_size == info.size_bytes > exact.vectors.nbytes
    assert build_ann(exact.vectors, tmp_path / "small", "auto") is None  # 1,000 chunks: exact
    overlap = [len(set(_ids(hnsw.retrieve(q, K))) & set(_ids(exact.retrieve(q, K)))) / K for q in questions]
    assert np.mean(overlap) >= 0.95


def test_recall_counts_a_tied_copy_as_found_and_a_worse_chunk_as_missed(corpus) -> None:
    """Where passages repeat, the exact scan's k-th best is one of many tied copies; a graph that returns
    other copies found them all the same (recall by score, as ann-benchmarks counts by distance)."""
    _, _, _, exact, _ = corpus
    base = np.asarray(exact.vectors[:300], dtype=np.float32)
    vectors = np.concatenate([base] * 20)  # every vector 20 times: the top 10 of each query are ties

    class Pick:
        def __init__(self, rows):
            self.rows = rows

        def search(self, queries, want):
            return np.stack([self.rows(q)[:want] for q in queries])

    copies = Pick(lambda q: np.flatnonzero(np.all(vectors == q, axis=1))[::-1])  # the last copies, not the first
    recall, asked = ann_module.measure_recall(vectors, copies, queries=50)
    assert recall == 1.0 and asked == 50
    far = Pick(lambda q: np.argsort(vectors @ q, kind="stable"))  # the worst chunks first
    assert ann_module.measure_recall(vectors, far, queries=50)[0] == 0.0
    half = Pick(lambda q: np.concatenate([np.flatnonzero(np.all(vectors == q, axis=1))[:5],
                                          np.argsort(vectors @ q, kind="stable")[:5]]))
    assert ann_module.measure_recall(vectors, half, queries=50)[0] == pytest.approx(0.5)
    hnsw = ann_module.HnswIndex.build(vectors)  # the real graph on the repeated vectors
    assert ann_module.measure_recall(vectors, hnsw)[0] >= 0.95


def test_saved_graph_loads_memory_mapped_and_answers_like_the_built_one(corpus, hnsw, tmp_path: Path) -> None:
    docs, chunks, embedder, exact, questions = corpus
    info = build_ann(exact.vectors, tmp_path, "hnsw")
    loaded = DenseRetriever(chunks, docs, embedder, exact.vectors, backend="hnsw", ann=open_ann(tmp_path, info))
    for q in questions[:20]:
        got, want = loaded.retrieve(q, K), exact.retrieve(q, K)
        # scores come from the stored vectors, so a chunk both return has the exact search's score
        common = {h.chunk_id: h.score for h in want}
        for hit in got:
            if hit.chunk_id in common:
                assert hit.score == pytest.approx(common[hit.chunk_id], abs=1e-6)
    assert open_ann(tmp_path, None) is None


def test_filters_and_clearance_apply_before_top_k(corpus, hnsw) -> None:
    docs, _, _, exact, questions = corpus
    by_id = {d.id: d for d in docs}
    for q in questions[:30]:
        public = hnsw.retrieve(q, K, clearance="public")
        assert len(public) == K and all(by_id[h.doc_id].acl == "public" for h in public)
        internal_only = hnsw.retrieve(q, K, filters={"acl": "internal"})
        assert len(internal_only) == K and all(by_id[h.doc_id].acl == "internal" for h in internal_only)
        want = exact.retrieve(q, K, clearance="public")
        assert len(set(_ids(public)) & set(_ids(want))) >= K - 2


def test_a_sparse_filter_is_searched_exactly(corpus, hnsw) -> None:
    # one doc_type of 100 is about 1 % of the chunks, under SPARSE_SHARE: the answer is exact
    docs, chunks, _, exact, questions = corpus
    share = sum(1 for c in chunks if c.doc_id in {d.id for d in docs if d.doc_type == "t7"}) / len(chunks)
    assert 0 < share < SPARSE_SHARE
    for q in questions[:20]:
        got = hnsw.retrieve(q, K, filters={"doc_type": "t7"})
        want = exact.retrieve(q, K, filters={"doc_type": "t7"})
        assert _ids(got) == _ids(want)
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)  # float sums, same cosines


def test_too_few_survivors_fall_back_to_the_exact_search(corpus, hnsw, monkeypatch: pytest.MonkeyPatch) -> None:
    docs, chunks, embedder, exact, questions = corpus
    q = questions[0]
    # a threshold that only a few chunks pass: the graph's 10 are cut below 10, the exact search decides
    third = exact.retrieve(q, 3)[-1].score
    strict_exact = DenseRetriever(chunks, docs, embedder, exact.vectors, min_score=third)
    strict_hnsw = DenseRetriever(chunks, docs, embedder, exact.vectors, min_score=third, backend="hnsw",
                                 ann=hnsw._ann)
    assert _ids(strict_hnsw.retrieve(q, K)) == _ids(strict_exact.retrieve(q, K))
    assert len(strict_exact.retrieve(q, K)) == 3
    # a graph walk that finds too few allowed chunks (here: none) also falls back
    monkeypatch.setattr(type(hnsw._ann), "search", lambda self, qv, want, allowed=None: -np.ones((1, want), dtype=np.int64))
    assert _ids(hnsw.retrieve(q, K, clearance="public")) == _ids(exact.retrieve(q, K, clearance="public"))


def test_a_missing_or_damaged_graph_is_a_load_error(corpus, tmp_path: Path) -> None:
    _, _, _, exact, _ = corpus
    info = build_ann(exact.vectors, tmp_path, "hnsw")
    (tmp_path / ANN_FILE).write_bytes(b"not an index")
    with pytest.raises(IndexLoadError, match="HNSW graph is unreadable.*Fix: rebuild"):
        open_ann(tmp_path, info)
    (tmp_path / ANN_FILE).unlink()
    with pytest.raises(IndexLoadError, match=f"{ANN_FILE} is missing"):
        open_ann(tmp_path, info)


def test_missing_faiss_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str):
        raise ImportError(name)

    monkeypatch.setattr(ann_module.importlib, "import_module", missing)
    with pytest.raises(ConfigError, match=r"pip install 'hoprag\[ann\]'.*--ann exact"):
        ann_module.HnswIndex.build(np.eye(4, dtype=np.float32))
