"""Tables of the run store (SQLAlchemy Core): the same DDL on SQLite and PostgreSQL.

``runs`` holds one row per run with its ``status`` (``running`` → ``complete`` or ``failed``) and its
``writer`` (the process writing it, see :mod:`hoprag.store.writers`).
``metrics`` is the one table every hook writes: ``(run_id, stage, metric, value, meta, ts)``.
``artifacts`` holds what a baseline must freeze besides numbers (the reference embedding batch, the
field-type profile of the corpus); ``baselines`` names a run whose metrics and artifacts are the
reference for later gates.

``hoprag_meta`` marks the database as hoprag's (``application = hoprag``, ``schema_version``); on
SQLite the file's ``application_id`` marks it too (:mod:`hoprag.store.ownership` decides, before
anything is written, whether a database is ours to open).

:func:`ensure_schema` creates what is missing (the caller holds :func:`lock_schema`, so any number
of processes may open a new store at once), and adds the columns a store made by an older version lacks.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["META_TABLE", "SCHEMA_VERSION", "artifacts", "baselines", "ensure_schema", "feedback", "lock_schema",
           "meta", "metadata", "metrics", "runs", "traces"]

SCHEMA_VERSION = 3  # 2: runs.status, finished_at, writer, error; 3: the hoprag_meta marker
META_TABLE = "hoprag_meta"
# pg_advisory_xact_lock key serialising schema creation on PostgreSQL ("hoprag" in ASCII)
SCHEMA_LOCK_KEY = 0x686F70726167
metadata = sa.MetaData()

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", sa.String(200), primary_key=True),
    sa.Column("kind", sa.String(40), nullable=False, default="run"),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("artifact_id", sa.String(64), nullable=True),
    sa.Column("config", sa.JSON, nullable=False, default=dict),
    sa.Column("meta", sa.JSON, nullable=False, default=dict),
    # a run stored before statuses existed reads as "unknown": nobody recorded whether it finished
    sa.Column("status", sa.String(20), nullable=False, server_default="unknown"),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("writer", sa.String(300), nullable=True),
    sa.Column("error", sa.Text, nullable=True),
)

traces = sa.Table(
    "traces",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(200), nullable=False, index=True),
    sa.Column("case_id", sa.String(400), nullable=False),
    sa.Column("engine", sa.String(100), nullable=False, default=""),
    sa.Column("data", sa.JSON, nullable=False),
)

metrics = sa.Table(
    "metrics",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(200), nullable=False, index=True),
    sa.Column("stage", sa.String(40), nullable=False),
    sa.Column("metric", sa.String(200), nullable=False),
    # NULL means NaN: SQLite cannot store NaN, so both back-ends read NULL back as NaN
    sa.Column("value", sa.Float(precision=53), nullable=True),
    sa.Column("meta", sa.JSON, nullable=False, default=dict),
    sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
)

feedback = sa.Table(
    "feedback",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("event_id", sa.String(200), nullable=False, unique=True),
    sa.Column("run_id", sa.String(200), nullable=False, index=True),
    sa.Column("case_id", sa.String(400), nullable=False, default=""),
    sa.Column("kind", sa.String(20), nullable=False),
    sa.Column("value", sa.String(40), nullable=True),
    sa.Column("tag", sa.String(60), nullable=True),
    sa.Column("stage", sa.String(40), nullable=True),
    sa.Column("chunk_id", sa.String(400), nullable=True),
    sa.Column("count", sa.Integer, nullable=False, default=1),
    sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
    sa.Column("meta", sa.JSON, nullable=False, default=dict),
)

artifacts = sa.Table(
    "artifacts",
    metadata,
    sa.Column("run_id", sa.String(200), primary_key=True),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("kind", sa.String(20), nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)

baselines = sa.Table(
    "baselines",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("run_id", sa.String(200), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

meta = sa.Table(
    META_TABLE,
    metadata,
    sa.Column("key", sa.String(100), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)


def lock_schema(conn: sa.Connection) -> None:
    """Serialise store openings: PostgreSQL takes an advisory lock for the transaction; on SQLite the
    caller's ``BEGIN IMMEDIATE`` already holds the write lock (``IF NOT EXISTS`` alone still races on
    PostgreSQL)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})


def ensure_schema(conn: sa.Connection) -> None:
    """Create missing tables and add missing columns, inside the caller's write transaction.

    The caller holds :func:`lock_schema` and has made sure the database is a hoprag store
    (:func:`hoprag.store.ownership.open_store_engine`): a second process opening a new store waits,
    then finds every table there.
    """
    metadata.create_all(conn)
    inspector = sa.inspect(conn)
    for table in metadata.sorted_tables:
        present = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            ddl = f"ALTER TABLE {table.name} ADD COLUMN {column.name} {column.type.compile(conn.dialect)}"
            if column.server_default is not None:
                ddl += f" NOT NULL DEFAULT '{column.server_default.arg}'"
            conn.execute(sa.text(ddl))
