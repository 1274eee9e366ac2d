"""BM25Retriever: hand-computed scores, stemming, titles, filters, exclude, ties, bm25s agreement."""

from __future__ import annotations

import json
import math
from pathlib import Path

import bm25s
import numpy as np
import pytest
import Stemmer

from hoprag.errors import ConfigError, EmptyCorpusError
from hoprag.index.base import Retriever
from hoprag.index.bm25 import BM25Params, BM25Retriever, index_text
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.records import Document

pytestmark = pytest.mark.unit
REPO_DATA = Path(__file__).resolve().parents[2] / "data"


def tiny(*texts: str, titles: tuple[str, ...] = ()) -> BM25Retriever:
    docs = [Document(id=f"d{i + 1}", title=titles[i] if titles else "", text=t) for i, t in enumerate(texts)]
    return BM25Retriever(chunk_documents(docs), docs)


@pytest.fixture(scope="module")
def fixture_bm25(fixture_docs: list[Document]) -> BM25Retriever:
    return BM25Retriever(chunk_documents(fixture_docs), fixture_docs)


def test_scores_match_the_lucene_formula_by_hand() -> None:
    # tokens: d1 [appl, banana] (2), d2 [appl, appl, cherri] (3), d3 [cherri, date] (2); avgdl = 7/3
    bm = tiny("apple banana", "apple apple cherry", "cherry date")
    k1, b, n, avgdl = 1.5, 0.75, 3, 7 / 3
    idf = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))  # "apple" is in 2 of 3 documents
    d1 = idf * 1 / (1 + k1 * (1 - b + b * 2 / avgdl))
    d2 = idf * 2 / (2 + k1 * (1 - b + b * 3 / avgdl))
    hits = bm.retrieve("apples", k=10)
    assert [h.doc_id for h in hits] == ["d2", "d1"]  # d3 has no "apple": not returned at all
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].score == pytest.approx(d2, rel=1e-6) and hits[1].score == pytest.approx(d1, rel=1e-6)
    assert {h.retriever for h in hits} == {"bm25"}


def test_a_term_in_one_document_ranks_it_first(fixture_bm25: BM25Retriever) -> None:
    hits = fixture_bm25.retrieve("Pizza Hut Park", k=5)
    assert [h.doc_id for h in hits] == ["31000"]
    hit = hits[0]
    assert (hit.chunk_id, hit.start, hit.end, hit.title) == ("31000#0", 0, 420, "MLS Cup 2005")


def test_titles_are_indexed(fixture_bm25: BM25Retriever) -> None:
    # "association" occurs only in the title "Midnight Riders (MLS supporters association)"
    # ... and the paragraph is two chunks (0..1004, 1005..1261): both carry the title, and with
    # tf = 1 in both the shorter second chunk scores higher (length normalisation)
    assert [h.chunk_id for h in fixture_bm25.retrieve("association")] == ["31002#1", "31002#0"]
    doc = Document(id="x", title="Kestrel", text="Body.")
    assert index_text(chunk_documents([doc])[0], doc.title) == "Kestrel\nBody."


def test_snowball_stemming_as_it_really_is(fixture_bm25: BM25Retriever) -> None:
    stem = Stemmer.Stemmer("english").stemWords
    # Snowball gives retained/retaining -> "retain" but retention -> "retent": they do NOT meet
    assert stem(["retained", "retaining", "retention", "retentions"]) == ["retain", "retain", "retent", "retent"]
    # "retained" occurs in both POL-08 versions; "retention" also in ticket-1187's title
    assert {h.doc_id for h in fixture_bm25.retrieve("retaining")} == {"policy-8-v1", "policy-8-v2"}
    assert {h.doc_id for h in fixture_bm25.retrieve("retentions")} == {"policy-8-v1", "policy-8-v2", "ticket-1187"}


def test_empty_and_stopword_queries_return_nothing(fixture_bm25: BM25Retriever) -> None:
    assert fixture_bm25.retrieve("") == []
    assert fixture_bm25.retrieve("the of and is") == []
    assert fixture_bm25.retrieve("zzzyzzx unknownword") == []
    assert fixture_bm25.retrieve("soccer", k=0) == []


