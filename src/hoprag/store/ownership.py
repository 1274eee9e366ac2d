"""Which database is hoprag's run store: a store is marked, and another application's database is
never touched.

A store hoprag made carries its marks: the table ``hoprag_meta`` (``application = hoprag`` and the
``schema_version``) on both back-ends, and on SQLite the file's ``PRAGMA application_id``
(:data:`APPLICATION_ID`, "hopr" in ASCII). :func:`open_store_engine` is the one way a store is
opened (:class:`~hoprag.store.run_store.RunStore` calls it); in one locked transaction it looks at
what the database already holds, before anything is written:

- nothing (a new file, a 0-byte file, an empty PostgreSQL database): the tables are created and marked;
- the marks: used, a store of an older schema version migrated (:func:`hoprag.store.schema.ensure_schema`);
- no marks, but only tables an earlier hoprag made, each with exactly the columns of one of its
  versions (schema 1 or 2, before the marks existed): hoprag's own, so it is marked and migrated,
  and a user's ``.hoprag/hoprag.db`` keeps working;
- anything else (another application's tables, or a table of ours with other columns, another
  SQLite application_id, a store of a newer hoprag): refused with an :class:`InputError` naming the
  database and the fix; the transaction holds no write, so nothing in it changes.

A SQLite path that is a directory, or a file that is not SQLite at all, is refused before it is
opened; a SQLite store is switched to WAL mode only once it is known to be ours (the switch
rewrites the file's header).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from hoprag.errors import InputError
from hoprag.store import schema as t
from hoprag.store.connection import enable_wal, make_engine, write_connection

__all__ = ["APPLICATION_ID", "APPLICATION_NAME", "ForeignStoreError", "StoreFacts", "Verdict", "classify",
           "open_store_engine", "read_facts"]

APPLICATION_ID = 0x686F7072  # "hopr": SQLite's header field for the application that owns a file
APPLICATION_NAME = "hoprag"
SQLITE_MAGIC = b"SQLite format 3\x00"

#: the tables and columns hoprag made before the marks existed (schema 1 and 2), frozen as written then
_RUNS_V1 = frozenset({"run_id", "kind", "created_at", "artifact_id", "config", "meta"})
UNMARKED_LAYOUTS: Mapping[str, tuple[frozenset[str], ...]] = {
    "runs": (_RUNS_V1, _RUNS_V1 | {"status", "finished_at", "writer", "error"}),
    "traces": (frozenset({"id", "run_id", "case_id", "engine", "data"}),),
    "metrics": (frozenset({"id", "run_id", "stage", "metric", "value", "meta", "ts"}),),
    "feedback": (frozenset({"id", "event_id", "run_id", "case_id", "kind", "value", "tag", "stage", "chunk_id",
                            "count", "ts", "meta"}),),
    "artifacts": (frozenset({"run_id", "name", "kind", "data"}),),
    "baselines": (frozenset({"name", "run_id", "created_at"}),),
}
UNMARKED_VERSION = 2  # what an unmarked store of ours is migrated from (1 and 2 differ only in runs' columns)

NEW, OURS, FOREIGN, NEWER = "new", "ours", "foreign", "newer"

STORE_FIX = ("point --store (or HOPRAG_STORE) at hoprag's own database, e.g. --store .hoprag/hoprag.db "
             "(created when missing), or at an empty PostgreSQL database")


class ForeignStoreError(InputError):
    """The database given as the run store belongs to another application (or is no database)."""


@dataclass(frozen=True)
class StoreFacts:
    """What a database holds, as far as telling whose it is goes."""

    #: every table and view of the default schema, with its column names
    tables: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: SQLite's ``PRAGMA application_id`` (``None`` on PostgreSQL)
    application_id: int | None = None
    #: the rows of ``hoprag_meta`` when that table is there with hoprag's columns
    marker: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Verdict:
    """``new`` (empty), ``ours`` (``version`` is the stored schema's), ``foreign`` or ``newer``, and why."""

    kind: str
    version: int = 0
    reason: str = ""


def classify(facts: StoreFacts) -> Verdict:
    """Whose database ``facts`` describe (pure: the rules of the module docstring)."""
    if facts.application_id not in (None, 0, APPLICATION_ID):
        return Verdict(FOREIGN, reason=f"its SQLite application_id is {facts.application_id:#010x}, another "
                                       f"application's (hoprag's is {APPLICATION_ID:#010x})")
    if facts.marker is not None and facts.marker.get("application") == APPLICATION_NAME:
        version = _version(facts.marker.get("schema_version"))
        if version > t.SCHEMA_VERSION:
            return Verdict(NEWER, version, f"it was made by a newer hoprag (schema version {version}; this one "
                                           f"reads up to {t.SCHEMA_VERSION})")
        return Verdict(OURS, version)
    if facts.application_id == APPLICATION_ID:  # our file, its marker table lost: make what is missing
        return Verdict(OURS, UNMARKED_VERSION)
    if not facts.tables:
        return Verdict(NEW)
    problems = []
    strangers = sorted(name for name in facts.tables if name not in UNMARKED_LAYOUTS)
    if strangers:
        problems.append(f"it holds tables hoprag did not make ({_some(strangers)})")
    for name, columns in sorted(facts.tables.items()):
        if name in UNMARKED_LAYOUTS and columns not in UNMARKED_LAYOUTS[name]:
            known = set().union(*UNMARKED_LAYOUTS[name])
            extra, lacking = sorted(columns - known), sorted(known - columns)
            detail = f"columns {_some(extra)} are not hoprag's" if extra else f"it lacks {_some(lacking)}"
            problems.append(f"its table '{name}' is not hoprag's ({detail})")
    if problems:
        return Verdict(FOREIGN, reason=", and ".join(problems))
    return Verdict(OURS, UNMARKED_VERSION)


def _version(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _some(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def read_facts(conn: sa.Connection) -> StoreFacts:
    """What ``conn``'s database holds (reads only)."""
    inspector = sa.inspect(conn)
    names = list(inspector.get_table_names()) + list(inspector.get_view_names())
    tables = {name: frozenset(c["name"] for c in inspector.get_columns(name)) for name in names}
    application_id = None
    if conn.dialect.name == "sqlite":
        application_id = int(conn.exec_driver_sql("PRAGMA application_id").scalar() or 0)
    marker = None
    if tables.get(t.META_TABLE) == frozenset(t.meta.columns.keys()):
        marker = {str(k): str(v) for k, v in conn.execute(sa.select(t.meta.c.key, t.meta.c.value))}
    return StoreFacts(tables=tables, application_id=application_id, marker=marker)


def open_store_engine(url: str, display_url: str) -> sa.Engine:
    """An engine on the run store at ``url``, created and marked when new, migrated when older.

    Raises :class:`ForeignStoreError` (nothing in the database changed) when it is not a hoprag
    store; database failures raise :class:`~hoprag.store.errors.StoreError` as everywhere in the store.
    """
    sa_url = sa.engine.make_url(url)
    where = display_url
    if sa_url.get_backend_name() == "sqlite" and sa_url.database not in (None, "", ":memory:"):
        where = sa_url.database
        _check_sqlite_file(Path(sa_url.database))
    engine = make_engine(url, display_url)
    try:
        with write_connection(engine) as conn:
            t.lock_schema(conn)
            facts = read_facts(conn)
            verdict = classify(facts)
            if verdict.kind in (FOREIGN, NEWER):
                raise _refusal(where, verdict)
            t.ensure_schema(conn)
            _mark(conn, facts)
        enable_wal(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _check_sqlite_file(path: Path) -> None:
    """Refuse a directory, or a file that is not SQLite, before SQLite opens it."""
    if path.is_dir():
        raise ForeignStoreError("the run store path is a directory, not a SQLite file", source=str(path),
                                fix=f"pass a file path, e.g. --store {(path / 'hoprag.db').as_posix()}, or {STORE_FIX}")
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return  # a new store
    except OSError:
        return  # unreadable: SQLite's own error says why (StoreError)
    if head and head != SQLITE_MAGIC:  # a 0-byte file is a new, empty database to SQLite
        raise ForeignStoreError(
            "not hoprag's run store: the file is not a SQLite database (it does not start with the "
            "'SQLite format 3' header); nothing in it was changed", source=str(path), fix=STORE_FIX)


def _refusal(where: str, verdict: Verdict) -> ForeignStoreError:
    if verdict.kind == NEWER:
        return ForeignStoreError(f"cannot open the run store: {verdict.reason}; nothing in it was changed",
                                 source=where, fix=f"upgrade hoprag (pip install -U hoprag), or {STORE_FIX}")
    return ForeignStoreError(f"not hoprag's run store: {verdict.reason}; nothing in it was changed",
                             source=where, fix=STORE_FIX)


def _mark(conn: sa.Connection, facts: StoreFacts) -> None:
    """Write the marks where they are missing or out of date (an up-to-date store is not written)."""
    wanted = {"application": APPLICATION_NAME, "schema_version": str(t.SCHEMA_VERSION)}
    if dict(facts.marker or {}) != wanted:
        conn.execute(t.meta.delete().where(t.meta.c.key.in_(list(wanted))))
        conn.execute(t.meta.insert(), [{"key": k, "value": v} for k, v in wanted.items()])
    if conn.dialect.name == "sqlite" and facts.application_id != APPLICATION_ID:
        conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")
