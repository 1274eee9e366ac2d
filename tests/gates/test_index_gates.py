"""The data and chunk gates of ``hoprag index --thresholds`` (build and ``--update``): they check only the
documents the change brings, block it before the index is written, and record a run the run store lists.

Fixtures: the first 20 enterprise documents as the index; deltas of the next ones, one with personal
data added (two e-mail addresses, a phone number, a card number: 4 PII hits, counted by hand), one
with its text emptied.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.index.store import build_index
from hoprag.ingest.loaders import load_documents
from hoprag.store import RunStore

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ROWS = [json.loads(line) for line in (ROOT / "data" / "enterprise" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
THRESHOLDS = ROOT / "thresholds.yaml"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index-gates")
    build_index(load_documents(_write(root / "base.jsonl", ROWS[:20])), root / "index")
    return root / "index"


@pytest.fixture
def work(built: Path, tmp_path: Path) -> Path:
    shutil.copytree(built, tmp_path / "ix")
    pii = [{**ROWS[23], "text": ROWS[23]["text"] + " Contact jane.doe@example.com or call +1 415 555 0134."},
           {**ROWS[24], "text": ROWS[24]["text"] + " Card 4111 1111 1111 1111, mail bob@corp.example."}]
    _write(tmp_path / "pii.jsonl", pii)
    _write(tmp_path / "empty.jsonl", [{**ROWS[25], "text": ""}])
    _write(tmp_path / "clean.jsonl", ROWS[20:23])
    return tmp_path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as stopped:
        code = int(stopped.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _update(work: Path, delta: str, *extra: object) -> list[object]:
    return ["index", work / delta, "--out", work / "ix", "--update", "--store", work / "runs.db", *extra]


def test_personal_data_in_the_delta_blocks_the_update(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(work / "ix")
    code, _, err = _run(_update(work, "pii.jsonl", "--thresholds", THRESHOLDS), capsys)
    assert code == 1  # as `hoprag gate check` on a blocking failure
    assert "ingest pii_hits = 4, rule <= 0 (documents 'memo-16', 'memo-19')" in err
    assert "is unchanged" in err and "Fix: remove or mask the personal data" in err and "Traceback" not in err
    assert _snapshot(work / "ix") == before
    with RunStore(work / "runs.db") as store:
        [run] = store.list_runs()
        values = {(m.stage, m.name): m.value for m in store.metrics(run.run_id)}
    assert (run.kind, run.status) == ("index-update", "failed")
    assert run.artifact_id == json.loads(before["manifest.json"])["artifact_id"]
    assert values[("ingest", "documents")] == 2  # the delta only, not the 20 indexed documents
    assert values[("ingest", "pii_docs")] == 2


def test_an_empty_text_in_the_delta_blocks_the_update(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(work / "ix")
    code, _, err = _run(_update(work, "empty.jsonl", "--thresholds", THRESHOLDS), capsys)
    assert code == 1
    assert "ingest schema_violations = 1, rule <= 0 (documents 'memo-21')" in err
    assert "ingest null_rate.text = 1" in err and "Fix: give every document a non-empty text" in err
    assert _snapshot(work / "ix") == before


def test_a_clean_delta_is_applied_and_recorded_with_both_artifacts(work: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    old = json.loads((work / "ix" / "manifest.json").read_text(encoding="utf-8"))["artifact_id"]
    code, out, _ = _run(_update(work, "clean.jsonl", "--thresholds", THRESHOLDS), capsys)
    assert code == 0, out
    manifest = json.loads((work / "ix" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["document_count"] == 23 and "gates on 3 document(s): passed" in " ".join(out.split())
    code, listed, _ = _run(["runs", "list", "--format", "json", "--store", work / "runs.db"], capsys)
    [run] = json.loads(listed)
    assert (run["kind"], run["status"], run["artifact_id"]) == ("index-update", "complete", manifest["artifact_id"])
    with RunStore(work / "runs.db") as store:
        change = store.get_json(run["run_id"], "index_change")
        values = {(m.stage, m.name): m.value for m in store.metrics(run["run_id"])}
    assert (change["artifact_before"], change["artifact_after"]) == (old, manifest["artifact_id"])
    assert change["update"] == manifest["updates"][-1] and change["update"]["added"] == 3
    assert values[("ingest", "documents")] == 3 and values[("chunk", "chunks")] == manifest["chunk_count"] - 20


def test_a_warning_rule_warns_and_the_update_goes_through(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = work / "rules.yaml"
    rules.write_text("ingest:\n  documents: {max: 2}\n", encoding="utf-8")  # warn (the default mode)
    code, out, _ = _run(_update(work, "clean.jsonl", "--thresholds", rules), capsys)
    text = " ".join(out.split())
    assert code == 0 and "passed, 1 warning(s)" in text and "warning: ingest documents = 3, rule <= 2" in text
    assert json.loads((work / "ix" / "manifest.json").read_text(encoding="utf-8"))["document_count"] == 23


def test_a_store_without_thresholds_records_the_checks_without_a_verdict(work: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(_update(work, "pii.jsonl"), capsys)  # no rules: recorded, never blocked
    assert code == 0 and "recorded without a verdict" in " ".join(out.split())
    with RunStore(work / "runs.db") as store:
        [run] = store.list_runs()
        assert {(m.stage, m.name): m.value for m in store.metrics(run.run_id)}[("ingest", "pii_hits")] == 4


def test_thresholds_without_ingest_or_chunk_rules_decide_nothing(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = work / "retrieval.yaml"
    rules.write_text("retrieve:\n  nDCG@10: {min: 0.3}\n", encoding="utf-8")  # no rule on this change's stages
    code, out, _ = _run(_update(work, "pii.jsonl", "--thresholds", rules), capsys)
    assert code == 0 and "retrieval.yaml has no ingest or chunk rule with a min or max to decide" in " ".join(out.split())


def test_a_gated_build_checks_every_document_and_a_blocked_build_writes_nothing(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _write(work / "all.jsonl", ROWS[:20] + [{**ROWS[25], "text": ""}])
    code, _, err = _run(["index", corpus, "--out", work / "new", "--thresholds", THRESHOLDS,
                         "--store", work / "runs.db"], capsys)
    assert code == 1 and "documents 'memo-21'" in err and not (work / "new").exists()
    code, _, _ = _run(["index", work / "clean.jsonl", "--out", work / "new", "--thresholds", THRESHOLDS,
                       "--store", work / "runs.db"], capsys)
    assert code == 0
    with RunStore(work / "runs.db") as store:
        built, blocked = store.list_runs()
        assert (built.kind, built.status, blocked.status) == ("index-build", "complete", "failed")
        assert store.get_json(built.run_id, "index_change")["documents"] == 3
