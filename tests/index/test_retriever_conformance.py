"""One retrieval contract, two stores: every test runs against the local index and the PostgreSQL one.

The corpus is the enterprise corpus (36 documents with ``public`` / ``internal`` / ``restricted``
classes, doc types and metadata) plus four HotpotQA paragraphs without an ``acl`` class (unlabelled:
hidden from a public caller). Both indexes are built from it with the static embedder.

Where the two may differ, and by how much (the documented tolerance):

- dense, exact search: pgvector and numpy both compute float32 inner products, in a different
  summation order, so scores agree to 1e-5 and only chunks whose scores are that close may swap;
- BM25: the same Lucene formulas, summed in float32 by bm25s and in float8 by PostgreSQL, so
  scores agree to 1e-5 relative and only near-ties may swap.

Everything else (filters, exclusions, clearance, k, empty queries, errors) must be identical.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hoprag.security.acl import ClearancePolicy, visible_corpus
from hoprag.errors import ConfigError, IndexLoadError
from hoprag.index.entities import title_key
from hoprag.index.open import open_index
from hoprag.index.pg_build import build_pg_index
from hoprag.index.store import IndexConfig, build_index
from hoprag.ingest.loaders import load_corpora
from hoprag.pipeline.text import Analyzer
from hoprag.records import Document, Hit

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data"
TEST_DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = IndexConfig(dense=True, embedder="static")
QUERIES = (
    "Under the current retention policy, how long is customer data kept for the plan acquired under Project Orion?",
    "In which hosting region is the data of Project Halyard's subscription stored today?",
    "If Project Wren reports a critical incident, how soon should it expect a first response from support?",
    "support response policy critical incident",
    "MLS Cup 2005 New England Revolution",
    "plan catalog product family",
    "Rétention pólicy for cüstomer dàta",  # both stores fold the query as they folded the corpus
)
TOL = 1e-5
STORES = ("local", "postgres")


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return load_corpora([DATA / "enterprise" / "corpus.jsonl", TEST_DATA / "ingest_beir_corpus.jsonl"])


@pytest.fixture(scope="module")
def local_index(docs: list[Document], tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("conformance") / "index"
    build_index(docs, out, CONFIG)
    return open_index(str(out))


@pytest.fixture(scope="module")
def pg_database(pg_server: object) -> str:
    """A database of its own for this module, as a user-facing ``postgresql://`` URL."""
    import psycopg

    base = pg_server.get_uri()  # type: ignore[attr-defined]
    name = f"conf_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture(scope="module")
def postgres_index(docs: list[Document], pg_database: str) -> Iterator[object]:
    url = pg_database + "&index=conformance"
    build_pg_index(docs, url, CONFIG)
    index = open_index(url)
    yield index
    index.close()


@pytest.fixture(params=STORES)
def index(request: pytest.FixtureRequest):
    return request.getfixturevalue(f"{request.param}_index")


def _retriever(index, mode: str):
    return index.dense(backend="exact") if mode == "dense" else index.retriever(mode)


