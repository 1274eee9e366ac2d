"""The same store contract on SQLite and on a real PostgreSQL (integration)."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from hoprag.metrics import Metric
from hoprag.jsonl import read_records
from hoprag.records import Trace
from hoprag.store import FeedbackEvent, RunStore, StoreError

DATA = Path(__file__).resolve().parents[1] / "data"


class StoreConformance:
    """Every store back-end must pass these; subclasses provide the ``store`` fixture."""

    def test_runs_round_trip(self, store: RunStore) -> None:
        store.create_run("r1", kind="gate-run", config={"engines": ["multihop"]}, meta={"note": "é"})
        run = store.require_run("r1")
        assert (run.kind, run.config, run.meta) == ("gate-run", {"engines": ["multihop"]}, {"note": "é"})
        assert run.created_at.tzinfo is not None
        store.set_artifact_id("r1", "abc123")
        assert store.get_run("r1").artifact_id == "abc123"
        assert store.get_run("nope") is None

    def test_duplicate_run_id_is_refused_unless_exist_ok(self, store: RunStore) -> None:
        store.create_run("r1")
        with pytest.raises(StoreError, match="already exists"):
            store.create_run("r1")
        assert store.create_run("r1", exist_ok=True).run_id == "r1"

    def test_unknown_run_lists_recent_ones(self, store: RunStore) -> None:
        store.create_run("known-run")
        with pytest.raises(StoreError, match="known-run"):
            store.require_run("missing-run")

    def test_metrics_one_table_in_order_with_nan_kept(self, store: RunStore) -> None:
        store.create_run("r1")
        ts = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
        rows = [Metric("r1", "chunk", "len_chars_p95", 934.75, {"floor": 32}, ts),
                Metric("r1", "generate", "faithfulness", math.nan, {"judged": 0}, ts),
                Metric("r1", "retrieve", "multihop/nDCG@10", 0.7333, {"alias": None, "x": math.inf}, ts)]
        assert store.add_metrics(rows) == 3
        back = store.metrics("r1")
        assert [(m.stage, m.name) for m in back] == [(m.stage, m.name) for m in rows]
        assert back[0].value == 934.75 and back[0].meta == {"floor": 32} and back[0].ts == ts
        assert math.isnan(back[1].value)
        assert back[2].meta == {"alias": None, "x": "inf"}
        assert [m.name for m in store.metrics("r1", stage="chunk")] == ["len_chars_p95"]
        assert store.metrics("other") == []

    def test_traces_round_trip_real_file(self, store: RunStore) -> None:
        traces = read_records(DATA / "eval_traces.jsonl", Trace)
        store.create_run("run-a")
        assert store.add_traces("run-a", traces, redact=False) == len(traces)
        assert store.traces("run-a") == traces  # raw round trip; redaction: test_store_redaction.py

    def test_feedback_dedup_on_event_id(self, store: RunStore) -> None:
        ts = datetime(2024, 5, 1, tzinfo=timezone.utc)
        events = [FeedbackEvent("e1", "r1", "thumbs", ts, case_id="q1", value="up"),
                  FeedbackEvent("e2", "r1", "tag", ts, tag="wrong_document", stage="retrieve"),
                  FeedbackEvent("e3", "r2", "view", ts, count=3)]
        assert store.add_feedback(events) == 3
        assert store.add_feedback(events[:1]) == 0
        assert [e.event_id for e in store.feedback("r1")] == ["e1", "e2"]
        assert store.feedback("r2")[0].count == 3
        assert len(store.feedback()) == 3

    def test_artifacts_arrays_and_json(self, store: RunStore) -> None:
        store.create_run("r1")
        arr = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
        store.put_array("r1", "embed.reference", arr)
        back = store.get_array("r1", "embed.reference")
        assert back.dtype == np.float32 and np.array_equal(back, arr)
        store.put_json("r1", "profile", {"text": {"string": 3}})
        assert store.get_json("r1", "profile") == {"text": {"string": 3}}
        assert store.get_array("r1", "missing") is None

    def test_baselines(self, store: RunStore) -> None:
        store.create_run("r1")
        store.create_run("r2")
        store.set_baseline("default", "r1")
        store.set_baseline("default", "r2")
        assert store.get_baseline("default").run_id == "r2"
        assert [b.name for b in store.list_baselines()] == ["default"]
        assert store.get_baseline("other") is None
        with pytest.raises(StoreError):
            store.set_baseline("x", "no-such-run")


@pytest.mark.unit
class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> RunStore:
        with RunStore(tmp_path / "nested" / "hoprag.db") as s:
            yield s


@pytest.mark.integration
class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def store(self, pg_url: str) -> RunStore:
        with RunStore(pg_url) as s:
            assert s.dialect == "postgresql"
            yield s

    def test_pgvector_is_available(self, store: RunStore) -> None:
        import sqlalchemy as sa

        with store.engine.begin() as conn:
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
            version = conn.execute(sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
        assert version.startswith("0.8")
