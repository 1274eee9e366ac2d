"""One interface for runs, traces, metrics, feedback and baselines, on SQLite or PostgreSQL.

``RunStore(url)`` connects at once and creates missing tables (safe when several processes open
a new store at once) through :func:`hoprag.store.ownership.open_store_engine`, which refuses a
database that is not hoprag's and changes nothing in it; a store that cannot be reached raises :class:`StoreError` naming the
(password-redacted) URL and the fix, and so does any database failure later, a lost connection
included (see :mod:`hoprag.store.connection`). Each write is one transaction. Everything goes
through SQLAlchemy Core, so the two back-ends run the same statements and the same tests. Runs
(create, status, list, remove) are in :mod:`hoprag.store.runs`.
"""

from __future__ import annotations

import io
import json
import math
import sqlite3
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

from hoprag.metrics import Metric
from hoprag.records import Trace
from hoprag.security.boundary import trace_for_storage, value_for_storage
from hoprag.store import schema as t
from hoprag.store.connection import write_connection
from hoprag.store.errors import StoreError, first_line
from hoprag.store.ownership import open_store_engine
from hoprag.store.records import BaselineInfo, FeedbackEvent
from hoprag.store.runs import RunRegistry
from hoprag.store.url import redact, resolve_store_url
from hoprag.store.values import json_safe as _json_safe
from hoprag.store.values import utc as _utc

__all__ = ["RunStore", "StoreError"]


