"""The versions an update took out of an index, kept with their valid time for ``--as-of`` searches.

The current index holds only the current documents (it stays equal to a rebuild of them); what a
``hoprag index --update`` replaced or deleted moves here, into ``history/versions.sqlite`` of the
index directory, written into the update's staging directory and swapped in with the rest of it
(:mod:`hoprag.index.staging`): a killed update leaves the previous history with the previous index.
A full rebuild (``hoprag index CORPUS --out DIR`` without ``--update``) starts a new index and a new
history. Tables::

    versions(seq, id, record, start, until, ended, at, arrived)   a retired version: its canonical
                                  record, the valid time it had (start NULL: from the beginning), why
                                  it ended (replaced | deleted), the update's time, and the time of
                                  the update that had added it (NULL: the build)
    arrivals(id, at)              the time of the update that added the current version of ``id`` (a
                                  document without dates of its own is valid from then)

A retired version's ``until`` is the earliest of its own ``valid_until``, and — replaced — the new
version's own start, else the update's time; — deleted — the update's time
(:mod:`hoprag.index.valid_time`).

A PostgreSQL index keeps the same two tables in its schema, written in the update's one transaction
(:mod:`hoprag.index.pg_history`): :func:`retire` computes the rows, and :func:`versions_from_rows`
and :func:`arrivals_from_rows` read them, for both stores.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from hoprag.errors import IndexLoadError
from hoprag.index.update_plan import UpdatePlan
from hoprag.index.valid_time import own_interval, parse_instant, to_text
from hoprag.records import Document

__all__ = ["HISTORY_DIR", "VERSIONS", "Version", "VersionRow", "arrivals", "arrivals_from_rows", "read_versions",
           "record_update", "retire", "versions_from_rows"]

HISTORY_DIR = "history"
VERSIONS = "versions.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, record TEXT NOT NULL, start TEXT,
  until TEXT NOT NULL, ended TEXT NOT NULL, at TEXT NOT NULL, arrived TEXT);
CREATE TABLE IF NOT EXISTS arrivals (id TEXT PRIMARY KEY, at TEXT NOT NULL);
"""


class VersionRow(NamedTuple):
    """One retired version as either store writes it: times as stored text (:func:`to_text`)."""

    id: str
    record: str
    start: str | None
    until: str
    ended: str
    at: str
    arrived: str | None


@dataclass(frozen=True)
class Version:
    """One retired version of a document and the valid time it had."""

    seq: int
    id: str
    record: str
    start: datetime | None
    until: datetime
    ended: Literal["replaced", "deleted"]
    at: str
    #: when the index received this version (an update's time; None: the build)
    arrived: datetime | None = None

    def valid_at(self, moment: datetime) -> bool:
        return (self.start is None or self.start <= moment) and moment < self.until

    def held_at(self, moment: datetime) -> bool:
        """Whether the index held this version at ``moment`` (received, not yet retired)."""
        retired = parse_instant(self.at)
        return (self.arrived is None or self.arrived <= moment) and (retired is None or moment < retired)

    def document(self) -> Document:
        return Document.from_dict(json.loads(self.record))


def _path(directory: Path) -> Path:
    return directory / HISTORY_DIR / VERSIONS


def _start(record: Mapping[str, Any]) -> datetime | None:
    metadata = record.get("metadata")
    return own_interval(record.get("timestamp"), metadata if isinstance(metadata, dict) else {})[0]


