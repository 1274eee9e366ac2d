"""`hoprag runs list` and `hoprag runs rm` through the CLI's entry point, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from hoprag.cli import main
from hoprag.metrics import Metric
from hoprag.jsonl import read_records
from hoprag.records import Trace
from hoprag.store import FeedbackEvent, RunStore

DATA = Path(__file__).resolve().parents[1] / "data"


def _ghost_writer(url: str) -> None:
    store = RunStore(url)
    store.create_run("ghost", kind="gate-run")
    os._exit(0)  # the writer dies without finishing its run


def start_and_lose_a_run(url: str) -> None:
    """A real second process creates run 'ghost' and dies before finishing it."""
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    proc = ctx.Process(target=_ghost_writer, args=(url,))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The console entry point run in this process: exit code, stdout, stderr (whitespace folded)."""
    capsys.readouterr()
    saved, sys.argv = sys.argv, ["hoprag", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = saved
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store holding a baseline run, a plain complete run, a failed run and an incomplete one."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else str(tmp_path / "runs.db")
    ts = datetime(2024, 5, 1, tzinfo=timezone.utc)
    with RunStore(url) as store:
        with store.track_run("kept"):
            store.create_run("kept", kind="gate-run", artifact_id="abc123def456")
            store.add_metrics([Metric("kept", "chunk", f"m{i}", float(i)) for i in range(3)])
            store.add_traces("kept", read_records(DATA / "eval_traces.jsonl", Trace)[:2])
            store.add_feedback([FeedbackEvent("e1", "kept", "thumbs", ts, case_id="q1", value="up")])
            store.put_array("kept", "embed.reference", np.ones((2, 3), dtype=np.float32))
        store.set_baseline("default", "kept")
        with store.track_run("done"):
            store.create_run("done", kind="demo")
        with pytest.raises(RuntimeError), store.track_run("broken"):
            store.create_run("broken", kind="gate-run")
            store.add_metrics([Metric("broken", "ingest", "docs", 1.0)])
            raise RuntimeError("corpus unreadable")
    start_and_lose_a_run(url)
    return url


def test_runs_list_shows_status_metrics_and_artifact(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "runs", "list", "--store", store_url, "--json")
    assert code == 0
    rows = {r["run_id"]: r for r in json.loads(out)}
    assert {k: r["status"] for k, r in rows.items()} == {
        "kept": "complete", "done": "complete", "broken": "failed", "ghost": "incomplete"}
    assert {k: r["metrics"] for k, r in rows.items()} == {"kept": 3, "done": 0, "broken": 1, "ghost": 0}
    assert rows["kept"]["artifact_id"] == "abc123def456" and rows["kept"]["kind"] == "gate-run"
    assert rows["broken"]["error"] == "RuntimeError: corpus unreadable"
    assert datetime.fromisoformat(rows["kept"]["created_at"]).tzinfo is not None

    code, out, _ = cli(capsys, "runs", "list", "--store", store_url, "--status", "incomplete", "--json")
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == ["ghost"]
    code, out, _ = cli(capsys, "runs", "list", "--store", store_url, "--status", "failed")
    assert code == 0 and "broken" in out and "kept" not in out and "runs rm --failed" in " ".join(out.split())
    code, _, err = cli(capsys, "runs", "list", "--store", store_url, "--status", "done")
    assert code == 2 and "valid: running, complete, failed, incomplete, unknown" in err


def test_runs_rm_removes_everything_a_run_owns(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "runs", "rm", "nope", "done", "--store", store_url)
    assert code == 2 and "no run 'nope'" in err and "nothing was removed" in err and "hoprag runs list" in err
    code, _, err = cli(capsys, "runs", "rm", "kept", "--store", store_url)
    assert code == 2 and "baseline 'default'" in err and "--force" in err and "Traceback" not in err
    code, _, err = cli(capsys, "runs", "rm", "--store", store_url)
    assert code == 2 and "--failed" in err

    code, out, _ = cli(capsys, "runs", "rm", "--failed", "--store", store_url)
    assert code == 0 and "removed run broken: 1 metrics" in out and "removed run ghost" in out
    code, out, _ = cli(capsys, "runs", "rm", "kept", "done", "--force", "--store", store_url)
    lines = " ".join(out.split())
    assert code == 0 and ("removed run kept: 3 metrics, 2 traces, 1 feedback events, 1 artifacts; "
                          "baseline 'default' dropped") in lines
    with RunStore(store_url) as store:
        assert store.list_runs() == [] and store.get_baseline("default") is None
        assert store.metric_counts() == {} and store.traces("kept") == [] and store.feedback() == []
        assert store.get_array("kept", "embed.reference") is None
    code, out, _ = cli(capsys, "runs", "rm", "--failed", "--store", store_url)
    assert code == 0 and "no failed or incomplete runs" in " ".join(out.split())


@pytest.mark.unit
def test_a_run_still_being_written_is_kept_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "runs.db")
    with RunStore(db) as store:
        store.create_run("live")  # this process is its writer, and it is alive
    code, _, err = cli(capsys, "runs", "rm", "live", "--store", db)
    assert code == 2 and "still being written" in err
    assert cli(capsys, "runs", "rm", "live", "--force", "--store", db)[0] == 0
