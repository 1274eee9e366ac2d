"""A loaded index reads documents and chunks lazily, takes corpus statistics from its BM25 matrix,
and scores exactly as bm25s does — on the enterprise corpus and the HotpotQA fixture paragraphs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest

from hoprag.security.acl import Clearance, visible_corpus
from hoprag.index.bm25 import BM25Params, BM25Retriever, index_text
from hoprag.index.corpus_views import StoredChunks, StoredDocuments
from hoprag.index.entities import title_key
from hoprag.index.store import build_index, load_index
from hoprag.index.tokenize import Tokenizer
from hoprag.ingest.chunking import chunk_documents
from hoprag.ingest.loaders import load_documents
from hoprag.pipeline.chains import TermWeights
from hoprag.records import Document

pytestmark = pytest.mark.unit
ENTERPRISE = Path(__file__).resolve().parents[2] / "data" / "enterprise" / "corpus.jsonl"


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return load_documents(ENTERPRISE)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, docs: list[Document]) -> Path:
    out = tmp_path_factory.mktemp("lazy") / "index"
    build_index(iter(docs), out)  # a generator: the corpus is read once, never as a list
    return out


def test_documents_and_chunks_are_lazy_mappings_equal_to_the_corpus(built: Path, docs: list[Document]) -> None:
    index = load_index(built)
    assert isinstance(index.documents, StoredDocuments) and isinstance(index.chunks, StoredChunks)
    chunks = chunk_documents(docs, load_index(built).manifest.config.chunk)
    assert len(index.documents) == len(docs) and len(index.chunks) == len(chunks)
    assert list(index.documents) == [d.id for d in docs]
    assert list(index.documents.values()) == docs
    assert list(index.chunks.items()) == [(c.id, c) for c in chunks]
    last = chunks[-1]
    assert index.chunks[last.id] == last and last.id in index.chunks and "nope#0" not in index.chunks
    assert index.chunks.get("nope#0") is None and index.documents.get(docs[3].id) == docs[3]
    assert index.chunks.in_order()[-1] == last and index.chunks.in_order()[0] == chunks[0]
    with pytest.raises(KeyError):
        index.documents["nope"]


def test_hits_filters_and_exclusions_match_an_index_built_in_memory(built: Path, docs: list[Document]) -> None:
    index = load_index(built)
    fresh = BM25Retriever(chunk_documents(docs, index.manifest.config.chunk), docs)
    for query in ("retention period for telemetry", "Project Orion support tier", "wipe method"):
        assert index.bm25.retrieve(query, 8) == fresh.retrieve(query, 8)
        for filters in ({"doc_type": "policy"}, {"acl": ["internal", "public"]}, {"version": "2"}):
            assert index.bm25.retrieve(query, 5, filters=filters) == fresh.retrieve(query, 5, filters=filters)
        first = fresh.retrieve(query, 2)[0].chunk_id
        assert index.bm25.retrieve(query, 5, exclude=[first]) == fresh.retrieve(query, 5, exclude=[first])
        for level in ("public", "internal", "restricted"):
            assert index.bm25.retrieve(query, 6, clearance=level) == fresh.retrieve(query, 6, clearance=level)


@pytest.mark.parametrize("level", ["public", "internal", "restricted"])
def test_a_clearance_view_holds_what_the_copying_view_holds(built: Path, level: str) -> None:
    index = load_index(built)
    clearance = Clearance(level)
    chunks, documents = visible_corpus(index.chunks, index.documents, clearance)
    copied_chunks, copied_docs = visible_corpus(dict(index.chunks.items()), dict(index.documents.items()), clearance)
    assert isinstance(chunks, StoredChunks) and isinstance(documents, StoredDocuments)
    assert list(chunks) == list(copied_chunks) and list(documents.values()) == list(copied_docs.values())
    assert len(chunks) == len(copied_chunks) and len(documents) == len(copied_docs)
    hidden = next((c for c in index.chunks if c not in copied_chunks), None)
    if hidden is not None:
        assert hidden not in chunks and chunks.get(hidden) is None
    # the view's statistics count only the chunks it holds
    analyze = Tokenizer().query
    counted: Counter[str] = Counter()
    for c in copied_chunks.values():
        counted.update(set(analyze(index_text(c, copied_docs[c.doc_id].title))))
    stats = chunks.term_stats
    assert stats.count == len(copied_chunks)
    for term in ("retent", "orion", "telemetri", "polici", "wipe"):
        assert stats.df(term) == counted[term], term


def test_term_frequencies_come_from_the_matrix_columns(built: Path) -> None:
    index = load_index(built)
    stats = index.chunks.term_stats
    texts = [index_text(c, index.documents[c.doc_id].title) for c in index.chunks.values()]
    tokens = [set(Tokenizer().query(t)) for t in texts]
    for term in ("retent", "orion", "kp", "skylin", "never-seen-word"):
        assert stats.df(term) == sum(term in t for t in tokens), term
    # a hyphenated term the index spells as two tokens: the chunks holding both
    both = sum({"data", "resid"} <= t for t in tokens)
    assert both > 0 and stats.df("data-resid") == both
    assert stats.df("x") == 0  # one letter: BM25 never indexes it


def test_term_weights_use_the_given_frequencies() -> None:
    texts = {"a": "orion plan", "b": "plan"}
    weights = TermWeights(texts.__getitem__, str.split, df={"orion": 1, "plan": 2}.get, count=4)
    assert weights.idf("orion") == pytest.approx(math.log(1 + 4 / 2))
    assert weights.idf("plan") == pytest.approx(math.log(1 + 4 / 3))
    assert weights.terms("a") == frozenset({"orion", "plan"})
    counted = TermWeights(texts, str.split)  # without df: one pass over the texts, as before
    assert counted.idf("orion") == pytest.approx(math.log(1 + 2 / 2))


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_the_streaming_build_equals_bm25s(docs: list[Document], method: str) -> None:
    chunks = chunk_documents(docs)
    by_id = {d.id: d for d in docs}
    texts = [index_text(c, by_id[c.doc_id].title) for c in chunks]
    params = BM25Params(method=method)
    raw = bm25s.BM25(method=method, k1=params.k1, b=params.b, delta=params.delta)
    raw.index(Tokenizer().corpus(texts), show_progress=False)
    ours = BM25Retriever(chunks, docs, params)
    assert set(raw.vocab_dict) == set(ours.model.vocab_dict)
    for term, tid in raw.vocab_dict.items():
        if term:
            assert np.array_equal(raw.get_scores_from_ids([tid]), ours.model.get_scores_from_ids([ours.model.vocab_dict[term]]))
    query = [ours.model.vocab_dict[t] for t in ("retent", "polici", "retent")]
    raw_query = [raw.vocab_dict[t] for t in ("retent", "polici", "retent")]
    assert np.array_equal(raw.get_scores_from_ids(raw_query), ours.model.get_scores_from_ids(query))


def test_bm25s_opens_the_saved_arrays(built: Path) -> None:
    index = load_index(built)
    raw = bm25s.BM25.load(str(built / "bm25"), mmap=True)
    tid = index.bm25.model.vocab_dict["retent"]
    assert np.array_equal(raw.get_scores_from_ids([tid]), index.bm25.model.get_scores_from_ids([tid]))


def test_loading_and_searching_never_import_bm25s_or_scipy(built: Path) -> None:
    script = ("import sys, json\nfrom hoprag.index.store import load_index\n"
              f"hits = load_index({str(built)!r}).bm25.retrieve('retention period', 3)\n"
              "print(json.dumps([len(hits), 'bm25s' in sys.modules, 'scipy' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [3, False, False]


def test_the_manifest_records_the_build(built: Path) -> None:
    build = json.loads((built / "manifest.json").read_text(encoding="utf-8"))["build"]
    assert build["seconds"] > 0 and build["peak_rss_mb"] > 10


def test_a_title_shared_by_hidden_and_visible_documents_is_a_link_key_for_whoever_sees_one(tmp_path: Path) -> None:
    """A title's key rows are read only until a visible one (the first rows here are hidden)."""
    titled = [Document(id=f"r{i}", title="Project Alder", text=f"Restricted note {i} on the alder line.", acl="restricted")
              for i in range(3)]
    docs = [*titled, Document(id="p0", title="Project Alder", text="The public alder summary.", acl="public"),
            Document(id="r9", title="Project Birch", text="Birch is restricted.", acl="restricted")]
    build_index(docs, tmp_path / "index")
    index = load_index(tmp_path / "index")
    alder, birch = title_key("Project Alder"), title_key("Project Birch")
    for level, sees_birch in ((None, True), ("restricted", True), ("public", False)):
        _, documents = visible_corpus(index.chunks, index.documents, Clearance(level) if level else None)
        keys = documents.title_keys()
        assert alder in keys and (birch in keys) is sees_birch and title_key("Project Cedar") not in keys, level