def retire(plan: UpdatePlan, retired: Mapping[str, str], arrived: Mapping[str, str],
           at: str) -> tuple[list[VersionRow], list[tuple[str, str]]]:
    """What an update at ``at`` adds to an index's history, whichever store keeps it: one row per
    version ``plan`` removes (``retired``: id -> the canonical record the index held; ``arrived``: id ->
    the stored time of the update that added the current version) with the valid time it had, and the
    ``(id, at)`` arrivals of the new versions (the removed ids' arrivals end)."""
    moment = parse_instant(at)
    if moment is None:  # the update's own clock: always ISO
        raise ValueError(f"update time {at!r} is not ISO 8601")
    # the two fields _start reads, not to_dict(): asdict deep-copies every document (0.1 s per 1,000)
    new_start = {doc.id: _start({"timestamp": doc.timestamp, "metadata": doc.metadata}) or moment
                 for doc, _ in plan.fresh}
    rows = []
    for doc_id in sorted(plan.removed):
        record = retired[doc_id]
        data = json.loads(record)
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        start, until = own_interval(data.get("timestamp"), metadata)
        start = start or parse_instant(arrived.get(doc_id))
        ended = "replaced" if doc_id in plan.replaced else "deleted"
        end = new_start[doc_id] if ended == "replaced" else moment
        until = min(until, end) if until is not None else end
        rows.append(VersionRow(doc_id, record, to_text(start) if start else None, to_text(until), ended, at,
                               arrived.get(doc_id)))
    return rows, [(doc.id, at) for doc, _ in plan.fresh]


def record_update(source: Path, stage: Path, plan: UpdatePlan, retired: Mapping[str, str], at: str) -> None:
    """Write into ``stage`` the history of ``source`` plus this update (:func:`retire`)."""
    target = _path(stage)
    target.parent.mkdir(parents=True, exist_ok=True)
    if _path(source).is_file():
        shutil.copyfile(_path(source), target)
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN")
        rows, arrivals_now = retire(plan, retired, dict(conn.execute("SELECT id, at FROM arrivals")), at)
        conn.executemany("INSERT INTO versions (id, record, start, until, ended, at, arrived) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         rows)
        conn.executemany("DELETE FROM arrivals WHERE id = ?", [(doc_id,) for doc_id in sorted(plan.removed)])
        conn.executemany("INSERT OR REPLACE INTO arrivals VALUES (?, ?)", arrivals_now)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _rows(directory: Path, sql: str) -> list[tuple[Any, ...]]:
    path = _path(directory)
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise IndexLoadError(f"{directory}: {HISTORY_DIR}/{VERSIONS} unreadable ({exc}). Fix: restore the index "
                             "directory from a copy; its replaced versions cannot be rebuilt from the current "
                             "documents") from None


def read_versions(directory: Path) -> list[Version]:
    """Every retired version of the index at ``directory``, oldest retirement first."""
    return versions_from_rows(
        _rows(directory, "SELECT seq, id, record, start, until, ended, at, arrived FROM versions ORDER BY seq"),
        f"{directory}: {HISTORY_DIR}/{VERSIONS}", fix="restore the index directory from a copy")


def versions_from_rows(rows: Iterable[Sequence[Any]], where: str, *, fix: str) -> list[Version]:
    """:class:`Version` records from stored ``(seq, id, record, start, until, ended, at, arrived)`` rows
    (either store's); ``where`` and ``fix`` make the message for a damaged time."""
    versions = []
    for seq, doc_id, record, start, until, ended, at, came in rows:
        end = parse_instant(until)
        if end is None:
            raise IndexLoadError(f"{where} holds a damaged time {until!r}. Fix: {fix}")
        versions.append(Version(seq, doc_id, record, parse_instant(start), end, ended, at, parse_instant(came)))
    return versions


def arrivals(directory: Path) -> dict[str, datetime]:
    """id -> the time of the update that added the current version (ids an update added only)."""
    return arrivals_from_rows(_rows(directory, "SELECT id, at FROM arrivals"))


def arrivals_from_rows(rows: Iterable[Sequence[Any]]) -> dict[str, datetime]:
    """id -> instant, from stored ``(id, at)`` rows (either store's); an unreadable time is skipped."""
    found = {}
    for doc_id, at in rows:
        moment = parse_instant(at)
        if moment is not None:
            found[doc_id] = moment
    return found
