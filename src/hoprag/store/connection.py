"""The store's SQLAlchemy engine: safe concurrent SQLite, reconnecting PostgreSQL, clear errors.

SQLite runs in WAL mode (readers never block the writer; switched on by :func:`enable_wal` once the
file is known to be a hoprag store, since the switch rewrites the file's header) with a busy
timeout, so a second writer waits for the first instead of failing; every transaction is an explicit ``BEGIN`` (``BEGIN
IMMEDIATE`` for writes, which takes the write lock up front and so cannot deadlock on an upgrade
from reading). PostgreSQL pings a pooled connection before use, so a store that was restarted is
reached again. Every database error, on either back-end, is turned into one :class:`StoreError`
by the engine's ``handle_error`` hook: no raw driver exception leaves the store.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from hoprag.store.errors import describe_failure

__all__ = ["SQLITE_BUSY_TIMEOUT_S", "WRITE", "enable_wal", "make_engine", "write_connection"]

SQLITE_BUSY_TIMEOUT_S = 30.0
WRITE = "hoprag_write"  # execution option: this transaction writes (SQLite: BEGIN IMMEDIATE)


def make_engine(url: str, display_url: str) -> sa.Engine:
    """An engine for ``url``; ``display_url`` (password hidden) is what error messages show."""
    sa_url = sa.engine.make_url(url)
    backend = sa_url.get_backend_name()
    if backend == "sqlite":
        if sa_url.database not in (None, "", ":memory:"):
            Path(sa_url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(sa_url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
        _sqlite_transactions(engine)
        timeout: float | None = SQLITE_BUSY_TIMEOUT_S
    else:
        connect_args: dict[str, Any] = {"connect_timeout": 5} if backend == "postgresql" else {}
        engine = sa.create_engine(sa_url, connect_args=connect_args, pool_pre_ping=True)
        timeout = None

    @sa.event.listens_for(engine, "handle_error")
    def _to_store_error(context: sa.engine.ExceptionContext) -> None:
        if context.is_pre_ping:  # a dead pooled connection found before use: the pool reconnects
            return
        raise describe_failure(context.original_exception, display_url=display_url,
                               statement=context.statement, is_disconnect=context.is_disconnect,
                               busy_timeout_s=timeout) from context.original_exception

    return engine


def _sqlite_transactions(engine: sa.Engine) -> None:
    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver's implicit BEGIN is replaced by ours below
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")


def enable_wal(engine: sa.Engine) -> None:
    """Put a SQLite store in WAL mode (kept in the file, so every later connection has it)."""
    if engine.dialect.name != "sqlite":
        return
    raw = engine.raw_connection()  # outside any transaction: the switch is refused inside one
    try:
        cursor = raw.cursor()
        try:
            _set_wal(cursor)
        finally:
            cursor.close()
    finally:
        raw.close()


def _set_wal(cursor: sqlite3.Cursor) -> None:
    """Switch to WAL; the switch needs a moment's exclusive lock, so a racing opener retries."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def write_connection(engine: sa.Engine) -> Iterator[sa.Connection]:
    """One write transaction: committed when the block ends, rolled back as a whole if it raises."""
    with engine.connect() as conn:
        conn.execution_options(**{WRITE: True})
        with conn.begin():
            yield conn
