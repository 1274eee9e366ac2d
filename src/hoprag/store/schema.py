"""Tables of the run store (SQLAlchemy Core): the same DDL on SQLite and PostgreSQL.

``metrics`` is the one table every hook writes: ``(run_id, stage, metric, value, meta, ts)``.
``artifacts`` holds what a baseline must freeze besides numbers (the reference embedding batch, the
field-type profile of the corpus); ``baselines`` names a run whose metrics and artifacts are the
reference for later gates.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["SCHEMA_VERSION", "metadata", "runs", "traces", "metrics", "feedback", "artifacts", "baselines"]

SCHEMA_VERSION = 1
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
