"""Import a feedback JSONL file into the store and record each named run's feedback metrics."""

from __future__ import annotations

from pathlib import Path

from hoprag.gates.checks.feedback import read_feedback
from hoprag.gates.hooks import StageRunner
from hoprag.gates.staged_run import StoreSink
from hoprag.store import RunStore

__all__ = ["import_feedback"]


def import_feedback(store: RunStore, path: str | Path, *, run_id: str | None = None,
                    window: str = "1d") -> dict[str, tuple[int, int]]:
    """``{run_id: (new events stored, feedback metrics recorded)}``; unknown runs are created (kind feedback)."""
    events = read_feedback(path, run_id=run_id)
    summary: dict[str, tuple[int, int]] = {}
    for rid in dict.fromkeys(e.run_id for e in events):
        # a run this import creates is complete once its events and metrics are in (failed if not);
        # an existing run keeps its status
        with store.track_run(rid):
            store.create_run(rid, kind="feedback", exist_ok=True)
            added = store.add_feedback([e for e in events if e.run_id == rid])
            sink = StoreSink(store)
            runner = StageRunner(rid, sink, {"window": window})
            runner.observe("feedback", store.feedback(rid))
            summary[rid] = (added, sink.flush())
    return summary
