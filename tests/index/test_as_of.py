"""Searches as of a date: an enterprise policy replaced by ``--update`` is still found, in its older
version, before the new one took effect; the snapshot ranks exactly as a rebuild of the documents
valid then; a deleted document is found before its deletion; clearance holds for old versions."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.commands import index_as_of
from hoprag.index.snapshots import open_as_of
from hoprag.index.store import build_index, load_index
from hoprag.index.update import update_index
from hoprag.index.valid_time import parse_as_of
from hoprag.ingest.loaders import load_documents
from tests.cli_run import run_hoprag

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[2] / "data" / "enterprise"
BY_ID = {d.id: d for d in load_documents(DATA / "corpus.jsonl")}
QUESTIONS = [json.loads(line)["query"] for line in (DATA / "cases.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
# one policy under one id: version 1 built, version 2 given by an update (the corpus keeps both as two ids)
V1 = dataclasses.replace(BY_ID["policy-8-v1"], id="policy-8")
V2 = dataclasses.replace(BY_ID["policy-8-v2"], id="policy-8")
# valid at 2025-06-30 (by hand, from each document's dates): policy-5 (effective 2024-01-10), catalog-2
# (2025-01-15 to 2025-12-31), contract-33 (issued 2025-06-03), policy-14-v1 (2024-09-01 to 2026-03-31),
# ticket-1187 (2024-09-10); not yet: policy-11 (2025-07-01), catalog-3, faq-10, memo-12, email-8
OTHERS = ["policy-5", "policy-11", "catalog-2", "catalog-3", "faq-10", "contract-33", "memo-12", "policy-14-v1",
          "ticket-1187", "email-8"]
VALID_MID_2025 = ["policy-5", "catalog-2", "contract-33", "policy-14-v1", "ticket-1187"]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("as-of") / "index"
    build_index([V1] + [BY_ID[i] for i in OTHERS], target)
    update_index(target, [V2], [])
    return target


def search_json(capsys, *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``hoprag search ARGV --format json``."""
    return run_hoprag(["search", *argv, "--format", "json"], capsys)


def test_as_of_returns_the_older_version_of_a_replaced_policy(index_dir, capsys):
    query = "How long are Skyline Telemetry customer telemetry records retained?"
    for as_of, version in (("2025-06-30", "VERSION 1"), ("2026-02-01", "VERSION 2"), (None, "VERSION 2")):
        code, out, _ = search_json(capsys, str(index_dir), query, "-k", "3", *(["--as-of", as_of] if as_of else []))
        assert code == 0
        assert json.loads(out)[0]["doc_id"] == "policy-8"
        index = open_as_of(index_dir, parse_as_of(as_of))[0] if as_of else load_index(index_dir)
        assert version in index.documents["policy-8"].text
    # the current index holds version 2 only: the older one is in history/, not ranked
    assert "retained for 7 years" in load_index(index_dir).documents["policy-8"].text


def test_a_snapshot_ranks_exactly_as_a_rebuild_of_its_documents(index_dir, tmp_path):
    snapshot, _ = open_as_of(index_dir, parse_as_of("2025-06-30"))
    build_index([BY_ID[i] for i in VALID_MID_2025] + [V1], tmp_path / "rebuilt")
    rebuilt = load_index(tmp_path / "rebuilt")
    assert snapshot.manifest.corpus_hash == rebuilt.manifest.corpus_hash
    for question in QUESTIONS:
        for clearance in (None, "public", "internal"):
            got = snapshot.bm25.retrieve(question, k=10, clearance=clearance)
            assert [(h.chunk_id, h.doc_id, h.score, h.rank) for h in got] == [
                (h.chunk_id, h.doc_id, h.score, h.rank) for h in rebuilt.bm25.retrieve(question, k=10, clearance=clearance)]
    # the second search of the same documents opens the cached build (another date, same documents)
    again, _ = open_as_of(index_dir, parse_as_of("2025-06-15"))
    assert again.manifest.artifact_id == snapshot.manifest.artifact_id


def test_an_old_internal_version_never_reaches_a_public_caller(index_dir):
    snapshot, _ = open_as_of(index_dir, parse_as_of("2025-06-30"))
    hits = snapshot.bm25.retrieve("customer data retention policy Skyline Telemetry", k=10, clearance="public")
    assert hits and all(snapshot.documents[h.doc_id].acl == "public" for h in hits)
    assert "policy-8" in {h.doc_id for h in snapshot.bm25.retrieve("retention policy", k=10, clearance="internal")}


def test_a_deleted_document_is_found_before_its_deletion(tmp_path):
    target = tmp_path / "index"
    build_index([BY_ID[i] for i in ("policy-5", "ticket-1187", "faq-10")], target)
    update_index(target, [], ["ticket-1187"])
    before, _ = open_as_of(target, parse_as_of("2026-01-01"))
    assert "ticket-1187" in before.documents
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()
    after, _ = open_as_of(target, parse_as_of(tomorrow))
    assert "ticket-1187" not in after.documents and "policy-5" in after.documents


def test_cases_naming_a_snapshot_replay_the_index_as_it_stood_then(index_dir):
    notes: list[str] = []
    yesterday = (datetime.now(timezone.utc) - timedelta(days=1)).date().isoformat()
    # the update ran today: on yesterday's snapshot the index held version 1
    replay, _ = index_as_of(str(index_dir), None, notes.append, [f"kestrel-docs-{yesterday}"])
    assert "VERSION 1" in replay.documents["policy-8"].text and "searching the documents the index held" in notes[-1]
    current, _ = index_as_of(str(index_dir), None, notes.append, [None])
    assert "VERSION 2" in current.documents["policy-8"].text


def test_bad_dates_and_a_date_before_every_document_say_the_fix(index_dir, capsys):
    code, _, err = search_json(capsys, str(index_dir), "retention", "--as-of", "2025-13-01")
    assert code == 2 and "--as-of '2025-13-01' is not a date" in err and "Fix:" in err
    code, _, err = search_json(capsys, str(index_dir), "retention", "--as-of", "1999-01-01")
    assert code == 2 and "no documents valid at 1999-01-01" in " ".join(err.split())
    assert "earliest document is valid from 2024-01-10" in " ".join(err.split())


def test_run_as_of_answers_from_the_documents_valid_then(index_dir, tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join((DATA / "cases.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:2]),
                     encoding="utf-8")
    main(["run", str(index_dir), str(cases), "--out", str(tmp_path / "traces.jsonl"), "--as-of", "2025-06-30", "-q"])
    assert "--as-of 2025-06-30 decides" in " ".join(capsys.readouterr().err.split())
    seen = {hit["doc_id"] for line in (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines()[1:]
            for step in json.loads(line)["steps"] for hit in step["hits"]}
    assert seen and seen <= {*VALID_MID_2025, "policy-8"}


def test_a_backdated_correction_is_the_one_version_of_its_id_in_a_snapshot(tmp_path):
    target = tmp_path / "index"
    build_index([V1, BY_ID["policy-5"]], target)
    update_index(target, [V2], [])
    # version 3 takes effect 2025-06-01, inside version 1's valid time (to 2026-01-01): the later given wins
    v3 = dataclasses.replace(V2, text=V2.text.replace("VERSION 2", "VERSION 3"),
                             metadata={**V2.metadata, "effective_date": "2025-06-01"})
    update_index(target, [v3], [])
    assert "VERSION 3" in open_as_of(target, parse_as_of("2025-09-01"))[0].documents["policy-8"].text
    assert "VERSION 1" in open_as_of(target, parse_as_of("2025-05-01"))[0].documents["policy-8"].text
