"""The versions updates took out of a PostgreSQL index: written in the update's transaction, read by ``--as-of``.

A PostgreSQL index keeps the local index's history tables (:mod:`hoprag.index.history`) in its own
schema — ``versions`` and ``arrivals`` (:func:`hoprag.index.pg_schema.history_ddl`) — with the same
rows, computed by the same :func:`~hoprag.index.history.retire`. :func:`record_pg_update` writes them
inside the update's one transaction (:mod:`hoprag.index.pg_update`): a killed update leaves neither
its change nor its history rows. An index of layout 2 (built before PostgreSQL kept history) gets the
tables from its next update; if it had been updated before, the versions those updates replaced are
gone, and ``history_gap`` records from when the history is complete.

:class:`PgHistory` reads them for :mod:`hoprag.index.snapshots`, which selects a snapshot's documents
from them exactly as from a local index's (one selection for both stores).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from hoprag.errors import IndexLoadError, InputError
from hoprag.index.corpus_db import canonical_record
from hoprag.index.history import Version, arrivals_from_rows, retire, versions_from_rows
from hoprag.index.pg_schema import PG_FORMAT, Connections, PgTarget, history_ddl, quote
from hoprag.index.update_plan import UpdatePlan
from hoprag.index.valid_time import parse_instant, show
from hoprag.records import Document

__all__ = ["PgHistory", "record_pg_update"]

_BATCH = 2000


def record_pg_update(conn: Any, target: PgTarget, plan: UpdatePlan, *, updated_before: bool, at: str) -> None:
    """Add this update's retired versions and arrivals to the history of the index ``target``, in the
    caller's transaction and before the removed rows are deleted (their records are read here).
    ``updated_before``: whether the index had been updated already (for a layout-2 index, whose
    earlier updates kept no versions)."""
    s = quote(target.schema)
    if not _has_history(conn, target):
        for statement in history_ddl(target.schema):
            conn.execute(statement)
        if updated_before:
            conn.execute(f"INSERT INTO {s}.history_gap (until) VALUES (%s)", (at,))
    conn.execute(f"UPDATE {s}.manifest SET format = %s WHERE id = 1 AND format <> %s", (PG_FORMAT, PG_FORMAT))
    removed = sorted(plan.removed)
    retired: dict[str, str] = {}
    for lo in range(0, len(removed), _BATCH):
        rows = conn.execute(f"SELECT id, body FROM {s}.documents WHERE id = ANY(%s::text[])",
                            (removed[lo: lo + _BATCH],)).fetchall()
        retired.update((doc_id, canonical_record(Document.from_dict(body))) for doc_id, body in rows)
    arrived = dict(conn.execute(f"SELECT id, at FROM {s}.arrivals WHERE id = ANY(%s::text[])", (removed,)).fetchall())
    versions, arrivals_now = retire(plan, retired, arrived, at)
    if versions:
        with conn.cursor().copy(f"COPY {s}.versions (id, record, start, until, ended, at, arrived) FROM STDIN") as copy:
            for row in versions:
                copy.write_row(row)
    conn.execute(f"DELETE FROM {s}.arrivals WHERE id = ANY(%s::text[])", (removed,))
    conn.execute(f"INSERT INTO {s}.arrivals AS a (id, at) SELECT * FROM unnest(%s::text[], %s::text[]) "
                 "ON CONFLICT (id) DO UPDATE SET at = EXCLUDED.at",
                 ([doc_id for doc_id, _ in arrivals_now], [when for _, when in arrivals_now]))


def _has_history(conn: Any, target: PgTarget) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{quote(target.schema)}.versions",)).fetchone()[0]


class PgHistory:
    """What a snapshot of a PostgreSQL index is selected from: its current documents' dates, its
    retired versions and arrivals, and the canonical records of both (the
    :class:`~hoprag.index.snapshots.VersionSource` of this store).

    Everything is read in one read-only ``REPEATABLE READ`` transaction on a connection of its own:
    the documents are streamed more than once (their dates, then the records of those selected by
    position), and an update committed meanwhile must not shift one against the other. :meth:`close`
    ends it."""

    def __init__(self, pool: Connections, updates: int) -> None:
        import psycopg

        self.target = pool.target
        self.where = pool.target.display
        self._s = quote(pool.target.schema)
        self._error = psycopg.Error
        self._conn = pool.connect()
        self._conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        self._conn.read_only = True
        self._conn.autocommit = False
        with self._reading():
            self._kept = _has_history(self._conn, self.target)
            gap = self._conn.execute(f"SELECT until FROM {self._s}.history_gap").fetchone() if self._kept else None
        self._gap = parse_instant(gap[0]) if gap else None
        self._updates = updates

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except self._error as exc:
            self.close()
            raise IndexLoadError(f"the PostgreSQL index at {self.where} failed while its snapshot was read "
                                 f"({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}). "
                                 "Fix: check the server is up, then search again") from None

    def close(self) -> None:
        self._conn.close()  # the read-only transaction ends with it

    def check(self, at: datetime, flag: str) -> None:
        """Refuse an instant before this index kept its versions (updates made on layout 2)."""
        fix = (f"rebuild the index from its corpus (`hoprag index CORPUS --out {self.where}`): from then on every "
               "update keeps the versions it replaces")
        if not self._kept and self._updates:
            raise InputError(f"this PostgreSQL index was updated before hoprag kept the versions updates replace, "
                             f"so the documents valid at {show(at)} are not known", source=self.where,
                             fix=f"leave {flag} out to search the current index, or {fix}")
        if self._gap is not None and at < self._gap:
            raise InputError(f"this PostgreSQL index keeps the versions updates replaced from {show(self._gap)} on; "
                             f"{show(at)} is before that", source=self.where,
                             fix=f"pass {flag} {show(self._gap)} or later, or {fix}")

    def _stream(self, sql: str, name: str) -> Iterator[tuple[Any, ...]]:
        with self._reading(), self._conn.cursor(name=name) as cursor:
            cursor.execute(sql)
            while rows := cursor.fetchmany(1024):
                yield from rows

    def current_fields(self) -> Iterator[tuple[Any, ...]]:
        """``(id, timestamp, valid_from, effective_date, valid_until)`` of each current document, in order."""
        # -> keeps a date's JSON type: a number stays a number, as a local index's json_extract gives it
        return self._stream(f"SELECT id, body->>'timestamp', body->'metadata'->'valid_from', "
                            f"body->'metadata'->'effective_date', body->'metadata'->'valid_until' "
                            f"FROM {self._s}.documents ORDER BY pos", "hoprag_snapshot_dates")

    def versions(self) -> list[Version]:
        if not self._kept:
            return []
        with self._reading():
            rows = self._conn.execute(f"SELECT seq, id, record, start, until, ended, at, arrived FROM {self._s}.versions "
                                      "ORDER BY seq").fetchall()
        return versions_from_rows(rows, f"{self.where}: table versions",
                                  fix=f"rebuild the index with `hoprag index CORPUS --out {self.where}`")

    def arrivals(self) -> dict[str, datetime]:
        if not self._kept:
            return {}
        with self._reading():
            return arrivals_from_rows(self._conn.execute(f"SELECT id, at FROM {self._s}.arrivals").fetchall())

    def current_records(self) -> Iterator[str]:
        """The canonical record of each current document, in order."""
        for (body,) in self._stream(f"SELECT body FROM {self._s}.documents ORDER BY pos", "hoprag_snapshot_records"):
            yield canonical_record(Document.from_dict(body))
