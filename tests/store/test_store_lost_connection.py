"""Losing the PostgreSQL connection mid-write: one clear StoreError, nothing half-written, the run marked failed.

The write is caught in flight for real: a second connection holds a lock on the table, the store's
INSERT waits on it, and that waiting backend is terminated with ``pg_terminate_backend``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hoprag.jsonl import read_records
from hoprag.records import Trace
from hoprag.store import RunStore, StoreError

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data"


def _kill_mid_write(pg_url: str, table: str, write: Callable[[], object]) -> BaseException | None:
    """Run ``write`` while ``table`` is locked, terminate its backend once it waits, return what it raised."""
    import sqlalchemy as sa

    admin = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    raised: list[BaseException] = []

    def run() -> None:
        try:
            write()
        except BaseException as exc:  # handed to the test
            raised.append(exc)

    # pg_stat_activity is read from a second, autocommit connection: inside one transaction it is a snapshot
    with admin.connect() as holder, admin.connect().execution_options(isolation_level="AUTOCOMMIT") as watcher:
        holder.execute(sa.text(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
        worker = threading.Thread(target=run)
        worker.start()
        waiting = None
        deadline = time.monotonic() + 30
        while waiting is None and time.monotonic() < deadline:
            waiting = watcher.execute(sa.text(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE :q"),
                {"q": f"INSERT INTO {table}%"}).scalar()
            time.sleep(0.02)
        assert waiting is not None, "the store's write never reached the lock"
        assert watcher.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": waiting}).scalar()
        holder.rollback()  # releases the lock
    worker.join(30)
    admin.dispose()
    return raised[0] if raised else None


def test_lost_connection_mid_write_is_one_clear_error(pg_url: str) -> None:
    traces = read_records(DATA / "eval_traces.jsonl", Trace)
    with RunStore(pg_url) as store:
        store.create_run("r1")
        error = _kill_mid_write(pg_url, "traces", lambda: store.add_traces("r1", traces))
        assert isinstance(error, StoreError) and error.disconnected
        message = str(error)
        assert message.startswith(f"lost the connection to the run store {store.display_url} while writing to "
                                  "table 'traces'")
        assert "Nothing of that write was kept" in message and "Fix:" in message and "hoprag runs list" in message
        assert "INSERT" not in message and "Traceback" not in message
        # the store is reachable again through a fresh connection, and the batch is not half there
        assert store.traces("r1") == []
        assert store.add_traces("r1", traces[:2]) == 2


def test_a_job_that_loses_its_connection_leaves_its_run_failed(pg_url: str) -> None:
    from hoprag.metrics import Metric

    with RunStore(pg_url) as store:
        store.create_run("job-1", kind="gate-run")

        def job() -> None:
            with store.track_run("job-1"):
                store.put_json("job-1", "ingest.field_profile", {"text": {"string": 3}})  # a table not locked
                store.add_metrics([Metric("job-1", "chunk", f"m{i}", float(i)) for i in range(50)])

        error = _kill_mid_write(pg_url, "metrics", job)
        assert isinstance(error, StoreError)
        assert "lost the connection" in str(error) and str(error).endswith("Run 'job-1' is marked failed")
        run = store.require_run("job-1")
        assert run.status == "failed" and run.finished_at is not None
        assert run.error.startswith("StoreError: lost the connection")
        assert store.get_json("job-1", "ingest.field_profile") == {"text": {"string": 3}}  # written before
        assert store.metrics("job-1") == []  # the lost batch left nothing behind
