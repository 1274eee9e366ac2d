"""HybridRetriever and weighted fusion: fused scores worked out by hand, over-fetch, pass-through."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from hoprag.errors import ConfigError
from hoprag.index.base import Retriever
from hoprag.index.bm25 import BM25Retriever
from hoprag.index.dense import DenseRetriever
from hoprag.index.embedders import make_embedder
from hoprag.index.hybrid import HybridRetriever, weighted_fusion
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.records import Document, Hit

pytestmark = pytest.mark.unit


def _hits(retriever: str, *pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(c, c.split("#")[0], s, r, retriever, 0, 1, c.upper()) for r, (c, s) in enumerate(pairs, start=1)]


class FixedRetriever:
    """Returns a fixed ranking (cut to k, minus exclusions) and records every call."""

    def __init__(self, name: str, hits: list[Hit]) -> None:
        self.name = name
        self.hits = hits
        self.calls: list[tuple[str, int, dict | None, tuple[str, ...]]] = []

    def retrieve(self, query: str, k: int = 10, *, filters: dict | None = None, exclude: Collection[str] = ()) -> list[Hit]:
        self.calls.append((query, k, filters, tuple(exclude)))
        return [h for h in self.hits if h.chunk_id not in set(exclude)][:k]


BM25 = _hits("bm25", ("a#0", 12.0), ("b#0", 9.0), ("c#0", 3.0))
DENSE = _hits("dense", ("c#0", 0.8), ("d#0", 0.7), ("a#0", 0.4))


def test_rrf_is_the_default_and_matches_the_formula() -> None:
    sparse, dense = FixedRetriever("bm25", BM25), FixedRetriever("dense", DENSE)
    hybrid = HybridRetriever(sparse, dense)
    assert isinstance(hybrid, Retriever) and hybrid.name == "hybrid" and hybrid.fusion == "rrf"
    hits = hybrid.retrieve("q", k=3)
    # a: 1/61 + 1/63; c: 1/63 + 1/61 (tie, best rank 1 both, a seen first); b: 1/62; d: 1/62 (b first)
    assert [h.chunk_id for h in hits] == ["a#0", "c#0", "b#0"]
    assert [h.score for h in hits] == pytest.approx([1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 1 / 62])
    assert [h.rank for h in hits] == [1, 2, 3] and {h.retriever for h in hits} == {"hybrid"}
    assert hits[0].title == "A#0"


def test_each_side_is_over_fetched_with_the_same_filters_and_exclusions() -> None:
    sparse, dense = FixedRetriever("bm25", BM25), FixedRetriever("dense", DENSE)
    hybrid = HybridRetriever(sparse, dense, min_depth=20, depth_factor=4)
    assert hybrid.depth(3) == 20 and hybrid.depth(10) == 40
    hits = hybrid.retrieve("q", k=10, filters={"acl": "public"}, exclude=["a#0"])
    assert sparse.calls == dense.calls == [("q", 40, {"acl": "public"}, ("a#0",))]
    assert "a#0" not in {h.chunk_id for h in hits} and len(hits) == 3
    assert hybrid.retrieve("q", k=0) == []


def test_rrf_weights_favour_one_side() -> None:
    hybrid = HybridRetriever(FixedRetriever("bm25", BM25), FixedRetriever("dense", DENSE), weights=(1.0, 2.0))
    hits = hybrid.retrieve("q", k=4)
    # c: 1/63 + 2/61; a: 1/61 + 2/63; d: 2/62; b: 1/62
    assert [h.chunk_id for h in hits] == ["c#0", "a#0", "d#0", "b#0"]
    assert hits[0].score == pytest.approx(1 / 63 + 2 / 61)


def test_weighted_fusion_min_max_normalises_each_list() -> None:
    fused = weighted_fusion([BM25, DENSE], limit=None)
    # bm25 norm: a (12-3)/9 = 1, b 6/9, c 0; dense norm: c (0.8-0.4)/0.4 = 1, d 0.75, a 0
    scores = {h.chunk_id: h.score for h in fused}
    assert scores == pytest.approx({"a#0": 1.0, "b#0": 2 / 3, "c#0": 1.0, "d#0": 0.75})
    # a and c tie at 1.0 and both have best rank 1: a appeared first
    assert [h.chunk_id for h in fused] == ["a#0", "c#0", "d#0", "b#0"]
    weighted = weighted_fusion([BM25, DENSE], weights=[0.25, 0.75], limit=2, retriever="w")
    # c: 0.25*0 + 0.75*1 = 0.75; d: 0.75*0.75 = 0.5625; b: 0.25*2/3; a: 0.25
    assert [(h.chunk_id, h.rank, h.retriever) for h in weighted] == [("c#0", 1, "w"), ("d#0", 2, "w")]
    assert weighted[0].score == pytest.approx(0.75) and weighted[1].score == pytest.approx(0.5625)


def test_weighted_fusion_edge_cases() -> None:
    flat = _hits("dense", ("x#0", 0.5), ("y#0", 0.5))
    assert [h.score for h in weighted_fusion([[], flat])] == [1.0, 1.0]
    assert weighted_fusion([[], []]) == []
    with pytest.raises(ValueError, match="got 1 weights for 2 hit lists"):
        weighted_fusion([BM25, DENSE], weights=[1.0])


def test_hybrid_weighted_mode_and_bad_options() -> None:
    hybrid = HybridRetriever(FixedRetriever("bm25", BM25), FixedRetriever("dense", DENSE), fusion="weighted")
    assert [h.chunk_id for h in hybrid.retrieve("q", k=2)] == ["a#0", "c#0"]
    for kwargs, message in [
        ({"fusion": "max"}, "unknown fusion 'max'; valid: rrf, weighted"),
        ({"weights": (0.0, 0.0)}, r"weights \(0.0, 0.0\) must be two non-negative numbers"),
        ({"weights": (1.0, -1.0)}, "must be two non-negative"),
        ({"rrf_k": 0}, "at least 1"),
    ]:
        with pytest.raises(ConfigError, match=message):
            HybridRetriever(FixedRetriever("bm25", BM25), FixedRetriever("dense", DENSE), **kwargs)


@pytest.mark.integration
def test_hybrid_over_real_bm25_and_minilm(fixture_docs: list[Document]) -> None:
    chunks = chunk_documents(fixture_docs, ChunkConfig(max_chars=500, overlap_chars=100, min_chars=100))
    bm25 = BM25Retriever(chunks, fixture_docs)
    dense = DenseRetriever(chunks, fixture_docs, make_embedder("minilm"))
    hybrid = HybridRetriever(bm25, dense)
    # "supporters" and "Revolution" are not in the question: only the dense side can match it
    question = "Which fans back the Major League Soccer club from New England?"
    assert bm25.retrieve(question, k=1)[0].doc_id == "31001"  # Donnie Smith: "Major League Soccer", "New England"
    assert dense.retrieve(question, k=1)[0].doc_id == "31002"  # Midnight Riders, the supporters group
    assert [h.doc_id for h in hybrid.retrieve(question, k=2)] == ["31002", "31001"]
    first = hybrid.retrieve("Skyline telemetry retention years", k=5)
    assert first == hybrid.retrieve("Skyline telemetry retention years", k=5)
    assert first[0].doc_id.startswith("policy-8")
    internal = hybrid.retrieve("Skyline telemetry retention years", k=10, filters={"acl": "internal"})
    assert internal and all(fixture_docs[[d.id for d in fixture_docs].index(h.doc_id)].acl == "internal" for h in internal)
