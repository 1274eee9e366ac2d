"""Spans gathered into the traces they describe, each handed on as soon as the file holds no more of it.

A trace is the spans of one trace id; traces with no common root that share a ``session.id`` are one
trace (a framework without a parent span per question leaves each call its own trace id). Holding
every span of a file until its end costs memory in proportion to the file (100,000 spans: hundreds
of megabytes), so :func:`plan_groups` reads the file once for ids alone and notes where each trace's
last span lies; :func:`complete_groups` then reads it again and hands on each trace at its last span,
after which its spans are freed. Only the trace being read (and a session spread over the file) are
held. A file that cannot be read twice (a pipe) is gathered whole, as without a plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hoprag.otlp_spans import OtelSpan

__all__ = ["GroupPlan", "SpanGroup", "complete_groups", "plan_groups"]


@dataclass(frozen=True)
class GroupPlan:
    """Where each trace ends: ``key_of`` maps a trace id merged into an earlier one to that one's id
    (the first trace id of its session; others are their own key), ``last_span`` a key to the position
    in the file of the trace's last span."""

    key_of: dict[str, str]
    last_span: dict[str, int]


@dataclass(frozen=True)
class SpanGroup:
    """One trace's spans in start order; ``first`` is its place among the file's traces (by first span)."""

    key: str
    first: int
    spans: list[OtelSpan]

    @property
    def start_ns(self) -> int:
        return self.spans[0].start_ns


def _session(span: OtelSpan) -> str:
    value = span.attributes.get("session.id")
    return str(value) if value else ""


def _merge_keys(order: list[str], session_of: dict[str, str]) -> dict[str, str]:
    """Trace id → key: a trace sharing a session with an earlier trace takes that trace's id."""
    first_of: dict[str, str] = {}
    key_of: dict[str, str] = {}
    for trace_id in order:
        session = session_of.get(trace_id, "")
        key_of[trace_id] = first_of.setdefault(session, trace_id) if session else trace_id
    return key_of


def plan_groups(spans: Iterable[OtelSpan]) -> GroupPlan:
    """The plan of a file's spans (a first reading: only ids, sessions and positions are kept)."""
    session_of: dict[str, str] = {}
    last_span: dict[str, int] = {}  # by trace id (in order of first span), then by key
    for position, span in enumerate(spans):
        last_span[span.trace_id] = position
        if span.trace_id not in session_of and _session(span):
            session_of[span.trace_id] = _session(span)
    # only merged traces are kept in key_of: the plan stays small for the usual one trace per question
    key_of = {tid: key for tid, key in _merge_keys(list(last_span), session_of).items() if tid != key}
    for trace_id, key in key_of.items():
        last_span[key] = max(last_span[key], last_span.pop(trace_id))
    return GroupPlan(key_of=key_of, last_span=last_span)


def complete_groups(spans: Iterable[OtelSpan], plan: GroupPlan | None = None) -> Iterator[SpanGroup]:
    """Each trace of ``spans`` as soon as its last span is read (``plan`` from :func:`plan_groups` over
    the same spans); without a plan, every trace at the end, in order of first span."""
    if plan is None:
        yield from _whole(spans)
        return
    open_groups: dict[str, tuple[int, list[OtelSpan]]] = {}
    seen = 0
    for position, span in enumerate(spans):
        key = plan.key_of.get(span.trace_id, span.trace_id)
        if key not in open_groups:
            open_groups[key] = (seen, [])
            seen += 1
        open_groups[key][1].append(span)
        if plan.last_span.get(key) == position:
            first, group = open_groups.pop(key)
            group.sort(key=lambda s: s.start_ns)
            yield SpanGroup(key, first, group)
    # spans the plan did not see (the file changed between readings) still make their traces
    for key, (first, group) in open_groups.items():
        group.sort(key=lambda s: s.start_ns)
        yield SpanGroup(key, first, group)


def _whole(spans: Iterable[OtelSpan]) -> Iterator[SpanGroup]:
    groups: dict[str, list[OtelSpan]] = {}
    for span in spans:
        groups.setdefault(span.trace_id, []).append(span)
    session_of = {tid: next((_session(s) for s in group if _session(s)), "") for tid, group in groups.items()}
    merged: dict[str, list[OtelSpan]] = {}
    for trace_id, key in _merge_keys(list(groups), session_of).items():
        merged.setdefault(key, []).extend(groups.pop(trace_id))
    for first, (key, group) in enumerate(merged.items()):
        group.sort(key=lambda s: s.start_ns)
        yield SpanGroup(key, first, group)