def test_the_arrays_a_query_reads_are_plain_views_of_read_only_maps(built: Path) -> None:
    """Indexing an np.memmap runs Python code per slice; the query path gets plain ndarray views of the
    maps (the file stays mapped through the view's base), and nothing can write to them."""
    index = load_index(built)
    scores = index.bm25.model.scores
    db = index.chunks.db
    for array in (scores["data"], scores["indices"], scores["indptr"], db.chunk_doc, db.chunk_acl):
        assert type(array) is np.ndarray and isinstance(array.base, np.memmap) and not array.flags.writeable
    whole = load_index(built, mmap=False).bm25.model.scores["data"]
    assert type(whole) is np.ndarray and not isinstance(whole.base, np.memmap)
    assert np.array_equal(whole, scores["data"])


def test_an_index_file_that_is_no_npy_array_is_named_as_such(built: Path, tmp_path: Path) -> None:
    """numpy calls any file without the .npy header 'pickled data' and suggests loading it unsafely;
    the index says what the file is not, and how to rebuild."""
    import shutil

    from hoprag.errors import IndexLoadError
    from hoprag.index.npy_map import load_npy

    copy = tmp_path / "index"
    shutil.copytree(built, copy)
    (copy / "chunk_acl.npy").write_text("garbage\n", encoding="utf-8")
    with pytest.raises(IndexLoadError, match=r"chunk_acl.npy unreadable \(not a .npy array file.*Fix: run `hoprag index") as err:
        load_index(copy)
    assert "pickle" not in str(err.value)
    (copy / "bm25" / "data.csc.index.npy").write_bytes(b"")
    with pytest.raises(ValueError, match="not a .npy array file"):
        load_npy(copy / "bm25" / "data.csc.index.npy")