class RunStore(RunRegistry):
    """The run store at ``url`` (see :func:`hoprag.store.url.resolve_store_url`)."""

    def __init__(self, url: str | Path | None = None) -> None:
        self.url = resolve_store_url(url)
        self.display_url = redact(self.url)
        try:
            self.engine = open_store_engine(self.url, self.display_url)
        except (StoreError, sa.exc.SQLAlchemyError, sqlite3.Error, OSError, ImportError, ValueError) as exc:
            reason = exc.reason if isinstance(exc, StoreError) and exc.reason else first_line(exc)
            raise StoreError(
                f"cannot open the run store {self.display_url}: {reason}. Fix: check the URL given with "
                "--store or HOPRAG_STORE (postgresql://user:pass@host/db, or a SQLite file path), "
                "that the server is running and reachable, and for PostgreSQL that "
                "'hoprag[postgres]' is installed", reason=reason
            ) from None
        self.dialect = self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- metrics -------------------------------------------------------------------------------

    def add_metrics(self, metrics: Iterable[Metric]) -> int:
        """Append metric rows (NaN is kept: stored as NULL, read back as NaN)."""
        rows = [{"run_id": m.run_id, "stage": m.stage, "metric": m.name,
                 "value": None if math.isnan(m.value) else m.value, "meta": _json_safe(m.meta), "ts": m.ts}
                for m in metrics]
        if rows:
            with self.engine.begin() as conn:
                conn.execute(t.metrics.insert(), rows)
        return len(rows)

    def metrics(self, run_id: str, stage: str | None = None) -> list[Metric]:
        """Every metric row of ``run_id`` (optionally one stage), in insertion order."""
        query = sa.select(t.metrics).where(t.metrics.c.run_id == run_id)
        if stage is not None:
            query = query.where(t.metrics.c.stage == stage)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(t.metrics.c.id)).mappings().all()
        return [Metric(run_id=r["run_id"], stage=r["stage"], name=r["metric"],
                       value=math.nan if r["value"] is None else float(r["value"]),
                       meta=dict(r["meta"] or {}), ts=_utc(r["ts"])) for r in rows]

    # --- traces --------------------------------------------------------------------------------

    def add_traces(self, run_id: str, traces: Iterable[Trace], *, redact: bool = True) -> int:
        """Store traces; PII in their text is replaced by placeholders unless ``redact=False``, credentials always."""
        rows = [{"run_id": run_id, "case_id": tr.case_id, "engine": tr.engine,
                 "data": _json_safe(trace_for_storage(tr, "store-traces", redact=redact).to_dict())} for tr in traces]
        if rows:
            with self.engine.begin() as conn:
                conn.execute(t.traces.insert(), rows)
        return len(rows)

    def traces(self, run_id: str, engine: str | None = None) -> list[Trace]:
        query = sa.select(t.traces.c.data).where(t.traces.c.run_id == run_id)
        if engine is not None:
            query = query.where(t.traces.c.engine == engine)
        with self.engine.connect() as conn:
            return [Trace.from_dict(row[0]) for row in conn.execute(query.order_by(t.traces.c.id))]

    # --- feedback ------------------------------------------------------------------------------

    def add_feedback(self, events: Iterable[FeedbackEvent]) -> int:
        """Store events; an ``event_id`` already stored is skipped (re-importing a file is safe).

        Free text in ``meta`` (a comment, a user name) is stored with PII and credentials replaced.
        """
        events = list(events)
        if not events:
            return 0
        ids = [e.event_id for e in events]
        with write_connection(self.engine) as conn:  # reads, then writes: take the write lock first
            seen = set()
            for start in range(0, len(ids), 500):
                query = sa.select(t.feedback.c.event_id).where(t.feedback.c.event_id.in_(ids[start:start + 500]))
                seen.update(conn.execute(query).scalars())
            rows = []
            for e in events:
                if e.event_id in seen:
                    continue
                seen.add(e.event_id)
                rows.append({"event_id": e.event_id, "run_id": e.run_id, "case_id": e.case_id, "kind": e.kind,
                             "value": e.value, "tag": e.tag, "stage": e.stage, "chunk_id": e.chunk_id,
                             "count": e.count, "ts": e.ts,
                             "meta": _json_safe(value_for_storage(e.meta, "store-feedback"))})
            if rows:
                conn.execute(t.feedback.insert(), rows)
        return len(rows)

    def feedback(self, run_id: str | None = None) -> list[FeedbackEvent]:
        query = sa.select(t.feedback)
        if run_id is not None:
            query = query.where(t.feedback.c.run_id == run_id)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(t.feedback.c.ts, t.feedback.c.id)).mappings().all()
        return [FeedbackEvent(event_id=r["event_id"], run_id=r["run_id"], kind=r["kind"], ts=_utc(r["ts"]),
                              case_id=r["case_id"], value=r["value"], tag=r["tag"], stage=r["stage"],
                              chunk_id=r["chunk_id"], count=int(r["count"]), meta=dict(r["meta"] or {}))
                for r in rows]

    # --- artifacts -----------------------------------------------------------------------------

    def _put(self, run_id: str, name: str, kind: str, data: bytes) -> None:
        with self.engine.begin() as conn:
            conn.execute(t.artifacts.delete().where((t.artifacts.c.run_id == run_id) & (t.artifacts.c.name == name)))
            conn.execute(t.artifacts.insert(), {"run_id": run_id, "name": name, "kind": kind, "data": data})

    def _get(self, run_id: str, name: str) -> tuple[str, bytes] | None:
        query = sa.select(t.artifacts.c.kind, t.artifacts.c.data).where(
            (t.artifacts.c.run_id == run_id) & (t.artifacts.c.name == name))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else (row[0], bytes(row[1]))

    def put_array(self, run_id: str, name: str, array: np.ndarray) -> None:
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(array), allow_pickle=False)
        self._put(run_id, name, "ndarray", buffer.getvalue())

    def get_array(self, run_id: str, name: str) -> np.ndarray | None:
        found = self._get(run_id, name)
        return None if found is None else np.load(io.BytesIO(found[1]), allow_pickle=False)

    def put_json(self, run_id: str, name: str, value: Any) -> None:
        self._put(run_id, name, "json", json.dumps(_json_safe(value), sort_keys=True).encode("utf-8"))

    def get_json(self, run_id: str, name: str) -> Any:
        found = self._get(run_id, name)
        return None if found is None else json.loads(found[1].decode("utf-8"))

    # --- baselines -----------------------------------------------------------------------------

    def set_baseline(self, name: str, run_id: str) -> BaselineInfo:
        """Point baseline ``name`` at ``run_id`` (replacing an older one of that name)."""
        self.require_run(run_id)
        now = datetime.now(timezone.utc)
        with self.engine.begin() as conn:
            conn.execute(t.baselines.delete().where(t.baselines.c.name == name))
            conn.execute(t.baselines.insert(), {"name": name, "run_id": run_id, "created_at": now})
        return BaselineInfo(name=name, run_id=run_id, created_at=now)

    def get_baseline(self, name: str = "default") -> BaselineInfo | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(t.baselines).where(t.baselines.c.name == name)).mappings().first()
        return None if row is None else BaselineInfo(row["name"], row["run_id"], _utc(row["created_at"]))

    def list_baselines(self) -> list[BaselineInfo]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t.baselines).order_by(t.baselines.c.name)).mappings().all()
        return [BaselineInfo(r["name"], r["run_id"], _utc(r["created_at"])) for r in rows]
