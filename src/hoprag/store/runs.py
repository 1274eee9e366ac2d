"""The run half of the store: create, finish, list and remove runs.

A run is created ``running`` and stamped with its writer; :meth:`RunRegistry.track_run` marks it
``complete`` when the job that writes it ends and ``failed`` (with the reason) when the job
raises. Only the process that created a run and left it ``running`` can finish it, so a job that
fails on a duplicate id never marks the other run. A ``running`` run whose writer process is gone
reads as ``incomplete``. Removing runs deletes every row they own in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from hoprag.errors import ConfigError
from hoprag.security.boundary import text_for_storage, value_for_storage
from hoprag.store import schema as t
from hoprag.store.connection import write_connection
from hoprag.store.errors import StoreError, first_line
from hoprag.store.records import (COMPLETE, FAILED, INCOMPLETE, RUN_STATUSES, RUNNING, UNKNOWN, RemovedRun,
                                  RunInfo)
from hoprag.store.values import json_safe, utc
from hoprag.store.writers import current_writer, writer_gone

__all__ = ["RunRegistry"]

LIST_HINT = "`hoprag runs list` (with the same --store) shows the run ids"
# tables whose rows belong to one run, removed with it
_OWNED = (("metrics", t.metrics), ("traces", t.traces), ("feedback", t.feedback), ("artifacts", t.artifacts))


def _quoted(ids: Iterable[str]) -> str:
    return ", ".join(f"'{i}'" for i in ids)


class RunRegistry:
    """Run methods of :class:`~hoprag.store.run_store.RunStore` (which provides ``engine``, ``display_url``)."""

    engine: sa.Engine
    display_url: str

    def create_run(self, run_id: str, *, kind: str = "run", config: dict[str, Any] | None = None,
                   meta: dict[str, Any] | None = None, artifact_id: str | None = None,
                   exist_ok: bool = False) -> RunInfo:
        """Register ``run_id`` as ``running``; an existing id raises unless ``exist_ok`` (then it is returned)."""
        row = {"run_id": run_id, "kind": kind, "created_at": datetime.now(timezone.utc),
               "artifact_id": artifact_id, "config": json_safe(value_for_storage(config or {}, "store-runs")),
               "meta": json_safe(value_for_storage(meta or {}, "store-runs")),
               "status": RUNNING, "writer": current_writer()}
        with write_connection(self.engine) as conn:
            # checked inside the write transaction: two processes creating one id cannot both succeed
            existing = conn.execute(sa.select(t.runs).where(t.runs.c.run_id == run_id)).mappings().first()
            if existing is None:
                conn.execute(t.runs.insert(), row)
                return self._run_info(row)
        if exist_ok:
            return self._run_info(dict(existing))
        raise StoreError(f"run '{run_id}' already exists in {self.display_url}. Fix: choose another --run-id")

    def set_artifact_id(self, run_id: str, artifact_id: str) -> None:
        """Stamp the id of the artifact (index) a run built onto the run."""
        self.require_run(run_id)
        with write_connection(self.engine) as conn:
            conn.execute(t.runs.update().where(t.runs.c.run_id == run_id).values(artifact_id=artifact_id))

    def get_run(self, run_id: str) -> RunInfo | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(t.runs).where(t.runs.c.run_id == run_id)).mappings().first()
        return None if row is None else self._run_info(dict(row))

    def require_run(self, run_id: str) -> RunInfo:
        """The run, or a :class:`StoreError` listing the most recent run ids."""
        run = self.get_run(run_id)
        if run is None:
            known = [r.run_id for r in self.list_runs(limit=10)]
            listing = ", ".join(known) if known else "none yet"
            raise StoreError(
                f"no run '{run_id}' in {self.display_url} (recent runs: {listing}). "
                f"Fix: pass a run id printed by `hoprag gate run`; {LIST_HINT}")
        return run

    def list_runs(self, limit: int | None = 50, *, status: str | None = None) -> list[RunInfo]:
        """Runs, newest first; ``status`` keeps one status (``incomplete`` included); ``limit=None``: all."""
        if status is not None and status not in RUN_STATUSES:
            raise ConfigError(f"unknown run status '{status}'; valid: {', '.join(RUN_STATUSES)}")
        query = sa.select(t.runs).order_by(t.runs.c.created_at.desc(), t.runs.c.run_id.desc())
        if status in (COMPLETE, FAILED, UNKNOWN):
            query = query.where(t.runs.c.status == status)
        elif status in (RUNNING, INCOMPLETE):  # which of the two is decided per writer below
            query = query.where(t.runs.c.status == RUNNING)
        if limit is not None and status not in (RUNNING, INCOMPLETE):
            query = query.limit(limit)
        with self.engine.connect() as conn:
            runs = [self._run_info(dict(r)) for r in conn.execute(query).mappings()]
        runs = [r for r in runs if status is None or r.status == status]
        return runs if limit is None else runs[:limit]

    def runs_of_artifact(self, artifact_id: str, limit: int = 30) -> list[RunInfo]:
        """The latest ``limit`` runs stamped with ``artifact_id`` (one index), oldest first."""
        query = (sa.select(t.runs).where(t.runs.c.artifact_id == artifact_id)
                 .order_by(t.runs.c.created_at.desc(), t.runs.c.run_id.desc()).limit(limit))
        with self.engine.connect() as conn:
            return [self._run_info(dict(r)) for r in conn.execute(query).mappings()][::-1]

    def resume_run(self, run_id: str) -> bool:
        """Take ``run_id`` over as ``running`` with this process as its writer, unless a live writer holds it.

        A service restarted on its run writes it again: the run reads running (and complete once this
        process stops it), never what the last stop left (complete, or incomplete after a kill). A run
        another live process is writing is left to it; returns whether this process writes the run now."""
        me = current_writer()
        with write_connection(self.engine) as conn:
            row = conn.execute(sa.select(t.runs.c.status, t.runs.c.writer)
                               .where(t.runs.c.run_id == run_id)).mappings().first()
            if row is None:
                return False
            if row["status"] == RUNNING and (row["writer"] == me or not writer_gone(row["writer"])):
                return row["writer"] == me
            conn.execute(t.runs.update().where(t.runs.c.run_id == run_id)
                         .values(status=RUNNING, writer=me, finished_at=None, error=None))
        return True

    def metric_counts(self) -> dict[str, int]:
        """``{run_id: number of metric rows}`` for every run that has metrics."""
        query = sa.select(t.metrics.c.run_id, sa.func.count()).group_by(t.metrics.c.run_id)
        with self.engine.connect() as conn:
            return {run_id: int(n) for run_id, n in conn.execute(query)}

    def finish_run(self, run_id: str, status: str = COMPLETE, *, error: str | None = None) -> bool:
        """Mark a run this process created and left ``running`` as ``complete`` or ``failed``.

        Returns False (and changes nothing) for any other run: finished already, or another writer's.
        """
        if status not in (COMPLETE, FAILED):
            raise ConfigError(f"a run finishes '{COMPLETE}' or '{FAILED}', not '{status}'")
        update = (t.runs.update()
                  .where((t.runs.c.run_id == run_id) & (t.runs.c.status == RUNNING)
                         & (t.runs.c.writer == current_writer()))
                  .values(status=status, finished_at=datetime.now(timezone.utc),
                          error=None if error is None else text_for_storage(error, "store-runs")))
        with write_connection(self.engine) as conn:
            return conn.execute(update).rowcount > 0

    @contextmanager
    def track_run(self, run_id: str) -> Iterator[None]:
        """Mark ``run_id`` ``complete`` when the block ends and ``failed`` when it raises.

        A store error (a lost connection) is raised again with what became of the run: marked
        failed if the store is reachable once more, else shown ``incomplete`` once this process ends.
        """
        try:
            yield
        except BaseException as exc:
            note = self._fail(run_id, exc)
            if isinstance(exc, StoreError) and note:
                raise StoreError(f"{exc}. Run '{run_id}' {note}", reason=exc.reason,
                                 disconnected=exc.disconnected) from exc
            raise
        self.finish_run(run_id, COMPLETE)

    def _fail(self, run_id: str, exc: BaseException) -> str | None:
        interrupted = isinstance(exc, KeyboardInterrupt)
        # an error message may quote the data it choked on: finish_run stores it with PII replaced
        reason = "interrupted" if interrupted else f"{type(exc).__name__}: {first_line(exc, 500)}"
        try:
            marked = self.finish_run(run_id, FAILED, error=reason)
        except StoreError:
            return "could not be marked failed: `hoprag runs list` shows it incomplete once this process has ended"
        return "is marked failed" if marked else None

    def delete_runs(self, run_ids: Iterable[str], *, force: bool = False) -> list[RemovedRun]:
        """Remove runs with their metrics, traces, feedback and artifacts, all in one transaction.

        Refused (nothing removed) for an unknown id, a run a baseline points at, or a run still being
        written, unless ``force`` (which also drops the baselines that pointed at the runs).
        """
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return []
        with write_connection(self.engine) as conn:
            found = conn.execute(sa.select(t.runs).where(t.runs.c.run_id.in_(ids)).with_for_update()).mappings()
            runs = {r["run_id"]: self._run_info(dict(r)) for r in found}
            missing = [i for i in ids if i not in runs]
            if missing:
                raise StoreError(f"no run {_quoted(missing)} in {self.display_url}; nothing was removed. "
                                 f"Fix: {LIST_HINT}")
            pointed = conn.execute(sa.select(t.baselines.c.name, t.baselines.c.run_id)
                                   .where(t.baselines.c.run_id.in_(ids))).all()
            if pointed and not force:
                which = ", ".join(f"run '{rid}' is baseline '{name}'" for name, rid in pointed)
                raise StoreError(
                    f"{which}: gates compare against it; nothing was removed. Fix: freeze another run first "
                    "(`hoprag gate baseline --run RUN_ID --name NAME`), or pass --force to remove the run and its baseline")
            busy = [r for r in runs.values() if r.status == RUNNING]
            if busy and not force:
                writers = ", ".join(f"'{r.run_id}' (writer {r.writer})" for r in busy)
                raise StoreError(
                    f"run {writers} is still being written; nothing was removed. Fix: wait for it to finish; "
                    "if its writer is gone for good (it ran on another machine), pass --force")
            removed = []
            for rid in ids:
                counts = {name: conn.execute(table.delete().where(table.c.run_id == rid)).rowcount
                          for name, table in _OWNED}
                names = tuple(sorted(name for name, owner in pointed if owner == rid))
                removed.append(RemovedRun(rid, baselines=names, **counts))
            conn.execute(t.baselines.delete().where(t.baselines.c.run_id.in_(ids)))
            conn.execute(t.runs.delete().where(t.runs.c.run_id.in_(ids)))
        return removed

    @staticmethod
    def _run_info(row: dict[str, Any]) -> RunInfo:
        status = row.get("status") or UNKNOWN
        if status == RUNNING and writer_gone(row.get("writer")):
            status = INCOMPLETE
        finished = row.get("finished_at")
        return RunInfo(run_id=row["run_id"], kind=row["kind"], created_at=utc(row["created_at"]),
                       artifact_id=row.get("artifact_id"), config=dict(row.get("config") or {}),
                       meta=dict(row.get("meta") or {}), status=status,
                       finished_at=utc(finished) if finished else None, writer=row.get("writer"),
                       error=row.get("error"))
