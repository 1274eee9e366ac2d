"""What the service keeps in the run store: redacted traces, feedback events and their metrics.

Every trace is redacted (PII in question, evidence and answer replaced by typed placeholders, ids and
offsets kept, credentials masked) before it is queued, through the one boundary
(:mod:`hoprag.security.boundary`), and so is every feedback comment. Feedback (thumbs, issue tags, shown citations, clicks) is stored
under the feedback run and, after every write, the ``feedback`` stage's metrics of that run are
recorded again, so ``hoprag gate check --run RUN`` gates on what users said (the latest values win).
Writes go through one lock: SQLite takes one writer at a time.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

from hoprag.records import Trace
from hoprag.security.boundary import shown, text_for_storage, trace_for_storage
from hoprag.store import RunStore
from hoprag.store.records import FeedbackEvent

__all__ = ["ServiceStore", "new_trace_id"]


def new_trace_id() -> str:
    return "t-" + uuid.uuid4().hex[:20]


def _event_id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


class ServiceStore:
    """The run store as the service uses it: ``trace_run`` holds answers, ``feedback_run`` feedback."""

    def __init__(self, store: RunStore, *, trace_run: str, feedback_run: str, artifact_id: str | None = None,
                 window: str = "1d") -> None:
        import hoprag.gates.checks.feedback  # noqa: F401 - registers the feedback stage's hook

        self.store = store
        self.trace_run = trace_run
        self.feedback_run = feedback_run
        self.window = window
        self._lock = threading.Lock()
        # answers are written in batches by one thread: one transaction for many traces
        self._pending: dict[str, tuple[Trace, FeedbackEvent]] = {}
        self._pending_lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="hoprag-store-writer", daemon=True)
        self._writer.start()
        store.create_run(trace_run, kind="serve", exist_ok=True, artifact_id=artifact_id)
        if feedback_run != trace_run:
            store.create_run(feedback_run, kind="feedback", exist_ok=True)
        for run_id in dict.fromkeys((trace_run, feedback_run)):  # a restart on its runs writes them again
            store.resume_run(run_id)

    # --- traces --------------------------------------------------------------------------------

    def add_trace(self, trace: Trace, citations_shown: int) -> None:
        """Queue the redacted trace and a ``view`` event (the answer was shown with its citations)."""
        safe = trace_for_storage(trace, "service-traces")
        view = FeedbackEvent(event_id=_event_id("view", trace.case_id), run_id=self.feedback_run, kind="view",
                             ts=datetime.now(timezone.utc), case_id=trace.case_id, count=citations_shown)
        with self._pending_lock:
            self._pending[trace.case_id] = (safe, view)
        self._wake.set()

    def flush(self) -> int:
        """Write every queued answer now (one transaction per table); returns how many."""
        # one flush at a time (the writer thread's and a request's): two would both write the batch they
        # read; answers stay in _pending until written, so a lookup in between still finds them
        with self._lock:
            with self._pending_lock:
                batch = list(self._pending.values())
            if not batch:
                return 0
            # metrics are recomputed on the next feedback or click, not per answer
            self.store.add_traces(self.trace_run, [t for t, _ in batch])
            self.store.add_feedback([v for _, v in batch])
            with self._pending_lock:
                for t, _ in batch:
                    self._pending.pop(t.case_id, None)
        return len(batch)

    def _write_loop(self) -> None:
        import logging

        while not self._closed:
            self._wake.wait(timeout=1.0)
            self._wake.clear()
            time.sleep(0.05)  # let a burst of answers gather into one batch
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - the writer must outlive one failed batch
                logging.getLogger("hoprag.service").error(
                    "storing answers failed: %s", shown((str(exc).splitlines() or [""])[0][:200], "service-log"))

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._writer.join(timeout=5)
        self.flush()
        self.finish_runs()

    def finish_runs(self) -> None:
        """Mark the answer and feedback runs complete: a service that stopped cleanly leaves complete runs
        (only runs this process created and left running are touched), so `hoprag runs rm --failed` never
        takes its answers or feedback."""
        for run_id in dict.fromkeys((self.trace_run, self.feedback_run)):
            self.store.finish_run(run_id)

    def pause_writing(self) -> None:
        """Write what is queued, stop the writer thread and drop the store's connections, leaving the runs
        running: what ``hoprag serve --workers N`` does before it forks (hoprag.service.processes)."""
        self._closed = True
        self._wake.set()
        self._writer.join(timeout=5)
        self.flush()
        self.store.close()

    def reopened(self) -> ServiceStore:
        """This store for a forked worker process: its own connections and writer thread, the same runs
        (created by the parent, which marks them complete when the server stops)."""
        return ServiceStore(RunStore(self.store.url), trace_run=self.trace_run, feedback_run=self.feedback_run,
                            window=self.window)

    def trace(self, trace_id: str) -> Trace | None:
        import sqlalchemy as sa

        with self._pending_lock:
            queued = self._pending.get(trace_id)
        if queued is not None:
            return queued[0]

        from hoprag.store import schema

        query = sa.select(schema.traces.c.data).where(schema.traces.c.case_id == trace_id).order_by(
            schema.traces.c.id.desc()).limit(1)
        with self.store.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else Trace.from_dict(row[0])

    # --- feedback ------------------------------------------------------------------------------

    def add_feedback(self, trace_id: str, caller: str, *, thumbs: str | None, tags: list[str],
                     comment: str | None) -> int:
        """Store one answer's thumbs, tags and comment (redacted); returns the events stored."""
        from hoprag.gates.checks.feedback import TAG_STAGES

        now = datetime.now(timezone.utc)
        stamp = now.isoformat()
        meta: dict[str, Any] = {"user": caller}
        if comment:
            meta["comment"] = text_for_storage(comment, "service-feedback")[:2000]
        events = []
        if thumbs:
            events.append(FeedbackEvent(event_id=_event_id("thumbs", trace_id, caller, stamp), run_id=self.feedback_run,
                                        kind="thumbs", ts=now, case_id=trace_id, value=thumbs, meta=meta))
        for tag in dict.fromkeys(tags):
            events.append(FeedbackEvent(event_id=_event_id("tag", trace_id, caller, tag, stamp), run_id=self.feedback_run,
                                        kind="tag", ts=now, case_id=trace_id, tag=tag, stage=TAG_STAGES[tag], meta=meta))
        self.flush()  # the answer's view event is stored before its feedback is counted
        with self._lock:
            added = self.store.add_feedback(events)
            self._record_metrics()
        return added

    def add_click(self, trace_id: str, caller: str, citation: str) -> None:
        now = datetime.now(timezone.utc)
        event = FeedbackEvent(event_id=_event_id("click", trace_id, caller, citation, now.isoformat()),
                              run_id=self.feedback_run, kind="click", ts=now, case_id=trace_id, chunk_id=citation,
                              meta={"user": caller})
        self.flush()
        with self._lock:
            self.store.add_feedback([event])
            self._record_metrics()

    def _record_metrics(self) -> None:
        from hoprag.gates.hooks import StageRunner
        from hoprag.gates.staged_run import StoreSink

        sink = StoreSink(self.store)
        StageRunner(self.feedback_run, sink, {"window": self.window}).observe("feedback", self.store.feedback(self.feedback_run))
        sink.flush()

    def feedback_summary(self, run_id: str | None = None, bucket: str = "hour") -> dict[str, Any]:
        """Series for the dashboard: thumbs-down rate and citation CTR per time bucket, tags by stage."""
        from hoprag.gates.checks.feedback import TAG_STAGES

        self.flush()
        events = self.store.feedback(run_id or self.feedback_run)
        size = timedelta(hours=1) if bucket == "hour" else timedelta(days=1)
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        buckets: dict[datetime, dict[str, int]] = {}
        for e in events:
            start = epoch + ((e.ts - epoch) // size) * size
            b = buckets.setdefault(start, {"up": 0, "down": 0, "shown": 0, "clicks": 0})
            if e.kind == "thumbs":
                b[e.value or "up"] = b.get(e.value or "up", 0) + 1
            elif e.kind == "view":
                b["shown"] += e.count
            elif e.kind == "click":
                b["clicks"] += 1
        series = []
        for start in sorted(buckets):
            b = buckets[start]
            thumbs = b["up"] + b["down"]
            series.append({"t": start.isoformat(), "thumbs": thumbs, "down": b["down"],
                           "thumbs_down_rate": b["down"] / thumbs if thumbs else None,
                           "citations_shown": b["shown"], "clicks": b["clicks"],
                           "citation_ctr": b["clicks"] / b["shown"] if b["shown"] else None})
        by_stage: Counter[str] = Counter(e.stage or "" for e in events if e.kind == "tag")
        by_tag: Counter[str] = Counter(e.tag or "" for e in events if e.kind == "tag")
        return {"run_id": run_id or self.feedback_run, "bucket": bucket, "series": series,
                "tags_by_stage": {stage: by_stage.get(stage, 0) for stage in dict.fromkeys(TAG_STAGES.values())},
                "tags": {tag: by_tag.get(tag, 0) for tag in TAG_STAGES},
                "events": len(events)}
