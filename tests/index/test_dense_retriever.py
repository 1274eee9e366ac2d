"""DenseRetriever: exact cosine ranking, tie-breaks, filters, exclusions, threshold, the HNSW backend."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pytest

from hoprag.errors import ConfigError, EmptyCorpusError
from hoprag.index.base import Retriever
from hoprag.index.dense import DenseRetriever, chunk_texts
from hoprag.index.embedders import make_embedder, normalize_rows
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.records import Chunk, Document

pytestmark = pytest.mark.unit


class AxisEmbedder:
    """Counts of five words, one axis each, L2-normalised: cosine values can be worked out by hand."""

    name = "axes"
    words = ("policy", "retention", "soccer", "revolution", "rugby")
    dim = len(words)

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [[re.findall(r"[a-z]+", t.lower()).count(w) for w in self.words] for t in texts]
        return normalize_rows(np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim))

    def info(self) -> dict:
        return {"name": self.name, "model_id": "axes", "dim": self.dim, "weights_sha256": "0" * 64}


DOCS = [
    Document(id="d1", text="retention policy retention", title="Policy", doc_type="policy", acl="internal"),
    Document(id="d2", text="soccer revolution", title="", doc_type="wiki", acl="public"),
    Document(id="d3", text="rugby", title="Rugby", doc_type="wiki", acl="public"),
    Document(id="d4", text="soccer revolution", title="", doc_type="wiki", acl="internal"),
]
CHUNKS = [Chunk(id=f"{d.id}#0", doc_id=d.id, text=d.text, start=0, end=len(d.text), index=0) for d in DOCS]


@pytest.fixture()
def retriever() -> DenseRetriever:
    return DenseRetriever(CHUNKS, DOCS, AxisEmbedder())


def test_is_a_retriever_and_embeds_title_plus_text(retriever: DenseRetriever) -> None:
    assert isinstance(retriever, Retriever) and retriever.name == "dense" and len(retriever) == 4
    assert chunk_texts(CHUNKS, {d.id: d for d in DOCS}) == [
        "Policy\nretention policy retention", "soccer revolution", "Rugby\nrugby", "soccer revolution"
    ]
    # d1 = (policy 2, retention 2) / sqrt(8); d3 = (rugby 2) / 2
    np.testing.assert_allclose(retriever.vectors[0], [1 / math.sqrt(2), 1 / math.sqrt(2), 0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(retriever.vectors[2], [0, 0, 0, 0, 1], atol=1e-6)


def test_scores_are_cosines_worked_out_by_hand(retriever: DenseRetriever) -> None:
    hits = retriever.retrieve("retention rules", k=10)
    # query = retention axis; d1 cos = 1/sqrt(2); every other chunk has cos 0 and ties by chunk order
    assert [h.chunk_id for h in hits] == ["d1#0", "d2#0", "d3#0", "d4#0"]
    assert hits[0].score == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    assert [h.score for h in hits[1:]] == [0.0, 0.0, 0.0]
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert hits[0].retriever == "dense" and hits[0].title == "Policy" and hits[0].end == len(DOCS[0].text)
    np.testing.assert_allclose(retriever.get_scores("retention rules"), [1 / math.sqrt(2), 0, 0, 0], atol=1e-6)


def test_ties_break_by_chunk_order(retriever: DenseRetriever) -> None:
    # d2 and d4 have the same text: cos = (1 + 1) / (sqrt(2) * sqrt(2)) = 1 for both
    hits = retriever.retrieve("soccer revolution", k=2)
    assert [(h.chunk_id, round(h.score, 6)) for h in hits] == [("d2#0", 1.0), ("d4#0", 1.0)]


def test_threshold_filters_and_exclude(retriever: DenseRetriever) -> None:
    strict = DenseRetriever(CHUNKS, DOCS, AxisEmbedder(), retriever.vectors, min_score=0.5)
    assert [h.chunk_id for h in strict.retrieve("soccer", k=10)] == ["d2#0", "d4#0"]  # cos 1/sqrt(2) each
    assert [h.chunk_id for h in retriever.retrieve("soccer", k=10, filters={"acl": "internal"})] == ["d4#0", "d1#0"]
    assert [h.chunk_id for h in retriever.retrieve("soccer", k=2, exclude=["d2#0", "nope"])] == ["d4#0", "d1#0"]
    assert retriever.retrieve("soccer", k=10, filters={"doc_type": "memo"}) == []
    with pytest.raises(ConfigError, match="unknown filter field 'colour'"):
        retriever.retrieve("soccer", filters={"colour": "red"})


def test_queries_without_meaning_return_nothing(retriever: DenseRetriever) -> None:
    assert retriever.retrieve("", k=5) == [] and retriever.retrieve("   ", k=5) == []
    assert retriever.retrieve("zebra", k=5) == []  # a zero query vector
    assert retriever.retrieve("soccer", k=0) == []


def test_query_vectors_are_cached_and_batched() -> None:
    embedder = AxisEmbedder()
    dense = DenseRetriever(CHUNKS, DOCS, embedder)
    assert embedder.calls == [chunk_texts(CHUNKS, {d.id: d for d in DOCS})]
    many = dense.retrieve_many(["rugby", "soccer", "rugby"], k=1)
    assert embedder.calls[1:] == [["rugby", "soccer"]]
    assert [[h.chunk_id for h in hits] for hits in many] == [["d3#0"], ["d2#0"], ["d3#0"]]
    dense.retrieve("rugby", k=1)
    assert len(embedder.calls) == 2


def test_bad_construction_says_what_to_do() -> None:
    with pytest.raises(EmptyCorpusError):
        DenseRetriever([], DOCS, AxisEmbedder())
    with pytest.raises(ConfigError, match=r"shape \(4, 3\).*need \(4, 5\).*--dense"):
        DenseRetriever(CHUNKS, DOCS, AxisEmbedder(), np.zeros((4, 3), dtype=np.float32))
    with pytest.raises(ConfigError, match="unknown dense backend 'annoy'; valid: exact, hnsw"):
        DenseRetriever(CHUNKS, DOCS, AxisEmbedder(), backend="annoy")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"min_score 2 .*\[-1, 1\]"):
        DenseRetriever(CHUNKS, DOCS, AxisEmbedder(), min_score=2)
    no_docs = DenseRetriever(CHUNKS, None, AxisEmbedder())
    with pytest.raises(ConfigError, match="without documents"):
        no_docs.retrieve("soccer", filters={"acl": "public"})


def test_hnsw_backend_agrees_with_exact_search(retriever: DenseRetriever) -> None:
    pytest.importorskip("faiss")
    other = DenseRetriever(CHUNKS, DOCS, AxisEmbedder(), retriever.vectors, backend="hnsw")
    # k no larger than the chunks scoring above 0: a tie among zero scores is broken by chunk order
    # only in the exact search, which sees every chunk
    for query, k, kwargs in [("soccer", 2, {}), ("retention soccer", 2, {"exclude": ["d2#0"]}),
                             ("soccer", 1, {"filters": {"acl": "internal"}}), ("rugby", 1, {"clearance": "public"})]:
        got = other.retrieve(query, k=k, **kwargs)
        want = retriever.retrieve(query, k=k, **kwargs)
        assert [h.chunk_id for h in got] == [h.chunk_id for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)


@pytest.mark.integration
def test_minilm_finds_the_passage_a_question_is_about(fixture_docs: list[Document]) -> None:
    chunks = chunk_documents(fixture_docs, ChunkConfig(max_chars=500, overlap_chars=100, min_chars=100))
    dense = DenseRetriever(chunks, fixture_docs, make_embedder("minilm"))
    assert dense.vectors.shape == (len(chunks), 384)
    top = dense.retrieve("Which fan group supports the New England soccer club?", k=1)[0]
    assert top.doc_id == "31002"  # Midnight Riders (MLS supporters association)
    top = dense.retrieve("how many years is Skyline telemetry kept", k=3)
    assert top[0].doc_id.startswith("policy-8")
    restricted = dense.retrieve("how many years is Skyline telemetry kept", k=3, filters={"doc_type": "contract"})
    assert {h.doc_id for h in restricted} == {"contract-09"}


def test_concurrent_retrieval_matches_sequential(retriever: DenseRetriever) -> None:
    from concurrent.futures import ThreadPoolExecutor

    queries = [f"{w} {i}" for i in range(500) for w in AxisEmbedder.words]  # more than the cache holds
    fresh = DenseRetriever(CHUNKS, DOCS, AxisEmbedder())
    sequential = [fresh.retrieve(q, k=2) for q in queries]
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(lambda q: retriever.retrieve(q, k=2), queries))
    assert concurrent == sequential
