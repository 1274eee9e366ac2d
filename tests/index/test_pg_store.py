"""The PostgreSQL index store on its own: URLs, errors that hide the password, atomic rebuilds, HNSW
recall on the bundled HotpotQA sample, and the CLI taking a URL wherever it takes an index."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.errors import ConfigError, EmptyCorpusError, IndexLoadError
from hoprag.index import pg_load
from hoprag.index.open import is_pg_url, open_index
from hoprag.index.pg_build import build_pg_index
from hoprag.index.pg_schema import display_url, parse_target
from hoprag.index.store import IndexConfig
from hoprag.ingest.loaders import load_corpora
from tests.cli_run import run_hoprag as run_cli

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data"
DEAD = "postgresql://hoprag:s3cret-pw@127.0.0.1:9/nowhere?index=x"


@pytest.fixture(scope="module")
def database(pg_server: object) -> str:
    import psycopg

    base = pg_server.get_uri()  # type: ignore[attr-defined]
    name = f"pgstore_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.replace("/postgres?", f"/{name}?", 1)




def test_urls_parse_into_a_connection_an_index_name_and_a_schema() -> None:
    target = parse_target("postgresql://u:pw@db.example:5433/rag?sslmode=require&index=hotpot")
    assert target.name == "hotpot" and target.schema == "hoprag_idx_hotpot"
    assert target.conninfo == "postgresql://u:pw@db.example:5433/rag?sslmode=require"
    assert target.display == "postgresql://u:***@db.example:5433/rag?sslmode=require&index=hotpot"
    assert parse_target("postgres://u@h/db").name == "default"
    assert display_url("postgresql://h/db?password=hunter2&index=a") == "postgresql://h/db?password=***&index=a"
    assert is_pg_url("postgres://h/db") and is_pg_url("postgresql://h/db") and not is_pg_url("postgresql-index")
    with pytest.raises(ConfigError, match="index name 'Bad-Name'.*lowercase"):
        parse_target("postgresql://u:pw@h/db?index=Bad-Name")


def test_a_dead_url_is_one_clear_error_without_the_password() -> None:
    with pytest.raises(IndexLoadError) as caught:
        open_index(DEAD)
    message = str(caught.value)
    assert "cannot reach the PostgreSQL index at postgresql://hoprag:***@127.0.0.1:9/nowhere" in message
    assert "Fix: start the server" in message
    assert "s3cret-pw" not in message


def test_the_cli_reports_a_dead_url_without_a_traceback_or_the_password(capsys, tmp_path: Path) -> None:
    corpus = DATA / "enterprise" / "corpus.jsonl"
    for argv in (["search", DEAD, "retention"], ["index", str(corpus), "--store", DEAD, "-q"],
                 ["ask", DEAD, "What is KP-214?"], ["run", DEAD, str(DATA / "enterprise" / "cases.jsonl"),
                                                     "--out", str(tmp_path / "t.jsonl"), "-q"]):
        code, out, err = run_cli(argv, capsys)
        assert code == 2, argv
        assert "cannot reach the PostgreSQL index" in out + err
        assert "s3cret-pw" not in out + err and "Traceback" not in out + err


def test_a_missing_index_names_the_command_that_builds_it(database: str) -> None:
    with pytest.raises(IndexLoadError, match="no index named 'absent'.*hoprag index CORPUS --out"):
        open_index(database + "&index=absent")


def test_a_rebuild_replaces_the_index_and_a_failed_one_leaves_it(database: str, monkeypatch) -> None:
    url = database + "&index=rebuilt"
    docs = load_corpora([DATA / "enterprise" / "corpus.jsonl"])
    first = build_pg_index(docs[:10], url)
    second = build_pg_index(docs[10:20], url)
    index = open_index(url)
    assert index.manifest.artifact_id == second.artifact_id != first.artifact_id
    assert sorted(index.documents) == sorted(d.id for d in docs[10:20])
    index.close()

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(pg_load.PgLoader, "finish", broken)  # every row streamed, the whole-corpus tables not
    with pytest.raises(RuntimeError, match="disk full"):
        build_pg_index(docs, url)
    monkeypatch.undo()
    index = open_index(url)
    assert index.manifest.artifact_id == second.artifact_id
    with index.pool.borrow() as conn:
        schemas = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'hoprag_idx_%'")}
    assert "hoprag_idx_rebuilt__stage" not in schemas
    index.close()
    with pytest.raises(EmptyCorpusError):
        build_pg_index([], url)
    with pytest.raises(ConfigError, match="BM25 'lucene' only"):
        build_pg_index(docs, url, IndexConfig(bm25={"method": "atire"}))


@pytest.mark.slow
def test_hnsw_recall_at_10_against_exact_on_the_hotpotqa_sample(database: str) -> None:
    """Every paragraph of the bundled HotpotQA sample (109 questions), static embedder."""
    result = import_dataset("hotpotqa", sorted((DATA / "hotpotqa").glob("*.json")))
    url = database + "&index=hotpot"
    manifest = build_pg_index(result.documents, url, IndexConfig(dense=True, embedder="static"))
    assert manifest.chunk_count > 900
    index = open_index(url)
    exact, hnsw = index.dense(backend="exact"), index.dense()
    recalls = []
    for case in result.cases:
        for level in (None, "internal"):
            want = {h.chunk_id for h in exact.retrieve(case.query, 10, clearance=level)}
            got = {h.chunk_id for h in hnsw.retrieve(case.query, 10, clearance=level)}
            recalls.append(len(want & got) / len(want))
    assert sum(recalls) / len(recalls) >= 0.95
    index.close()


def test_index_search_ask_and_run_take_the_url(database: str, capsys, tmp_path: Path) -> None:
    url = database + "&index=cli"
    corpus, cases = DATA / "enterprise" / "corpus.jsonl", DATA / "enterprise" / "cases.jsonl"
    code, out, _ = run_cli(["index", str(corpus), "--store", url, "-q"], capsys)
    assert code == 0 and "indexed 36 documents" in out and "hoprag_idx" not in out
    code, out, _ = run_cli(["search", url, "Project Orion retention", "--json", "-k", "3", "--clearance", "public"], capsys)
    hits = json.loads(out)
    assert code == 0 and len(hits) == 3 and all(h["retriever"] == "bm25" for h in hits)
    code, out, _ = run_cli(["ask", url, "What is KP-214?", "--json"], capsys)
    assert code == 0 and json.loads(out)["case_id"] == "ask"
    code, out, _ = run_cli(["run", url, str(cases), "--out", str(tmp_path / "t.jsonl"), "-q", "--k", "5"], capsys)
    assert code == 0, out
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    traces = [r for r in rows if "hoprag_traces" not in r]  # the first line is the run's header
    assert len(traces) == 16 and all(t["steps"] for t in traces)
    code, out, err = run_cli(["search", url, "retention", "--mode", "dense"], capsys)
    assert code == 2 and "built without dense vectors" in out + err
    code, out, err = run_cli(["index", str(corpus), "--store", url, "--out", str(tmp_path / "ix")], capsys)
    # with --out, --store is the run store the index's gate checks are recorded in: an index URL is no run store
    assert code == 2 and "cannot open the run store" in out + err and "Fix:" in out + err, out + err


def test_the_service_answers_from_a_postgres_index(database: str, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hoprag.service.app import ServiceConfig, create_app

    url = database + "&index=served"
    build_pg_index(load_corpora([DATA / "enterprise" / "corpus.jsonl"]), url)
    app = create_app(ServiceConfig(index_dir=url, store=str(tmp_path / "store.db")))
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:  # a loopback Host: the allow-list
            reply = client.post("/api/ask", json={"question": "What is KP-214?", "store": False})
            assert reply.status_code == 200, reply.text
            body = reply.json()
            assert body["answer"] and body["clearance"] == "public" and body["steps"][0]["hits"]
            docs = app.state.hoprag.index.documents
            cited = {h["doc_id"] for step in body["steps"] for h in step["hits"]}
            assert cited and all(docs[d].acl == "public" for d in cited)  # callers without a token are public
    finally:
        app.state.hoprag.store.close()
        app.state.hoprag.executor.shutdown(wait=False)
        app.state.hoprag.index.close()


def test_threads_share_the_index_and_get_what_one_thread_gets(database: str) -> None:
    """The multi-hop engine and the service retrieve from many threads; each borrows a connection."""
    from concurrent.futures import ThreadPoolExecutor

    url = database + "&index=threads"
    build_pg_index(load_corpora([DATA / "enterprise" / "corpus.jsonl"]), url)
    index = open_index(url)
    queries = [c["query"] for c in map(json.loads, (DATA / "enterprise" / "cases.jsonl").read_text().splitlines())]
    alone = [[h.chunk_id for h in index.bm25.retrieve(q, 5, clearance="internal")] for q in queries]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: [h.chunk_id for h in index.bm25.retrieve(q, 5, clearance="internal")],
                                 queries * 4))
    assert together == alone * 4
    index.close()


def _trace_shape(trace) -> tuple:
    """What a trace gathered and answered, without timings and scores (float4 vs float8 sums)."""
    steps = [(s.step_id, s.hop, s.sub_query, s.issued_query, [h.chunk_id for h in s.hits], s.selected, s.depends_on,
              s.bridge, s.duplicates) for s in trace.steps]
    return steps, [e.chunk_id for e in trace.evidence], trace.answer.text, trace.answer.abstained, trace.stop_reason


def _same_traces(docs, cases, database: str, name: str, tmp_path: Path, levels) -> None:
    from hoprag.index.store import build_index
    from hoprag.pipeline.factory import make_engine

    url = database + f"&index={name}"
    build_pg_index(docs, url)
    build_index(docs, tmp_path / name, IndexConfig(graph=False))
    pg, local = open_index(url), open_index(str(tmp_path / name))
    try:
        for level in levels:
            # the local index's entity-graph hop has no Postgres counterpart: it is off for the comparison
            ours = make_engine("multihop", local, graph=False, clearance=level)
            theirs = make_engine("multihop", pg, clearance=level)
            for case in cases:
                a = ours.answer(case.query, case_id=case.case_id)
                b = theirs.answer(case.query, case_id=case.case_id)
                assert _trace_shape(a) == _trace_shape(b), (level, case.case_id)
    finally:
        pg.close()


def test_the_multihop_engine_runs_on_postgres_as_on_the_local_index(database: str, tmp_path: Path) -> None:
    """Same corpus, same BM25 ranking, same corpus statistics and title keys: every enterprise question
    gathers the same evidence, step by step, for every caller (a public caller's view lacks 23 documents)."""
    from hoprag.datasets.schema import load_cases

    docs = load_corpora([DATA / "enterprise" / "corpus.jsonl"])
    cases = load_cases(DATA / "enterprise" / "cases.jsonl")
    _same_traces(docs, cases, database, "engine", tmp_path, (None, "public", "internal"))


@pytest.mark.slow
def test_the_multihop_engine_on_hotpotqa_is_the_same_on_both_stores(database: str, tmp_path: Path) -> None:
    """The bundled HotpotQA sample (109 questions), every third paragraph made restricted, so that a
    public caller's term weights and known titles come from two thirds of the corpus."""
    from dataclasses import replace

    result = import_dataset("hotpotqa", sorted((DATA / "hotpotqa").glob("*.json")))
    docs = [replace(d, acl="restricted" if i % 3 == 0 else "public") for i, d in enumerate(result.documents)]
    _same_traces(docs, result.cases, database, "hotpot_engine", tmp_path, (None, "public"))


def test_an_index_of_an_older_layout_is_refused_with_the_rebuild_command(database: str) -> None:
    url = database + "&index=old_layout"
    build_pg_index(load_corpora([DATA / "enterprise" / "corpus.jsonl"])[:3], url)
    index = open_index(url)
    with index.pool.borrow() as conn:
        conn.execute("UPDATE hoprag_idx_old_layout.manifest SET format = 1")
    index.close()
    with pytest.raises(IndexLoadError, match=r"index layout 1, this hoprag reads 2 to 3\. Fix: rebuild it from its "
                                              r"corpus with `hoprag index CORPUS --out postgresql://"):
        open_index(url)
