"""Judgment pools on the enterprise set: union per case, seeded blind order, provenance, qrels round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.datasets.schema import load_cases
from hoprag.errors import ConfigError, HopragError, InputError
from hoprag.evaluation.pools import (
    NO_DENSE_NOTE,
    Judgment,
    build_pool,
    import_judgments,
    read_judgments,
    resolve_judgments,
    write_pool,
)
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.ingest.loaders import load_corpora
from hoprag.pipeline.factory import make_engine
from hoprag.trec import read_qrels

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).parents[2] / "data" / "enterprise"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    out = tmp_path_factory.mktemp("pool-index") / "index"
    build_index(load_corpora([ENTERPRISE / "corpus.jsonl"]), out, IndexConfig())
    return load_index(out)


@pytest.fixture(scope="module")
def cases():
    return load_cases(ENTERPRISE / "cases.jsonl")


@pytest.fixture(scope="module")
def pool(index, cases):
    return build_pool(index, cases, depth=3, seed=1)


def _docs(hits, depth):
    seen: list[str] = []
    for hit in hits:
        if hit.doc_id not in seen:
            seen.append(hit.doc_id)
    return seen[:depth]


def test_ent_001_pool_is_the_union_of_bm25_and_multihop_documents(pool):
    # by hand from the two rankings: bm25 top 3 = contract-14, email-8, policy-8-v1;
    # multi-hop evidence top 3 (graph hop on, the default) = policy-8-v1, contract-31, contract-14; the union has 4
    docs = {c.doc_id for c in pool.candidates if c.case_id == "ent-001"}
    assert docs == {"contract-14", "email-8", "policy-8-v1", "contract-31"}
    assert pool.sizes()["ent-001"] == 4


def test_pool_size_is_the_union_per_case(index, cases, pool):
    engine = make_engine("multihop", index)
    for case in cases:
        bm25 = _docs(index.bm25.retrieve(case.query, 15), 3)
        multihop = _docs([e.hit for e in engine.answer(case.query, case_id=case.case_id).evidence], 3)
        pooled = [c.doc_id for c in pool.candidates if c.case_id == case.case_id]
        assert len(pooled) == len(set(pooled)), "a document is pooled once per case"
        assert set(pooled) == set(bm25) | set(multihop)
        assert pool.sizes()[case.case_id] == len(set(bm25) | set(multihop))


def test_the_manifest_says_dense_was_left_out(pool):
    assert pool.manifest["systems"] == ["bm25", "multihop"]
    assert pool.manifest["dense"] is False
    assert pool.manifest["notes"] == [NO_DENSE_NOTE]
    assert (pool.manifest["depth"], pool.manifest["seed"]) == (3, 1)


def test_same_seed_same_order_other_seed_other_order(index, cases, pool):
    again = build_pool(index, cases, depth=3, seed=1)
    assert again.candidates == pool.candidates
    other = build_pool(index, cases, depth=3, seed=2)
    order = [(c.case_id, c.doc_id) for c in pool.candidates]
    other_order = [(c.case_id, c.doc_id) for c in other.candidates]
    assert sorted(order) == sorted(other_order)
    assert order != other_order


def test_files_hide_the_systems_and_provenance_maps_back(pool, tmp_path):
    out = write_pool(pool, tmp_path / "pool")
    annotation = [json.loads(line) for line in (out / "annotation.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [set(row) for row in annotation] == [{"case_id", "question", "doc_id", "title", "text"}] * len(annotation)
    assert "bm25" not in (out / "annotation.jsonl").read_text(encoding="utf-8")
    contract = next(r for r in annotation if r["case_id"] == "ent-001" and r["doc_id"] == "contract-14")
    assert contract["title"].startswith("Master Subscription") and "Project Orion" in contract["text"]
    lines = (out / "pool.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [f"{r['case_id']} 0 {r['doc_id']} -1" for r in annotation]
    provenance = {(p["case_id"], p["doc_id"]): p["found_by"] for p in
                  map(json.loads, (out / "provenance.jsonl").read_text(encoding="utf-8").splitlines())}
    assert set(provenance) == {(r["case_id"], r["doc_id"]) for r in annotation}
    assert provenance[("ent-001", "contract-14")] == {"bm25": {"rank": 1, "chunk_ids": ["contract-14#0"]},
                                                      "multihop": {"rank": 3, "chunk_ids": ["contract-14#0"]}}
    assert provenance[("ent-001", "contract-31")] == {"multihop": {"rank": 2, "chunk_ids": ["contract-31#0"]}}
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["candidates"] == len(annotation)


def test_clearance_keeps_hidden_documents_out_of_the_pool(index, cases):
    public = build_pool(index, cases, depth=10, seed=0, clearance="public")
    acl = {doc.id: doc.acl for doc in index.documents.values()}
    assert {acl[c.doc_id] for c in public.candidates} == {"public"}
    assert public.manifest["clearance"] == "public"


def _judge(pool, tmp_path, extra=()):
    rows = [{"case_id": c.case_id, "doc_id": c.doc_id, "grade": 1 if c.doc_id == "contract-14" else 0,
             "labeller": "ana", "time": "2026-11-30T09:00:00Z"} for c in pool.candidates if c.case_id == "ent-001"]
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, *extra]), encoding="utf-8")
    return path


def test_import_round_trips_to_qrels_and_keeps_labeller_and_time(pool, tmp_path):
    out = write_pool(pool, tmp_path / "pool")
    conflict = [{"case_id": "ent-001", "doc_id": "contract-31", "grade": 2, "labeller": "ben", "time": "2026-11-30T10:00:00Z"}]
    result = import_judgments(out, _judge(pool, tmp_path, conflict), tmp_path / "qrels.txt")
    assert read_qrels(tmp_path / "qrels.txt") == {
        "ent-001": {"contract-14": 1, "email-8": 0, "policy-8-v1": 0, "contract-31": 2}}  # ana 0, ben 2: tie → higher
    kept = [json.loads(line) for line in result.judgments_path.read_text(encoding="utf-8").splitlines()]
    assert len(kept) == result.judgments == 5
    assert kept[-1] == {**conflict[0]}
    assert [(c["case_id"], c["doc_id"]) for c in result.conflicts] == [("ent-001", "contract-31")]
    assert result.judged_pairs == 4 and len(result.unjudged) == len(pool.candidates) - 4


def test_conflict_rules_majority_and_max():
    judgments = [Judgment("q", "d", g, who, "t") for g, who in ((0, "a"), (0, "b"), (2, "c"))]
    assert resolve_judgments(judgments, "majority")[0] == {"q": {"d": 0}}
    assert resolve_judgments(judgments, "max")[0] == {"q": {"d": 2}}
    assert resolve_judgments(judgments[:2])[1] == []  # agreeing labellers are no conflict
    with pytest.raises(ConfigError, match="valid: majority, max"):
        resolve_judgments(judgments, "vote")


def test_bad_judgments_are_named(pool, tmp_path):
    out = write_pool(pool, tmp_path / "pool")
    outside = {"case_id": "ent-001", "doc_id": "policy-14-v2", "grade": 1, "labeller": "ana", "time": "t"}
    with pytest.raises(InputError, match="not in the pool"):
        import_judgments(out, _judge(pool, tmp_path, [outside]), tmp_path / "q.txt")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": "ent-001", "doc_id": "faq-2", "grade": "high", "labeller": "a", "time": "t"}\n',
                   encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:1: judgment field 'grade' is 'high'"):
        read_judgments(bad)
    with pytest.raises(HopragError, match="no pool.txt"):
        import_judgments(tmp_path, bad, tmp_path / "q.txt")


def test_cli_pool_and_pool_import(index, tmp_path, capsys):
    pool_dir = tmp_path / "cli-pool"
    main(["pool", str(index.directory), str(ENTERPRISE / "cases.jsonl"), "--depth", "3", "--seed", "1",
          "--out", str(pool_dir)])
    printed = capsys.readouterr()
    assert "bm25, multihop at depth 3" in printed.out and "no dense vectors" in printed.err
    rows = [json.loads(line) for line in (pool_dir / "annotation.jsonl").read_text(encoding="utf-8").splitlines()]
    judgments = tmp_path / "j.jsonl"
    judgments.write_text("".join(json.dumps({"case_id": r["case_id"], "doc_id": r["doc_id"], "grade": 1,
                                             "labeller": "ana", "time": "t"}) + "\n" for r in rows), encoding="utf-8")
    main(["pool-import", str(pool_dir), str(judgments), "--out", str(tmp_path / "qrels.txt"), "--conflict", "max"])
    qrels = read_qrels(tmp_path / "qrels.txt")
    assert sum(len(docs) for docs in qrels.values()) == len(rows)
