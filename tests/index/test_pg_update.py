"""An updated PostgreSQL index is the index a build of the updated corpus gives: random sequences of
adds, replaces and deletes over the enterprise corpus (the local update's strategy), compared with a
fresh ``--out postgresql://`` build of the expected corpus order — every table's rows (positions as
the corpus order they give, term ids as the terms they name), the manifest's counts and corpus hash,
every case question's hits and scores at each clearance — plus the change log, a killed update, two
updates at once, a reader during an update, and clearance and redaction of updated documents."""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from hoprag.errors import InputError
from hoprag.index.manifest import IndexConfig
from hoprag.index.open import open_index
from hoprag.index.pg_build import build_pg_index
from hoprag.index.pg_update import update_pg_index
from hoprag.records import Document
from tests.index.test_index_update import DOCS, QUESTIONS, _expected, _steps

pytestmark = pytest.mark.integration

CONFIG = IndexConfig(dense=True, embedder="static")
ENTERPRISE = Path(__file__).resolve().parents[2] / "data" / "enterprise"
#: each table's rows with positions given as the ids they hold and term ids as their terms
NORMALISED = {
    "documents": "SELECT id, title, acl_level, fkeys, body, size FROM {s}.documents ORDER BY pos",
    "chunks": 'SELECT c.id, c.doc_id, d.id, c.start, c."end", c.index, c.text, c.length, c.embedding::text '
              "FROM {s}.chunks c JOIN {s}.documents d ON d.pos = c.doc_pos ORDER BY c.pos",
    "terms": "SELECT term, df, idf FROM {s}.terms ORDER BY term",
    "postings": "SELECT t.term, c.id, p.tf, p.length FROM {s}.postings p JOIN {s}.terms t ON t.id = p.term_id "
                "JOIN {s}.chunks c ON c.pos = p.chunk_pos ORDER BY t.term, c.pos",
    "postings count": "SELECT count(*) FROM {s}.postings",
    "term_levels": "SELECT t.term, l.acl_level, l.df FROM {s}.term_levels l JOIN {s}.terms t ON t.id = l.term_id "
                   "ORDER BY 1, 2",
    "term_levels count": "SELECT count(*) FROM {s}.term_levels",
    "acl_levels": "SELECT * FROM {s}.acl_levels ORDER BY acl_level",
    "title_keys": "SELECT k.key, d.id FROM {s}.title_keys k JOIN {s}.documents d ON d.pos = k.doc_pos ORDER BY 1, d.pos",
    "title_keys count": "SELECT count(*) FROM {s}.title_keys",
    "title_filter": "SELECT hashes, bits FROM {s}.title_filter",
    "manifest": "SELECT format, chunk_count, avgdl, body - 'created_at' - 'artifact_id' - 'updates' FROM {s}.manifest",
}


@pytest.fixture(scope="module")
def database(pg_server: object) -> str:
    import psycopg

    base = pg_server.get_uri()  # type: ignore[attr-defined]
    name = f"pgupdate_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.replace("/postgres?", f"/{name}?", 1)


def _url(database: str, name: str) -> str:
    return f"{database}&index={name}"


def _rows(url: str) -> dict[str, list[tuple]]:
    index = open_index(url)
    try:
        with index.pool.borrow() as conn:
            return {table: conn.execute(sql.format(s=f'"{index.target.schema}"')).fetchall()
                    for table, sql in NORMALISED.items()}
    finally:
        index.close()


def _hits(url: str) -> list[list[tuple[str, float]]]:
    index = open_index(url)
    try:
        return [[(h.chunk_id, h.score) for h in retriever.retrieve(question, k=10, clearance=clearance)]
                for question in QUESTIONS for clearance in (None, "public", "internal")
                for retriever in (index.bm25, index.dense(backend="exact"))]
    finally:
        index.close()


def assert_same_index(updated: str, rebuilt: str) -> None:
    a, b = _rows(updated), _rows(rebuilt)
    for table in NORMALISED:
        assert a[table] == b[table], table
    assert _hits(updated) == _hits(rebuilt)


def _fresh_name() -> str:
    return f"u{uuid.uuid4().hex[:10]}"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_steps())
def test_any_sequence_of_updates_equals_a_rebuild(database, case):
    first, steps = case
    name = _fresh_name()
    updated, rebuilt = _url(database, name), _url(database, name + "_r")
    built = build_pg_index(first, updated, CONFIG)
    previous = built
    for given_docs, deleted in steps:
        result = update_pg_index(updated, given_docs, deleted)
        if result.changed:
            change = result.manifest.updates[-1]
            assert (change.previous_corpus_hash, change.previous_artifact_id) == (previous.corpus_hash,
                                                                                 previous.artifact_id)
            previous = result.manifest
    expected = build_pg_index(_expected(first, steps), rebuilt, CONFIG)
    assert_same_index(updated, rebuilt)
    assert previous.corpus_hash == expected.corpus_hash
    assert (previous.document_count, previous.chunk_count, previous.acl_classes) == (
        expected.document_count, expected.chunk_count, expected.acl_classes)
    assert open_index(updated).manifest.updates == previous.updates