def assert_same_ranking(ours: list[Hit], theirs: list[Hit], *, rel: float = TOL) -> None:
    """Same hits up to near-ties: equal length, scores rank by rank within ``rel``, and a chunk may
    sit at another rank only when the two scores there are within ``rel`` of each other."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.score == pytest.approx(b.score, rel=rel, abs=rel)
        if a.chunk_id != b.chunk_id:
            assert abs(a.score - b.score) <= rel * max(1.0, abs(a.score)), (a, b)
    boundary = ours[-1].score if ours else 0.0
    clear = lambda hits: {h.chunk_id for h in hits if h.score > boundary + rel * max(1.0, boundary)}  # noqa: E731
    assert clear(ours) == clear(theirs)
    for a, b in zip(ours, theirs):
        if a.chunk_id == b.chunk_id:
            assert (a.doc_id, a.start, a.end, a.title) == (b.doc_id, b.start, b.end, b.title)


# --- each store on its own -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_hits_are_ranked_best_first_and_at_most_k(index, mode: str) -> None:
    retriever = _retriever(index, mode)
    for query in QUERIES:
        hits = retriever.retrieve(query, 5)
        assert 0 < len(hits) <= 5
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
        assert all(h.chunk_id in index.chunks and index.chunks[h.chunk_id].doc_id == h.doc_id for h in hits)
        assert len({h.chunk_id for h in hits}) == len(hits)


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_nothing_for_k_zero_or_an_empty_query(index, mode: str) -> None:
    retriever = _retriever(index, mode)
    assert retriever.retrieve(QUERIES[0], 0) == []
    assert retriever.retrieve("   ", 5) == []
    assert index.bm25.retrieve("the of and", 5) == []  # stopwords only: no usable term


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_filters_keep_only_matching_documents_and_still_return_k(index, mode: str) -> None:
    retriever = _retriever(index, mode)
    docs = index.documents
    for filters, ok in (
        ({"doc_type": "policy"}, lambda d: d.doc_type == "policy"),
        ({"doc_type": ["faq", "ticket"]}, lambda d: d.doc_type in ("faq", "ticket")),
        ({"doc_type": "policy", "acl": "public"}, lambda d: d.doc_type == "policy" and d.acl == "public"),
        ({"metadata.status": "current"}, lambda d: d.metadata.get("status") == "current"),
        ({"doc_id": ["faq-2", "faq-10"]}, lambda d: d.id in ("faq-2", "faq-10")),
    ):
        allowed = sum(1 for c in index.chunks.values() if ok(docs[c.doc_id]))
        hits = retriever.retrieve("support policy customer data plan", 4, filters=filters)
        assert all(ok(docs[h.doc_id]) for h in hits), filters
        if mode != "bm25":  # every chunk has a dense score, so k are found whenever k are allowed
            assert len(hits) == min(4, allowed), filters
    assert retriever.retrieve("support policy", 4, filters={"doc_type": "no-such-type"}) == []
    assert retriever.retrieve("support policy", 4, filters={"doc_type": []}) == []


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_bad_filters_are_config_errors_naming_the_fix(index, mode: str) -> None:
    retriever = _retriever(index, mode)
    with pytest.raises(ConfigError, match="unknown filter field 'colour'"):
        retriever.retrieve("support", 3, filters={"colour": "red"})
    with pytest.raises(ConfigError, match="not a string or number"):
        retriever.retrieve("support", 3, filters={"doc_type": [{"x": 1}]})


@pytest.mark.parametrize("mode", ["bm25", "dense"])
def test_clearance_is_applied_before_top_k(index, mode: str) -> None:
    """A public caller gets the unrestricted ranking with every non-public chunk removed, still k of them."""
    retriever = _retriever(index, mode)
    policy = ClearancePolicy()
    docs = index.documents
    for query in QUERIES:
        everything = retriever.retrieve(query, len(index.chunks))
        for level in ("public", "internal", "restricted"):
            seen = retriever.retrieve(query, 5, clearance=level)
            expected = [h.chunk_id for h in everything if policy.allows(level, docs[h.doc_id].acl)][:5]
            assert [h.chunk_id for h in seen] == expected, (query, level)
    public = retriever.retrieve("MLS Cup 2005 New England Revolution", 10, clearance="public")
    assert all(docs[h.doc_id].acl == "public" for h in public)  # unlabelled paragraphs fail closed


def test_an_unknown_clearance_is_refused(index) -> None:
    with pytest.raises(ConfigError, match="unknown clearance 'secret'"):
        index.bm25.retrieve("support", 3, clearance="secret")
    with pytest.raises(ConfigError, match="unknown clearance 'secret'"):
        index.dense(backend="exact").retrieve("support", 3, clearance="secret")


def test_a_policy_of_its_own_is_honoured(index) -> None:
    """A custom policy where unlabelled documents count as public: the HotpotQA paragraphs reappear."""
    caller = ClearancePolicy(unlabelled="public").clearance("public")
    hits = index.bm25.retrieve("MLS Cup 2005 New England Revolution", 3, clearance=caller)
    assert hits and hits[0].doc_id == "31000"


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_excluded_chunks_are_never_returned(index, mode: str) -> None:
    retriever = _retriever(index, mode)
    first = retriever.retrieve(QUERIES[0], 6)
    dropped = [first[0].chunk_id, first[2].chunk_id, "no-such-chunk"]
    again = retriever.retrieve(QUERIES[0], 4, exclude=dropped)
    assert [h.chunk_id for h in again][: 3] == [h.chunk_id for h in first if h.chunk_id not in dropped][: 3]
    assert not {h.chunk_id for h in again} & set(dropped)


def _view(index, level: str | None):
    return visible_corpus(index.chunks, index.documents, ClearancePolicy().clearance(level) if level else None)


def test_a_term_only_in_a_hidden_document_has_no_frequency_for_a_lower_caller(index) -> None:
    """'forestry' and the title 'Order Form - Project Tamarack' are written in contract-38 only (restricted)."""
    everything, documents = _view(index, None)
    holding = [c for c in everything.values() if "forestry" in c.text.lower()]
    assert holding and {c.doc_id for c in holding} == {"contract-38"}
    term = Analyzer()("forestry")[0]
    key = title_key(documents["contract-38"].title)
    for level, df, titled in ((None, len(holding), True), ("restricted", len(holding), True),
                              ("internal", 0, False), ("public", 0, False)):
        chunks, docs = _view(index, level)
        assert chunks.term_stats.df(term) == df, level
        assert (key in docs.title_keys()) is titled, level
        assert ("contract-38" in docs) is titled and (holding[0].id in chunks) is titled
    public, _ = _view(index, "public")
    shown = sum(1 for c in everything.values() if documents[c.doc_id].acl == "public")
    assert public.term_stats.count == len(public) == shown == len(list(public)) < len(everything)


# --- the two stores against each other -------------------------------------------------------------


def test_same_documents_and_chunks(local_index, postgres_index) -> None:
    assert postgres_index.documents == local_index.documents
    assert postgres_index.chunks == local_index.chunks
    assert list(postgres_index.chunks) == list(local_index.chunks)
    assert postgres_index.manifest.corpus_hash == local_index.manifest.corpus_hash


@pytest.mark.parametrize("level", [None, "public", "internal", "restricted"])
def test_views_term_frequencies_and_title_keys_are_the_same(local_index, postgres_index, level) -> None:
    """What the multi-hop engine reads of a caller's corpus: the same in both stores, hyphenated terms
    (counted by the chunks holding all their parts), one-letter and unseen terms included."""
    (ours, our_docs), (theirs, their_docs) = _view(local_index, level), _view(postgres_index, level)
    assert (len(ours), len(our_docs)) == (len(theirs), len(their_docs))
    assert list(ours) == list(theirs) and list(our_docs) == list(their_docs)
    assert dict(ours.items()) == dict(theirs.items()) and dict(our_docs.items()) == dict(their_docs.items())
    every_chunk, every_doc = list(local_index.chunks), list(local_index.documents)
    assert [c in ours for c in every_chunk] == [c in theirs for c in every_chunk]
    assert [ours.get(c) for c in every_chunk] == [theirs.get(c) for c in every_chunk]
    assert [our_docs.get(d) for d in every_doc] == [their_docs.get(d) for d in every_doc]
    analyze = Analyzer()
    terms = sorted({t for q in (*QUERIES, "POL-08 v2, SUP-2290 and KP-214: a spider-man b zzyzx") for t in analyze(q)})
    assert {"pol-08", "sup-2290", "spider-man", "b"} <= set(terms)
    assert [ours.term_stats.df(t) for t in terms] == [theirs.term_stats.df(t) for t in terms]
    if level is None:  # the hyphenated ids are written in the corpus; one letter and 'zzyzx' never are
        assert theirs.term_stats.df("pol-08") > 0 and theirs.term_stats.df("sup-2290") > 0
        assert theirs.term_stats.df("b") == theirs.term_stats.df("zzyzx") == 0
    assert ours.term_stats.count == theirs.term_stats.count
    keys = sorted({title_key(d.title) for d in local_index.documents.values()} | {"no such title", ""})
    our_keys, their_keys = our_docs.title_keys(), their_docs.title_keys()
    assert [k in our_keys for k in keys] == [k in their_keys for k in keys]
    assert set(our_keys) == set(their_keys) and bool(our_keys) == bool(their_keys)


@pytest.mark.parametrize("level", [None, "public", "internal"])
def test_exact_dense_search_gives_the_same_hits(local_index, postgres_index, level) -> None:
    for query in QUERIES:
        ours = local_index.dense().retrieve(query, 10, clearance=level)
        theirs = postgres_index.dense(backend="exact").retrieve(query, 10, clearance=level)
        assert_same_ranking(ours, theirs)


@pytest.mark.parametrize("filters", [None, {"doc_type": ["policy", "faq"]}, {"acl": "internal"}])
def test_bm25_ranks_the_same_within_the_documented_tolerance(local_index, postgres_index, filters) -> None:
    for query in QUERIES:
        ours = local_index.bm25.retrieve(query, 10, filters=filters)
        theirs = postgres_index.bm25.retrieve(query, 10, filters=filters)
        assert_same_ranking(ours, theirs)


def test_both_stores_fold_accents_in_queries_as_in_the_corpus(local_index, postgres_index) -> None:
    assert local_index.manifest.config.fold_accents and postgres_index.manifest.config.fold_accents
    for index in (local_index, postgres_index):
        plain = index.bm25.retrieve("retention policy for customer data", 10)
        assert plain and index.bm25.retrieve("Rétention pólicy for cüstomer dàta", 10) == plain


def test_hybrid_fuses_the_same_lists_into_the_same_hits(local_index, postgres_index) -> None:
    local = local_index.retriever("hybrid")
    pg = postgres_index.retriever("hybrid")
    pg.dense = postgres_index.dense(backend="exact")  # compare exact with exact
    for query in QUERIES:
        for level in (None, "public"):
            ours = [h.chunk_id for h in local.retrieve(query, 5, clearance=level)]
            theirs = [h.chunk_id for h in pg.retrieve(query, 5, clearance=level)]
            assert ours == theirs, (query, level)


def test_hnsw_search_agrees_with_exact_on_this_corpus(postgres_index) -> None:
    exact = postgres_index.dense(backend="exact")
    hnsw = postgres_index.dense()
    assert postgres_index.dense(backend=None) is hnsw  # None: the way the index was built, as locally
    for query in QUERIES:
        for level in (None, "public"):
            want = {h.chunk_id for h in exact.retrieve(query, 10, clearance=level)}
            got = {h.chunk_id for h in hnsw.retrieve(query, 10, clearance=level)}
            assert len(want & got) >= 9


def test_a_bm25_only_index_refuses_dense_modes_with_the_fix(docs, pg_database, tmp_path: Path) -> None:
    url = pg_database + "&index=bm25_only"
    build_pg_index(docs[:5], url, IndexConfig())
    index = open_index(url)
    try:
        with pytest.raises(IndexLoadError, match="built without dense vectors.*--dense"):
            index.retriever("hybrid")
        with pytest.raises(ConfigError, match="unknown retrieval mode 'nope'"):
            index.retriever("nope")
    finally:
        index.close()
