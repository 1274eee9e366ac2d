"""A gated run ends complete, or failed when a stage raises; a failed run is never a baseline."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hoprag.cli import main
from hoprag.errors import ConfigError
from hoprag.gates.baseline import freeze_baseline
from hoprag.gates.staged_run import run_gated_pipeline
from hoprag.store import RunStore, StoreError

ROOT = Path(__file__).resolve().parents[2]
ENT = ROOT / "data" / "enterprise"

pytestmark = pytest.mark.integration


class UnavailableEmbedder:
    """An embedding service that is down: the embed stage (the third) raises."""

    name = "remote"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise ConnectionError("embedding service at 10.0.0.7 refused the connection; "
                              "ask ml-ops@kestrel-dynamics.example")


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """The console entry point run in this process: exit code, stdout, stderr (whitespace folded)."""
    capsys.readouterr()
    saved, sys.argv = sys.argv, ["hoprag", *map(str, args)]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = saved
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def test_a_gate_run_that_fails_mid_pipeline_is_marked_failed(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(ConnectionError):
            run_gated_pipeline([ENT / "corpus.jsonl"], ENT / "cases.jsonl", tmp_path / "out", store,
                               run_id="broken-1", embedder=UnavailableEmbedder(), baseline=None)
        run = store.require_run("broken-1")
        assert run.status == "failed" and run.finished_at is not None
        # the reason is kept, with the mailbox it named replaced as in stored traces
        assert run.error == "ConnectionError: embedding service at 10.0.0.7 refused the connection; ask <EMAIL_1>"
        assert {m.stage for m in store.metrics("broken-1")} == {"ingest", "chunk"}  # what finished before
        with pytest.raises(ConfigError, match="run 'broken-1' is failed .* cannot be a baseline"):
            freeze_baseline(store, "broken-1")

        done = run_gated_pipeline([ENT / "corpus.jsonl"], ENT / "cases.jsonl", tmp_path / "ok", store,
                                  engines=("single",), embedder="hash", baseline=None)
        assert store.require_run(done.run_id).status == "complete"
        # a second run under an id that exists fails, and must not touch the run that owns the id
        with pytest.raises(StoreError, match="already exists"):
            run_gated_pipeline([ENT / "corpus.jsonl"], ENT / "cases.jsonl", tmp_path / "again", store,
                               run_id=done.run_id, embedder="hash", baseline=None)
        assert store.require_run(done.run_id).status == "complete"
        assert freeze_baseline(store, done.run_id).info.run_id == done.run_id


def test_gate_run_cli_failure_is_recorded_and_removable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    corpus = tmp_path / "corpus.jsonl"
    lines = (ENT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    corpus.write_text("\n".join(lines[:5] + ['{"id": "torn", "text": "half a rec'] + lines[5:]) + "\n",
                      encoding="utf-8")
    code, out, err = cli(capsys, "gate-run", corpus, "--cases", ENT / "cases.jsonl", "--out", tmp_path / "out",
                         "--embedder", "hash", "--run-id", "torn-1", "--store", db)
    assert code == 2 and "corpus.jsonl:6" in err and "Traceback" not in err

    code, out, _ = cli(capsys, "runs", "list", "--status", "failed", "--json", "--store", db)
    [row] = json.loads(out)
    assert row["run_id"] == "torn-1" and row["kind"] == "gate-run" and row["metrics"] == 0
    code, _, err = cli(capsys, "baseline", "--run", "torn-1", "--store", db)
    assert code == 2 and "cannot be a baseline" in err
    code, out, _ = cli(capsys, "runs", "rm", "--failed", "--store", db)
    assert code == 0 and "removed run torn-1" in out
    code, out, _ = cli(capsys, "runs", "list", "--json", "--store", db)
    assert json.loads(out) == []


def test_every_gates_command_turns_a_lost_store_into_a_message(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    down = "postgresql://hoprag:s3cret@127.0.0.1:1/runs"
    feedback = ROOT / "tests" / "data" / "gates_feedback.jsonl"
    commands = [
        ("gate-run", ENT / "corpus.jsonl", "--cases", ENT / "cases.jsonl", "--out", tmp_path / "o",
         "--embedder", "hash"),
        ("baseline", "--run", "r1"),
        ("gate", "--run", "r1", "--thresholds", ROOT / "thresholds.yaml"),
        ("diff", "r1", "r2"),
        ("feedback", "import", feedback),
        ("runs", "list"),
        ("runs", "rm", "r1"),
    ]
    for args in commands:
        code, out, err = cli(capsys, *args, "--store", down)
        assert code == 2, (args, err)
        assert "cannot open the run store postgresql+psycopg://hoprag:***@127.0.0.1:1/runs" in err, (args, err)
        assert "s3cret" not in err + out and "Traceback" not in err + out