def test_an_update_records_its_change_and_keeps_clearance(database):
    url = _url(database, "change")
    first = build_pg_index(DOCS[:10], url)
    public = [d for d in DOCS[:10] if d.acl == "public"][0]
    hidden = dataclasses.replace(public, acl="restricted", text=public.text + " Quokka clause.")
    result = update_pg_index(url, [hidden, DOCS[10]], [DOCS[0].id])
    change = result.manifest.updates[-1]
    assert (change.added, change.replaced, change.deleted, change.unchanged) == (1, 1, 1, 0)
    assert change.previous_corpus_hash == first.corpus_hash and change.method == "delta"
    index = open_index(url)
    # the replaced version is restricted now: a public caller no longer finds it, a restricted one does
    assert not any(h.doc_id == public.id for h in index.bm25.retrieve("quokka clause", k=10, clearance="public"))
    assert [h.doc_id for h in index.bm25.retrieve("quokka clause", k=10, clearance="restricted")][:1] == [public.id]
    assert index.documents[public.id].text.endswith("Quokka clause.")
    assert DOCS[0].id not in index.documents
    index.close()
    again = update_pg_index(url, [hidden], [])  # given again unchanged: nothing is written
    assert not again.changed and again.manifest.artifact_id == result.manifest.artifact_id
    with pytest.raises(InputError, match="not in the index"):
        update_pg_index(url, [], ["no-such-id"])
    with pytest.raises(InputError, match="both given and listed"):
        update_pg_index(url, [DOCS[1]], [DOCS[1].id])
    with pytest.raises(InputError, match="no index named 'nothing'"):
        update_pg_index(_url(database, "nothing"), [DOCS[1]], [])


def test_the_corpus_hash_is_a_builds_whatever_the_characters_and_metadata(database):
    """The server writes each kept record's canonical JSON; strings that need escaping, characters
    beyond ASCII and nested metadata digest as the build's ``canonical_record`` does."""
    odd = Document(id="odd-1", title='Quote " and back\\slash', text="Tab\there, bell \x07, line\nbreak, é ß 中文 🦘 \u2028.",
                   source="s/1", version="v1", timestamp="2026-01-01", doc_type="memo", acl="internal",
                   metadata={"z": [1, 2.5, None, True], "a": {"nested": "ünï", "n": -3}, "empty": {}, "f": 0.1})
    plain = dataclasses.replace(DOCS[2], metadata={})
    url, rebuilt = _url(database, "hashes"), _url(database, "hashes_r")
    build_pg_index([odd, plain, DOCS[3]], url)
    result = update_pg_index(url, [DOCS[4]], [DOCS[3].id])
    assert result.manifest.corpus_hash == build_pg_index([odd, plain, DOCS[4]], rebuilt).corpus_hash


def test_an_update_that_fails_or_is_killed_leaves_the_previous_index(database, tmp_path):
    url = _url(database, "killed")
    build_pg_index(DOCS[:8], url, CONFIG)
    before = _rows(url)

    def fail(stage: str, done: int, total: int) -> None:
        if stage == "write" and done == 2:  # every row written, the statistics not yet
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        update_pg_index(url, [DOCS[8], dataclasses.replace(DOCS[2], text="A new text.")], [DOCS[1].id], progress=fail)
    assert _rows(url) == before
    # a process killed mid-transaction: the server rolls its transaction back and frees the lock
    script = tmp_path / "kill.py"
    script.write_text(
        "import os, signal, sys\n"
        "from hoprag.index.pg_update import update_pg_index\n"
        "from hoprag.ingest.loaders import load_documents\n"
        "docs = load_documents(sys.argv[2])\n"
        "def die(stage, done, total):\n"
        "    if stage == 'write' and done == 2:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "update_pg_index(sys.argv[1], docs[8:10], [docs[1].id], progress=die)\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), url, str(ENTERPRISE / "corpus.jsonl")], capture_output=True,
                          timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert _rows(url) == before
    assert _versions(url) == []  # neither the change nor the versions it would have kept for --as-of
    result = update_pg_index(url, DOCS[8:10], [DOCS[1].id])  # the lock went with the killed client
    assert result.changed and result.manifest.document_count == 9
    assert _versions(url) == [(DOCS[1].id, "deleted")]


def _versions(url: str) -> list[tuple]:
    index = open_index(url)
    try:
        with index.pool.borrow() as conn:
            return conn.execute(f'SELECT id, ended FROM "{index.target.schema}".versions ORDER BY seq').fetchall()
    finally:
        index.close()


