"""Clearance: the policy's ordering and fail-closed rules, and filtering inside every retriever.

The retrievers run over the enterprise corpus (36 documents: 9 public, 18 internal, 9 restricted).
Filtering happens before top-k, so a caller at a clearance gets exactly the unrestricted ranking with
the documents above it removed: still k hits whenever k allowed ones match.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hoprag.security.acl import (
    Clearance,
    ClearancePolicy,
    LeakDetector,
    acl_counts,
    parse_levels,
    visible_corpus,
)
from hoprag.errors import ConfigError
from hoprag.security.clearance import resolve_clearance
from hoprag.index.bm25 import BM25Retriever
from hoprag.gates.embedding_source import HashingEmbedder
from hoprag.index.chunk_table import ChunkTable
from hoprag.index.dense import DenseRetriever
from hoprag.index.hybrid import HybridRetriever
from hoprag.index.store import build_index, load_index
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.ingest.loaders import load_corpora
from hoprag.records import Document, Hit

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).resolve().parents[2] / "data" / "enterprise" / "corpus.jsonl"
LEVELS = ("public", "internal", "confidential", "restricted")
QUERIES = (
    "Project Orion plan retention",
    "order form plan support tier",
    "KP-214 Skyline Telemetry product family",
    "data residency region policy",
    "legal operations contract pilot",
)


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return load_corpora([CORPUS])


@pytest.fixture(scope="module")
def chunks(docs):
    # small chunks: several per document, so a document's chunks must all be filtered together
    return chunk_documents(docs, ChunkConfig(max_chars=300, overlap_chars=40))


@pytest.fixture(scope="module")
def bm25(chunks, docs) -> BM25Retriever:
    return BM25Retriever(chunks, docs)


def _allowed(docs: list[Document], level: str) -> set[str]:
    rank = LEVELS.index(level)
    return {d.id for d in docs if LEVELS.index(d.acl) <= rank}


def _filtered(hits: list[Hit], allowed: set[str], k: int) -> list[tuple[str, float, int]]:
    """The unrestricted ranking with forbidden documents removed, re-ranked from 1."""
    kept = [h for h in hits if h.doc_id in allowed][:k]
    return [(h.chunk_id, round(h.score, 5), rank) for rank, h in enumerate(kept, start=1)]


def _rows(hits: list[Hit]) -> list[tuple[str, float, int]]:
    return [(h.chunk_id, round(h.score, 5), h.rank) for h in hits]


# --- the policy -------------------------------------------------------------------------------------


def test_levels_are_ordered_and_each_sees_its_own_and_lower_classes() -> None:
    policy = ClearancePolicy()
    assert policy.levels == LEVELS
    assert policy.allowed_classes("public") == ("public",)
    assert policy.allowed_classes("confidential") == ("public", "internal", "confidential")
    assert policy.allows("internal", "public") and policy.allows("internal", "internal")
    assert not policy.allows("internal", "confidential") and not policy.allows("confidential", "restricted")
    assert policy.allows("restricted", "restricted")
    # names are matched without case or surrounding spaces
    assert policy.allows(" Internal ", "PUBLIC") and policy.parse("RESTRICTED") == "restricted"


def test_a_document_without_a_class_is_denied_above_public_by_default_and_configurably() -> None:
    default = ClearancePolicy()
    assert default.unlabelled == "internal"
    assert not default.allows("public", "") and default.allows("internal", "")
    strict = ClearancePolicy(unlabelled="restricted")
    assert not strict.allows("confidential", "") and strict.allows("restricted", "")
    open_ = ClearancePolicy(unlabelled="public")
    assert open_.allows("public", "")
    assert ClearancePolicy(levels=("only",)).unlabelled == "only"


def test_a_class_the_policy_does_not_list_counts_as_the_highest_level() -> None:
    policy = ClearancePolicy()
    assert policy.level_of("secret") == "restricted" and policy.level_of("Restricted ") == "restricted"
    assert not policy.allows("confidential", "secret") and policy.allows("restricted", "secret")


def test_an_unknown_clearance_names_the_valid_levels_and_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        ClearancePolicy().parse("secret")
    message = str(caught.value)
    assert "'secret'" in message and "public, internal, confidential, restricted" in message
    assert "--clearance" in message
    with pytest.raises(ConfigError, match="valid: public, internal"):
        ClearancePolicy(unlabelled="nobody")
    with pytest.raises(ConfigError, match="repeat"):
        ClearancePolicy(levels=("a", "b", "A"))
    with pytest.raises(ConfigError, match="non-empty"):
        parse_levels(" , ")
    with pytest.raises(ConfigError, match="not a level name"):
        resolve_clearance(3)  # type: ignore[arg-type]


def test_custom_levels_from_the_command_line_form() -> None:
    policy = parse_levels("open, staff ,board")
    assert policy.levels == ("open", "staff", "board") and policy.unlabelled == "staff"
    board = policy.clearance("board")
    assert board.allows("staff") and board.allows("public")  # 'public' is not a level here: the highest
    assert not policy.clearance("staff").allows("public")
    assert board.describe() == "board of open<staff<board (unlabelled=staff)"
    assert ClearancePolicy().clearance("internal").describe() == "internal"
    assert resolve_clearance("Internal") == Clearance("internal") and resolve_clearance(None) is None


def test_visible_corpus_keeps_only_documents_and_chunks_at_or_below_the_clearance(docs, chunks) -> None:
    chunk_map = {c.id: c for c in chunks}
    doc_map = {d.id: d for d in docs}
    for level in LEVELS:
        seen_chunks, seen_docs = visible_corpus(chunk_map, doc_map, Clearance(level))
        assert set(seen_docs) == _allowed(docs, level)
        assert {c.doc_id for c in seen_chunks.values()} == set(seen_docs)
        assert len(seen_chunks) == sum(1 for c in chunks if c.doc_id in seen_docs)
    assert visible_corpus(chunk_map, doc_map, None) == (chunk_map, doc_map)


# --- retrievers ---------------------------------------------------------------------------------------


def test_bm25_filters_before_top_k_at_every_level(bm25, docs) -> None:
    assert acl_counts(docs) == {"internal": 18, "public": 9, "restricted": 9}
    for query in QUERIES:
        everything = bm25.retrieve(query, k=len(bm25))
        for level in LEVELS:
            allowed = _allowed(docs, level)
            for k in (1, 5, 10):
                hits = bm25.retrieve(query, k, clearance=level)
                assert {h.doc_id for h in hits} <= allowed
                assert _rows(hits) == _filtered(everything, allowed, k), (query, level, k)
                assert len(hits) == min(k, sum(1 for h in everything if h.doc_id in allowed))
    # the restricted level is everything; None is unrestricted
    assert bm25.retrieve(QUERIES[0], 10, clearance="restricted") == bm25.retrieve(QUERIES[0], 10)


def test_clearance_combines_with_filters_and_exclusions(bm25, docs) -> None:
    query = "Project Orion plan retention"
    public = bm25.retrieve(query, 5, clearance="public")
    assert public and all(h.doc_id in _allowed(docs, "public") for h in public)
    rest = bm25.retrieve(query, 5, clearance="public", exclude=[public[0].chunk_id])
    assert public[0].chunk_id not in {h.chunk_id for h in rest} and len(rest) == 5
    # a filter on restricted documents at internal clearance: nothing, never the restricted ones
    assert bm25.retrieve(query, 5, filters={"acl": "restricted"}, clearance="internal") == []
    contracts = bm25.retrieve(query, 5, filters={"doc_type": "contract"}, clearance="restricted")
    assert contracts and {h.doc_id for h in contracts} <= {d.id for d in docs if d.doc_type == "contract"}
    assert bm25.retrieve_many([query, query], 3, clearance="public") == [public[:3], public[:3]]
    with pytest.raises(ConfigError, match="valid"):
        bm25.retrieve(query, 5, clearance="top-secret")
    with pytest.raises(ConfigError, match="valid"):
        bm25.retrieve(query, 0, clearance="top-secret")  # checked even when nothing is asked for


def test_unlabelled_and_unknown_classes_fail_closed_in_retrieval(docs) -> None:
    relabelled = [
        replace(d, acl="") if d.id == "policy-11" else replace(d, acl="secret") if d.id == "catalog-3" else d
        for d in docs
    ]
    chunks = chunk_documents(relabelled, ChunkConfig())
    bm25 = BM25Retriever(chunks, relabelled)
    support = "Support Response Policy critical response target"
    assert "policy-11" in {h.doc_id for h in bm25.retrieve(support, 36)}
    assert "policy-11" not in {h.doc_id for h in bm25.retrieve(support, 36, clearance="public")}
    assert "policy-11" in {h.doc_id for h in bm25.retrieve(support, 36, clearance="internal")}
    catalog = "Kestrel Plan Catalog 2026 H1 product family"
    for level in ("public", "internal", "confidential"):
        assert "catalog-3" not in {h.doc_id for h in bm25.retrieve(catalog, 36, clearance=level)}
    assert "catalog-3" in {h.doc_id for h in bm25.retrieve(catalog, 36, clearance="restricted")}
    # a policy whose unlabelled level is public lets policy-11 through to a public caller
    lenient = ClearancePolicy(unlabelled="public").clearance("public")
    assert "policy-11" in {h.doc_id for h in bm25.retrieve(support, 36, clearance=lenient)}


def test_a_table_without_documents_refuses_a_clearance(chunks) -> None:
    table = ChunkTable(chunks, None, kind="BM25")
    assert table.allowed(None, ()) is None
    with pytest.raises(ConfigError, match="cannot enforce a clearance"):
        table.allowed(None, (), Clearance("public"))


def test_masks_are_cached_read_only_and_never_widened_by_exclusions(bm25) -> None:
    mask = bm25.table.clearance_mask(Clearance("public"))
    assert mask is bm25.table.clearance_mask(Clearance("public"))
    assert not mask.flags.writeable
    combined = bm25.table.allowed(None, [bm25.table.chunk_ids[0]], Clearance("public"))
    assert combined is not mask and not combined[0] and int(combined.sum()) <= int(mask.sum())
    assert np.array_equal(bm25.table.clearance_mask(Clearance("restricted")), np.ones(len(bm25), dtype=bool))


@pytest.fixture(scope="module")
def dense(chunks, docs) -> DenseRetriever:
    # feature hashing: a real, fast embedder (loading a packaged model costs more than this whole file)
    return DenseRetriever(chunks, docs, HashingEmbedder(64))


def test_dense_and_hybrid_return_k_allowed_hits_at_every_level(bm25, dense, docs) -> None:
    n = len(dense)
    for fusion in ("rrf", "weighted"):
        hybrid = HybridRetriever(bm25, dense, fusion=fusion)
        for query in QUERIES:
            everything = dense.retrieve(query, k=n)
            for level in LEVELS:
                allowed = _allowed(docs, level)
                for k in (1, 5, 10):
                    hits = dense.retrieve(query, k, clearance=level)
                    assert _rows(hits) == _filtered(everything, allowed, k)
                    fused = hybrid.retrieve(query, k, clearance=level)
                    assert {h.doc_id for h in fused} <= allowed
                    assert len(fused) == k  # dense scores every allowed chunk: k always exist here
                    # fusion over allowed lists only: each side was asked for its allowed top depth
                    depth = hybrid.depth(k)
                    sides = [bm25.retrieve(query, depth, clearance=level), dense.retrieve(query, depth, clearance=level)]
                    assert {h.chunk_id for h in fused} <= {h.chunk_id for side in sides for h in side}
    assert dense.retrieve_many(QUERIES[:2], 4, clearance="public") == [
        dense.retrieve(q, 4, clearance="public") for q in QUERIES[:2]
    ]


def test_the_manifest_records_acl_classes_and_their_document_counts(tmp_path, docs) -> None:
    manifest = build_index(docs, tmp_path / "index")
    assert manifest.acl_classes == {"internal": 18, "public": 9, "restricted": 9}
    loaded = load_index(tmp_path / "index")
    assert loaded.manifest.acl_classes == manifest.acl_classes
    assert sum(manifest.acl_classes.values()) == manifest.document_count
    unlabelled = build_index([replace(d, acl="") for d in docs[:3]], tmp_path / "unlabelled")
    assert unlabelled.acl_classes == {"": 3}


def test_the_leak_detector_finds_ids_titles_and_text_windows_only_of_hidden_documents(docs) -> None:
    detector = LeakDetector(docs, Clearance("internal"))
    contract = next(d for d in docs if d.id == "contract-14")
    assert detector.hidden_ids == {d.id for d in docs if d.acl == "restricted"}
    assert detector.find("cited [contract-14, hop 1]") == {"contract-14"}
    assert detector.find("contract-140 and xcontract-14 are other names") == set()
    assert detector.find(f"title: {contract.title}") == {"contract-14"}
    window = contract.text[300:341]
    assert detector.find("…" + window.replace(" ", "\n  ") + "…") == {"contract-14"}  # wrapped text still matches
    assert detector.find(contract.text[300:330]) == set()  # shorter than a window: not evidence
    # text a visible document also holds is not a leak of the hidden one
    policy = next(d for d in docs if d.id == "policy-8-v2")
    assert detector.find(policy.text) == set()
    assert detector.find_in({"steps": [{"hits": [{"doc_id": "email-8"}]}], "ok": ("policy-11",)}) == {"email-8"}
    assert LeakDetector(docs, Clearance("restricted")).find(contract.text) == set()
