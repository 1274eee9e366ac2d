"""Searches as of a date on a PostgreSQL index, against a real PostgreSQL 18: an update keeps the version
it replaces (in its own transaction), and ``--as-of`` and a dated ``corpus_snapshot`` give exactly what
they give on a local index with the same build and updates — the same documents, ids and scores —
including clearance; a layout-2 index (no history tables) is brought up by its next update."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.commands import index_as_of
from hoprag.errors import InputError
from hoprag.index.corpus_db import canonical_record
from hoprag.index.history import read_versions
from hoprag.index.manifest import IndexConfig
from hoprag.index.open import open_index
from hoprag.index.pg_build import build_pg_index
from hoprag.index.pg_history import PgHistory
from hoprag.index.pg_update import update_pg_index
from hoprag.index.snapshots import PG_SNAPSHOTS_DIR, open_as_of
from hoprag.index.store import build_index, load_index
from hoprag.index.update import update_index
from hoprag.index.valid_time import parse_as_of
from tests.index.test_as_of import BY_ID, DATA, OTHERS, QUESTIONS, V1, V2, VALID_MID_2025, search_json

pytestmark = pytest.mark.integration

# the options a PostgreSQL index keeps (it has no entity graph), given to the local index as well
CONFIG = IndexConfig(graph=False)
CLEARANCES = (None, "public", "internal")


@pytest.fixture(scope="module")
def database(pg_server: object) -> str:
    import psycopg

    base = pg_server.get_uri()  # type: ignore[attr-defined]
    name = f"pgasof_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def both(database, tmp_path_factory) -> tuple[str, Path]:
    """POL-08 v1 and ten other documents, then v2 by an update: in PostgreSQL and in a local index."""
    url = f"{database}&index=policies"
    build_pg_index([V1] + [BY_ID[i] for i in OTHERS], url, CONFIG)
    update_pg_index(url, [V2])
    local = tmp_path_factory.mktemp("pg-as-of") / "index"
    build_index([V1] + [BY_ID[i] for i in OTHERS], local, CONFIG)
    update_index(local, [V2], [])
    return url, local


def _top(index, clearance):
    return [[(h.chunk_id, h.doc_id, h.score, h.rank) for h in index.bm25.retrieve(q, k=10, clearance=clearance)]
            for q in QUESTIONS]


def test_as_of_returns_policy_version_1_exactly_as_a_local_index_does(both, cache_home, capsys):
    url, local = both
    at = parse_as_of("2025-06-30")
    on_pg, location = open_as_of(url, at)
    on_local, _ = open_as_of(local, at)
    assert "VERSION 1" in on_pg.documents["policy-8"].text
    assert sorted(on_pg.documents) == sorted([*VALID_MID_2025, "policy-8"]) == sorted(on_local.documents)
    assert on_pg.manifest.corpus_hash == on_local.manifest.corpus_hash
    # the update kept the same version, with the same valid time (v1 ends where v2 starts), in both stores
    current = open_index(url)
    kept = PgHistory(current.pool, 1)
    try:
        assert [(v.id, v.record, v.start, v.until, v.ended) for v in kept.versions()] == [
            (v.id, v.record, v.start, v.until, v.ended) for v in read_versions(local)] == [
            ("policy-8", canonical_record(V1), parse_as_of("2024-03-01"), parse_as_of("2026-01-01"), "replaced")]
    finally:
        kept.close()
        current.close()
    for clearance in CLEARANCES:  # every case question, top 10: the same chunks, documents, scores and ranks
        assert _top(on_pg, clearance) == _top(on_local, clearance)
    # the snapshot is built on this machine, under the cache, once: another date with the same documents opens it
    assert Path(location).is_relative_to(cache_home / "hoprag" / PG_SNAPSHOTS_DIR)
    assert open_as_of(url, parse_as_of("2025-06-15"))[0].manifest.artifact_id == on_pg.manifest.artifact_id
    # the CLI prints the local index's hits (ids, scores, ranks), before v2's validity and after it
    query = "How long are Skyline Telemetry customer telemetry records retained?"
    for as_of, version in (("2025-06-30", "VERSION 1"), ("2026-02-01", "VERSION 2")):
        code, out, _ = search_json(capsys, url, query, "--as-of", as_of)
        assert code == 0 and json.loads(out)[0]["doc_id"] == "policy-8"
        assert json.loads(out) == json.loads(search_json(capsys, str(local), query, "--as-of", as_of)[1])
        assert version in open_as_of(url, parse_as_of(as_of))[0].documents["policy-8"].text


def test_an_old_internal_version_never_reaches_a_public_caller(both):
    snapshot, _ = open_as_of(both[0], parse_as_of("2025-06-30"))
    hits = snapshot.bm25.retrieve("customer data retention policy Skyline Telemetry", k=10, clearance="public")
    assert hits and all(snapshot.documents[h.doc_id].acl == "public" for h in hits)
    assert "policy-8" in {h.doc_id for h in snapshot.bm25.retrieve("retention policy", k=10, clearance="internal")}


def test_a_deleted_document_is_found_before_its_deletion_and_not_after(database):
    url = f"{database}&index=deleted"
    build_pg_index([BY_ID[i] for i in ("policy-5", "ticket-1187", "faq-10")], url, CONFIG)
    update_pg_index(url, [], ["ticket-1187"])
    before, _ = open_as_of(url, parse_as_of("2026-01-01"))
    assert "ticket-1187" in before.documents
    after, where = open_as_of(url, parse_as_of((datetime.now(timezone.utc) + timedelta(days=1)).isoformat()))
    assert "ticket-1187" not in after.documents and "policy-5" in after.documents
    # the snapshot is the whole current index: PostgreSQL itself is searched, nothing is built
    assert where == url and after.stats().store == "postgres"
    after.close()


def test_cases_naming_a_snapshot_replay_the_index_as_it_stood_then(both):
    notes: list[str] = []
    yesterday = (datetime.now(timezone.utc) - timedelta(days=1)).date().isoformat()
    replay, _ = index_as_of(both[0], None, notes.append, [f"kestrel-docs-{yesterday}"])
    assert "VERSION 1" in replay.documents["policy-8"].text and "searching the documents the index held" in notes[-1]
    local, _ = index_as_of(str(both[1]), None, notes.append, [f"kestrel-docs-{yesterday}"])
    assert replay.manifest.corpus_hash == local.manifest.corpus_hash
    current, location = index_as_of(both[0], None, notes.append, [None])
    assert location == both[0] and "VERSION 2" in current.documents["policy-8"].text
    current.close()


def test_run_replays_cases_naming_a_dated_snapshot_on_a_postgresql_index(both, tmp_path, capsys):
    yesterday = (datetime.now(timezone.utc) - timedelta(days=1)).date().isoformat()
    case = json.loads((DATA / "cases.jsonl").read_text(encoding="utf-8").splitlines()[0])
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({**case, "corpus_snapshot": f"kestrel-docs-{yesterday}"}) + "\n", encoding="utf-8")
    main(["run", both[0], str(cases), "--out", str(tmp_path / "traces.jsonl"), "-q"])
    assert f"searching the documents the index held on {yesterday}" in " ".join(capsys.readouterr().err.split())
    seen = {hit["doc_id"] for line in (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines()[1:]
            for step in json.loads(line)["steps"] for hit in step["hits"]}
    assert "policy-8" in seen and seen <= {"policy-8", *OTHERS}


def test_bad_dates_and_a_date_before_every_document_say_the_fix(both, capsys):
    code, _, err = search_json(capsys, both[0], "retention", "--as-of", "2025-13-01")
    assert code == 2 and "--as-of '2025-13-01' is not a date" in err and "Fix:" in err
    code, _, err = search_json(capsys, both[0], "retention", "--as-of", "1999-01-01")
    assert code == 2 and "no documents valid at 1999-01-01" in " ".join(err.split())
    assert "earliest document is valid from 2024-01-10" in " ".join(err.split())
    assert "password" not in err.lower()


def test_an_index_updated_before_it_kept_versions_says_so_until_its_next_update(database):
    import psycopg

    url = f"{database}&index=layout2"
    build_pg_index([V1, BY_ID["policy-5"], BY_ID["faq-10"]], url, CONFIG)
    update_pg_index(url, [V2])
    with psycopg.connect(database, autocommit=True) as conn:  # as a layout-2 index, updated once, stood
        conn.execute('DROP TABLE hoprag_idx_layout2.versions, hoprag_idx_layout2.arrivals, hoprag_idx_layout2.history_gap')
        conn.execute("UPDATE hoprag_idx_layout2.manifest SET format = 2")
    assert open_index(url).manifest.document_count == 3  # still read as it is
    with pytest.raises(InputError, match="updated before hoprag kept the versions") as refused:
        open_as_of(url, parse_as_of("2025-06-30"))
    assert "Fix:" in str(refused.value) and "--as-of" in str(refused.value)
    update_pg_index(url, [], ["faq-10"])  # adds the tables, and notes from when they are complete
    with psycopg.connect(database) as conn:
        assert conn.execute("SELECT format FROM hoprag_idx_layout2.manifest").fetchone()[0] == 3
        assert conn.execute("SELECT id, ended FROM hoprag_idx_layout2.versions").fetchall() == [("faq-10", "deleted")]
    with pytest.raises(InputError, match="keeps the versions updates replaced from .* on"):
        open_as_of(url, parse_as_of("2025-06-30"))
    later, _ = open_as_of(url, parse_as_of((datetime.now(timezone.utc) + timedelta(days=1)).isoformat()))
    assert sorted(later.documents) == ["policy-5", "policy-8"]
    later.close()


def test_a_local_index_and_its_snapshot_cache_are_unchanged(both):
    # a local index's snapshots stay in its own directory, not in the user's cache
    _, location = open_as_of(both[1], parse_as_of("2025-06-30"))
    assert Path(location).parent == both[1] / "snapshots"
    assert load_index(Path(location)).manifest.document_count == 6