def test_two_updates_at_once_are_refused_and_readers_see_old_or_new(database):
    url = _url(database, "concurrent")
    build_pg_index(DOCS[:10], url)
    reader = open_index(url)  # opened before the update, and kept open through it
    question = QUESTIONS[0]
    old = [(h.chunk_id, h.score) for h in reader.bm25.retrieve(question, k=10)]
    assert reader.documents[DOCS[3].id].id == DOCS[3].id  # read, and cached
    inside, release, errors = threading.Event(), threading.Event(), []

    def pause(stage: str, done: int, total: int) -> None:
        if stage == "write" and done == 2:
            inside.set()
            release.wait(60)

    def first() -> None:
        try:
            update_pg_index(url, DOCS[10:14], [DOCS[3].id, DOCS[4].id], progress=pause)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert inside.wait(60)
        with pytest.raises(InputError, match="another process is updating this index"):
            update_pg_index(url, DOCS[14:15], [])
        # mid-update, a reader sees the index as it was
        assert [(h.chunk_id, h.score) for h in reader.bm25.retrieve(question, k=10)] == old
    finally:
        release.set()
        thread.join(60)
    assert not errors
    rebuilt = _url(database, "concurrent_r")
    build_pg_index([d for d in DOCS[:10] if d.id not in {DOCS[3].id, DOCS[4].id}] + DOCS[10:14], rebuilt)
    fresh = open_index(rebuilt)
    expected = [(h.chunk_id, h.score) for h in fresh.bm25.retrieve(question, k=10)]
    fresh.close()
    assert expected != old
    # committed: the same open reader ranks with the new statistics, as a rebuild does
    assert [(h.chunk_id, h.score) for h in reader.bm25.retrieve(question, k=10)] == expected
    # and, having met the new index, no longer serves what it had cached of the old one
    assert DOCS[3].id not in reader.documents and DOCS[12].id in reader.documents
    assert (len(reader.documents), len(reader.chunks)) == (12, reader.manifest.chunk_count)
    assert reader.manifest.updates[-1].deleted == 2
    reader.close()


def test_updated_documents_are_redacted_and_cleared_as_built_ones(database, tmp_path):
    """A document with an email address and a restricted one, added by an update: `hoprag run` over the
    updated index writes placeholders, never the address, exactly as over a build of the same corpus."""
    from typer.testing import CliRunner

    from hoprag.cli import app

    email = re.compile(r"[\w.+%-]+@[\w-]+(?:\.[\w-]+)+")
    pii = [d for d in DOCS if email.search(d.text)]
    assert pii, "the enterprise corpus holds a document with an email address"
    added = [pii[0], dataclasses.replace(DOCS[20], id="restricted-note", acl="restricted",
                                         text="Restricted note: the quokka budget is 12 million.")]
    kept = [d for d in DOCS if d.id != pii[0].id]
    updated, rebuilt = _url(database, "redacted"), _url(database, "redacted_r")
    build_pg_index(kept, updated)
    update_pg_index(updated, added, [])
    build_pg_index(kept + added, rebuilt)
    runs = {}
    for name, url in (("updated", updated), ("rebuilt", rebuilt)):
        out = tmp_path / f"{name}.jsonl"
        result = CliRunner().invoke(app, ["run", url, str(ENTERPRISE / "cases.jsonl"), "--out", str(out), "--quiet"])
        assert result.exit_code == 0, result.output
        text = out.read_text(encoding="utf-8")
        assert not email.search(text.replace("<EMAIL_", "")) and "<EMAIL_" in text
        runs[name] = [{k: t.get(k) for k in ("case_id", "answer", "redactions", "retrieved")}
                      for t in map(json.loads, text.splitlines()) if '"case_id"' in t]
    assert runs["updated"] == runs["rebuilt"]
    index = open_index(updated)
    assert not index.bm25.retrieve("quokka budget", k=5, clearance="public")
    assert [h.doc_id for h in index.bm25.retrieve("quokka budget", k=5, clearance="restricted")][:1] == ["restricted-note"]
    index.close()


def test_a_rebuild_waits_for_a_running_update_then_replaces_it(database):
    url = _url(database, "rebuild_wait")
    build_pg_index(DOCS[:6], url)
    inside, release, done = threading.Event(), threading.Event(), []

    def pause(stage: str, done_: int, total: int) -> None:
        if stage == "write" and done_ == 2:
            inside.set()
            release.wait(60)

    update = threading.Thread(target=lambda: done.append(update_pg_index(url, DOCS[6:8], [], progress=pause)))
    update.start()
    assert inside.wait(60)
    rebuild = threading.Thread(target=lambda: done.append(build_pg_index(DOCS[10:13], url)))
    rebuild.start()
    rebuild.join(1.0)
    assert rebuild.is_alive(), "the rebuild swapped its schema in under a running update"
    release.set()
    update.join(60)
    rebuild.join(60)
    index = open_index(url)
    assert len(done) == 2 and index.manifest.document_count == 3  # the rebuild, applied after the update
    index.close()
