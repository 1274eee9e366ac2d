"""Human / online feedback: thumbs, issue tags routed to the stage that owns them, citation clicks.

Events come as JSONL (``hoprag feedback import``) or through :func:`parse_event`. One line::

    {"run_id": "...", "case_id": "q1", "type": "thumbs", "value": "up", "ts": "2024-05-01T10:00:00Z"}
    {"run_id": "...", "case_id": "q1", "type": "tag", "tag": "wrong_document"}
    {"run_id": "...", "case_id": "q1", "type": "view", "citations": 3}
    {"run_id": "...", "case_id": "q1", "type": "click", "chunk_id": "doc#0"}

``event_id`` is optional (a content hash is used, so importing a file twice stores it once).
Metrics: ``thumbs_up_rate`` overall, per window (``thumbs_up_rate/<window start>``) and for the
latest window with its change from the one before; ``tags.<stage>`` and ``tag.<tag>`` counts;
``citation_ctr`` = clicks / citations shown in views.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.finite_numbers import INT_MAX, finite_float
from hoprag.gates.hooks import hook, metric
from hoprag.metrics import STAGES, Metric
from hoprag.jsonl import read_jsonl_dicts
from hoprag.store.records import FeedbackEvent
from hoprag.validation_messages import quote

__all__ = ["EVENT_TYPES", "TAG_STAGES", "feedback_metrics", "parse_event", "read_feedback", "window_start"]

# The fixed taxonomy: every tag is owned by the stage whose gate should have caught it.
TAG_STAGES: dict[str, str] = {
    "wrong_document": "retrieve",
    "right_document_wrong_answer": "generate",
    "missing_citation": "generate",
    "stale_content": "ingest",
    "unnecessary_refusal": "generate",
}
EVENT_TYPES = ("thumbs", "tag", "view", "click")
_WINDOWS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def _parse_ts(value: Any, source: str, line: int | None) -> datetime:
    if value is None or value == "":
        return datetime.now(timezone.utc)
    try:
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(finite_float(value, "ts"), tz=timezone.utc)
        ts = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise InputError(f"timestamp {value!r} is not ISO 8601 or epoch seconds", source=source, line=line,
                         field="ts", fix="write e.g. \"2024-05-01T10:00:00Z\"") from None
    if ts.tzinfo is None:
        return ts.replace(tzinfo=timezone.utc)
    try:
        return ts.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is in year 0 in UTC, 9999-12-31T23:59:59-01:00 in 10000
        raise InputError(f"timestamp {value!r} lies outside the years 1-9999 once converted to UTC",
                         source=source, line=line, field="ts",
                         fix="write a timestamp between 0001-01-01 and 9999-12-31 in UTC, e.g. \"2024-05-01T10:00:00Z\"") from None


def parse_event(obj: dict[str, Any], *, source: str = "<api>", line: int | None = None,
                run_id: str | None = None) -> FeedbackEvent:
    """Validate one event dict (see the module docstring); errors name the file, line and field."""
    def bad(message: str, field: str, fix: str) -> InputError:
        return InputError(message, source=source, line=line, field=field, fix=fix)

    def text(*keys: str) -> str:
        """The first of ``keys`` the event gives, as text; a number is read as its digits, anything
        else (a mapping, a list) is refused: str() of it would become an id nobody can name."""
        for key in keys:
            value = obj.get(key)
            if value is None or value == "":
                continue
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                kind_of = {dict: "a mapping", list: "a list", bool: "true/false"}.get(type(value), type(value).__name__)
                raise bad(f"{key} must be text, got {kind_of} {quote(value, 80)}", key, f"give {key} as a string")
            return str(value)
        return ""

    kind = text("type", "kind")
    if kind not in EVENT_TYPES:
        raise bad(f"unknown feedback type {kind!r}", "type", f"use one of: {', '.join(EVENT_TYPES)}")
    rid = text("run_id") or run_id or ""
    if not rid.strip():
        raise bad("feedback event without run_id", "run_id", "add \"run_id\" or pass --run to the import")
    value = tag = stage = chunk_id = None
    count = 1
    if kind == "thumbs":
        value = text("value").lower()
        if value not in ("up", "down"):
            raise bad(f"thumbs value {obj.get('value')!r}", "value", "use \"up\" or \"down\"")
    elif kind == "tag":
        tag = text("tag")
        if tag not in TAG_STAGES:
            raise bad(f"unknown issue tag {tag!r}", "tag", f"use one of: {', '.join(TAG_STAGES)}")
        stage = TAG_STAGES[tag]
    elif kind == "view":
        raw = obj.get("citations", obj.get("count", 0))
        if not isinstance(raw, int) or isinstance(raw, bool) or not 0 <= raw <= INT_MAX:
            raise bad(f"citations shown must be a whole number from 0 to {INT_MAX:,}, got {raw!r}", "citations",
                      "give the number of citations the answer showed")
        count = raw
    else:
        chunk_id = text("chunk_id", "doc_id") or None
    ts = _parse_ts(obj.get("ts") or obj.get("timestamp"), source, line)
    event_id = text("event_id") or hashlib.sha256(
        json.dumps({**obj, "run_id": rid}, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:32]
    meta = {k: v for k, v in obj.items() if k in ("user", "session", "comment_length")}
    return FeedbackEvent(event_id=event_id, run_id=rid, kind=kind, ts=ts, case_id=text("case_id"),
                         value=value, tag=tag, stage=stage, chunk_id=chunk_id, count=count, meta=meta)


def read_feedback(path: str | Path, run_id: str | None = None) -> list[FeedbackEvent]:
    """Every event of a JSONL file; the first bad line raises naming file, line and field."""
    return [parse_event(obj, source=str(path), line=n, run_id=run_id)
            for n, obj in read_jsonl_dicts(path, "feedback file", allow_empty=False)]


def window_start(ts: datetime, window: str) -> datetime:
    """Start of the ``window`` (``1h``, ``1d``, ``7d``, ``1w``) holding ``ts``, aligned to the epoch."""
    try:
        size = int(window[:-1]) * _WINDOWS[window[-1]]
    except (KeyError, ValueError, IndexError):
        raise InputError(f"window {window!r}", field="window", fix="use e.g. 1h, 1d, 7d or 1w") from None
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    try:
        return epoch + ((ts - epoch) // size) * size
    except OverflowError:  # the window holding 0001-01-01 starts before the first day a datetime holds
        return datetime.min.replace(tzinfo=timezone.utc)


def feedback_metrics(events: Sequence[FeedbackEvent], ctx: dict[str, Any]) -> list[Metric]:
    window = str(ctx.get("window", "1d"))
    thumbs = [e for e in events if e.kind == "thumbs"]
    result = [metric(ctx, "events", len(events)), metric(ctx, "thumbs", len(thumbs))]
    if thumbs:
        result.append(metric(ctx, "thumbs_up_rate", sum(e.value == "up" for e in thumbs) / len(thumbs)))
        by_window: dict[datetime, list[FeedbackEvent]] = {}
        for e in thumbs:
            by_window.setdefault(window_start(e.ts, window), []).append(e)
        rates = []
        for start in sorted(by_window):
            group = by_window[start]
            rate = sum(e.value == "up" for e in group) / len(group)
            rates.append(rate)
            result.append(metric(ctx, f"thumbs_up_rate/{start.isoformat()}", rate, window=window, thumbs=len(group)))
        result.append(metric(ctx, "thumbs_up_rate_latest", rates[-1], window=window))
        if len(rates) > 1:
            result.append(metric(ctx, "thumbs_up_rate_change", rates[-1] - rates[-2], window=window))
    tags = Counter(e.tag for e in events if e.kind == "tag")
    by_stage = Counter(TAG_STAGES[t] for t in tags.elements())
    result += [metric(ctx, f"tags.{stage}", by_stage.get(stage, 0)) for stage in STAGES if stage in TAG_STAGES.values()]
    result += [metric(ctx, f"tag.{tag}", tags.get(tag, 0), stage=stage) for tag, stage in TAG_STAGES.items()]
    shown = sum(e.count for e in events if e.kind == "view")
    clicks = sum(1 for e in events if e.kind == "click")
    result.append(metric(ctx, "citation_clicks", clicks))
    if shown:
        result.append(metric(ctx, "citation_ctr", clicks / shown, citations_shown=shown))
    return result


@hook("feedback")
def feedback_check(out: Sequence[FeedbackEvent], ctx: dict[str, Any]) -> list[Metric]:
    return feedback_metrics(list(out), ctx)