def test_k_larger_than_corpus(fixture_bm25: BM25Retriever) -> None:
    hits = fixture_bm25.retrieve("customer data", k=1000)
    assert 0 < len(hits) <= len(fixture_bm25)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_ties_break_by_chunk_order() -> None:
    bm = tiny("kestrel sensor", "other words here", "kestrel sensor", "kestrel sensor")
    assert [h.doc_id for h in bm.retrieve("kestrel", k=10)] == ["d1", "d3", "d4"]
    assert [h.doc_id for h in bm.retrieve("kestrel", k=2)] == ["d1", "d3"]
    assert [h.doc_id for h in bm.retrieve("kestrel", k=2, exclude=["d1#0"])] == ["d3", "d4"]


def test_exclude_is_exact(fixture_bm25: BM25Retriever) -> None:
    full = fixture_bm25.retrieve("New England Revolution Major League Soccer", k=10)
    # the three soccer paragraphs hold "New England Revolution"; the rugby one only "league";
    # 31002's second chunk (its last sentence) holds none of the terms
    assert [h.chunk_id for h in full] == ["31001#0", "31000#0", "31002#0", "31003#0"]
    skipped = fixture_bm25.retrieve(
        "New England Revolution Major League Soccer", k=10, exclude={full[0].chunk_id, "no-such-chunk"}
    )
    assert [h.chunk_id for h in skipped] == [h.chunk_id for h in full[1:]]
    assert [h.rank for h in skipped] == list(range(1, len(skipped) + 1))


def test_filters(fixture_bm25: BM25Retriever) -> None:
    q = "retention data period"
    assert {h.doc_id for h in fixture_bm25.retrieve(q, filters={"doc_type": "policy"})} == {"policy-8-v1", "policy-8-v2"}
    assert {h.doc_id for h in fixture_bm25.retrieve(q, filters={"doc_type": ["ticket", "contract"]})} == {
        "ticket-1187",
        "contract-09",
    }
    assert [h.doc_id for h in fixture_bm25.retrieve(q, filters={"acl": "restricted"})] == ["contract-09"]
    # several fields must all match
    both = fixture_bm25.retrieve(q, filters={"acl": ["internal"], "version": "v2"})
    assert {h.doc_id for h in both} == {"policy-8-v2"}
    assert fixture_bm25.retrieve(q, filters={"doc_type": "memo"}) == []
    assert fixture_bm25.retrieve(q, filters={"doc_type": []}) == []
    owner = fixture_bm25.retrieve("pilot", filters={"metadata.owner": "Legal Operations"})
    assert [h.doc_id for h in owner] == ["contract-09"]
    assert [h.doc_id for h in fixture_bm25.retrieve("pilot", filters={"doc_id": "ticket-1187"})] == ["ticket-1187"]


def test_filtered_scores_equal_unfiltered_scores(fixture_bm25: BM25Retriever) -> None:
    q = "retention data period"
    full = {h.chunk_id: h.score for h in fixture_bm25.retrieve(q, k=100)}
    for h in fixture_bm25.retrieve(q, k=100, filters={"doc_type": "policy"}):
        assert h.score == full[h.chunk_id]


def test_bad_filters_say_what_is_valid(fixture_bm25: BM25Retriever) -> None:
    with pytest.raises(ConfigError, match="unknown filter field 'kind'; valid: id, doc_id, title"):
        fixture_bm25.retrieve("pilot", filters={"kind": "x"})
    with pytest.raises(ConfigError, match="not a string or number"):
        fixture_bm25.retrieve("pilot", filters={"acl": [{"a": 1}]})
    chunks = chunk_documents([Document(id="a", title="", text="pilot words")])
    with pytest.raises(ConfigError, match="without documents"):
        BM25Retriever(chunks).retrieve("pilot", filters={"acl": "x"})


def test_is_a_retriever(fixture_bm25: BM25Retriever) -> None:
    assert isinstance(fixture_bm25, Retriever)
    assert fixture_bm25.name == "bm25"


