"""A new store opened by three processes at once, a writer that waits for another, an old schema.

The processes are real (multiprocessing; forked where the OS can, so they start without
re-importing) and meet at a barrier right before opening the store, so they create its tables at
the same moment.
"""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from hoprag.metrics import Metric
from hoprag.store import RunStore

N_PROCESSES = 3
N_METRICS = 25


def _open_and_write(url: str, barrier: object, index: int, results: object) -> None:
    try:
        from hoprag.metrics import Metric
        from hoprag.store import RunStore

        barrier.wait(timeout=60)  # type: ignore[attr-defined]
        with RunStore(url) as store:
            run = f"proc-{index}"
            store.create_run(run, kind="gate-run")
            with store.track_run(run):
                store.add_metrics([Metric(run, "chunk", f"m{i}", float(i)) for i in range(N_METRICS)])
        results.put((index, "ok"))  # type: ignore[attr-defined]
    except BaseException as exc:  # reported to the parent, which fails the test with it
        results.put((index, f"{type(exc).__name__}: {exc}"))  # type: ignore[attr-defined]


def race_new_store(url: str) -> dict[int, str]:
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    barrier, results = ctx.Barrier(N_PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_open_and_write, args=(url, barrier, i, results)) for i in range(N_PROCESSES)]
    for proc in procs:
        proc.start()
    try:
        return dict(results.get(timeout=120) for _ in procs)
    finally:
        for proc in procs:
            proc.join(timeout=60)


def assert_every_process_wrote(url: str) -> None:
    with RunStore(url) as store:
        runs = store.list_runs(limit=None)
        assert sorted(r.run_id for r in runs) == [f"proc-{i}" for i in range(N_PROCESSES)]
        assert {r.status for r in runs} == {"complete"}
        assert store.metric_counts() == {f"proc-{i}": N_METRICS for i in range(N_PROCESSES)}


@pytest.mark.integration
def test_three_processes_open_a_new_sqlite_store_at_once(tmp_path: Path) -> None:
    db = tmp_path / "fresh" / "hoprag.db"
    outcomes = race_new_store(str(db))
    assert outcomes == {i: "ok" for i in range(N_PROCESSES)}
    assert_every_process_wrote(str(db))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.integration
def test_three_processes_open_a_fresh_postgres_database_at_once(pg_url: str) -> None:
    outcomes = race_new_store(pg_url)
    assert outcomes == {i: "ok" for i in range(N_PROCESSES)}
    assert_every_process_wrote(pg_url)


@pytest.mark.unit
def test_a_second_sqlite_writer_waits_for_the_first(tmp_path: Path) -> None:
    db = tmp_path / "hoprag.db"
    with RunStore(db) as store:
        store.create_run("b")
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's write transaction, in flight
        started = threading.Event()
        outcome: list[object] = []

        def write() -> None:
            started.set()
            try:
                outcome.append(store.add_metrics([Metric("b", "chunk", "m", 1.0)]))
            except Exception as exc:  # without a busy timeout: "database is locked" at once
                outcome.append(exc)

        worker = threading.Thread(target=write)
        worker.start()
        started.wait(5)
        time.sleep(0.5)  # the writer is now waiting on the lock
        holder.execute("INSERT INTO runs (run_id, kind, created_at, config, meta, status) "
                       "VALUES ('a', 'run', '2024-05-01 00:00:00', '{}', '{}', 'complete')")
        holder.execute("COMMIT")
        holder.close()
        worker.join(30)
        assert outcome == [1]
        assert store.metric_counts() == {"b": 1}
        assert store.require_run("a").status == "complete"


@pytest.mark.unit
def test_a_store_made_before_run_statuses_is_upgraded_in_place(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # the version-1 runs table, with one run in it
        conn.execute("CREATE TABLE runs (run_id VARCHAR(200) PRIMARY KEY, kind VARCHAR(40) NOT NULL, "
                     "created_at DATETIME NOT NULL, artifact_id VARCHAR(64), config JSON NOT NULL, meta JSON NOT NULL)")
        conn.execute("INSERT INTO runs VALUES ('old-run', 'gate-run', '2024-05-01 12:00:00.000000', NULL, '{}', '{}')")
    with RunStore(db) as store:
        old = store.require_run("old-run")
        assert (old.status, old.writer, old.error) == ("unknown", None, None)
        store.create_run("new-run")
        assert store.finish_run("new-run")
        assert store.require_run("new-run").status == "complete"
        assert [r.run_id for r in store.list_runs(status="unknown")] == ["old-run"]
    with RunStore(db) as again:  # opening an upgraded store changes nothing
        assert len(again.list_runs()) == 2