def test_retrieve_many_equals_retrieve(fixture_bm25: BM25Retriever) -> None:
    queries = ["pilot data", "", "Donnie Smith league"]
    assert fixture_bm25.retrieve_many(queries, k=3) == [fixture_bm25.retrieve(q, k=3) for q in queries]


def test_empty_corpora_are_refused() -> None:
    with pytest.raises(EmptyCorpusError):
        BM25Retriever([], [])
    docs = [Document(id="s", title="", text="The and of a.")]
    with pytest.raises(EmptyCorpusError, match="no indexable words"):
        BM25Retriever(chunk_documents(docs), docs)


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_scores_equal_raw_bm25s(fixture_docs: list[Document], method: str) -> None:
    params = BM25Params(method=method, k1=1.2, b=0.6)
    chunks = chunk_documents(fixture_docs, ChunkConfig(max_chars=400, overlap_chars=100, min_chars=100))
    ours = BM25Retriever(chunks, fixture_docs, params)
    titles = {d.id: d.title for d in fixture_docs}
    stemmer = Stemmer.Stemmer("english")
    raw = bm25s.BM25(method=method, k1=1.2, b=0.6)
    raw.index(
        bm25s.tokenize([index_text(c, titles[c.doc_id]) for c in chunks], stopwords="en", stemmer=stemmer,
                       show_progress=False),
        show_progress=False,
    )
    for query in ["retention period for customer telemetry", "New England Revolution league", "pilot"]:
        tokens = bm25s.tokenize(query, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)[0]
        np.testing.assert_allclose(ours.get_scores(query), raw.get_scores(tokens), rtol=1e-6, atol=1e-6)


def _hotpot_docs() -> tuple[list[Document], list[str]]:
    records = json.loads((REPO_DATA / "hotpotqa" / "hotpot_dev_distractor_hoprag.json").read_text(encoding="utf-8"))
    docs: dict[str, Document] = {}
    for record in records:
        for title, sentences in record["context"]:
            docs.setdefault(title, Document(id=title, title=title, text="".join(sentences).strip()))
    return list(docs.values()), [r["question"] for r in records]


def test_ranking_agrees_with_raw_bm25s_on_hotpotqa() -> None:
    docs, questions = _hotpot_docs()
    chunks = chunk_documents(docs)
    ours = BM25Retriever(chunks, docs)
    stemmer = Stemmer.Stemmer("english")
    raw = bm25s.BM25()
    raw.index(bm25s.tokenize([index_text(c, c.doc_id) for c in chunks], stopwords="en", stemmer=stemmer,
                             show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(questions, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    ids, scores = raw.retrieve(tokens, k=10, show_progress=False)
    for q, row_ids, row_scores in zip(questions, ids, scores):
        hits = ours.retrieve(q, k=10)
        np.testing.assert_allclose([h.score for h in hits], row_scores[: len(hits)], rtol=1e-6)
        # where a score is not tied, the chunk at that rank is the same
        for rank, hit in enumerate(hits):
            if list(row_scores).count(row_scores[rank]) == 1:
                assert hit.chunk_id == chunks[int(row_ids[rank])].id


def test_deterministic_across_builds(fixture_docs: list[Document]) -> None:
    a = BM25Retriever(chunk_documents(fixture_docs), fixture_docs)
    b = BM25Retriever(chunk_documents(list(fixture_docs)), {d.id: d for d in fixture_docs})
    for q in ["customer data", "soccer league", "pilot period grace"]:
        assert a.retrieve(q, k=20) == b.retrieve(q, k=20)


def test_progress_stages(fixture_docs: list[Document]) -> None:
    seen: list[tuple[str, int, int]] = []
    chunks = chunk_documents(fixture_docs)
    BM25Retriever(chunks, fixture_docs, progress=lambda s, d, t: seen.append((s, d, t)))
    n = len(chunks)
    assert seen == [("tokenize", 0, n), ("tokenize", n, n), ("index", 0, n), ("index", n, n)]
