"""Spans gathered into the traces they describe, each handed on as soon as the file holds no more of it.

A trace is the spans of one trace id; traces that share a ``session.id``, and single calls (a trace whose
root is a retrieval, LLM, reranker or embedding span) that name the same case, are one trace: a pipeline
without a parent span per question leaves each call its own trace id. A case is named by a
``hoprag.case_id`` attribute, a ``case_id`` in the OpenInference ``metadata`` (``using_metadata``) or a
``case:ID`` tag (``using_tags``).

Holding every span of a file until its end costs memory in proportion to the file (100,000 spans:
hundreds of megabytes), so :func:`plan_groups` reads the file once for ids alone and notes where each trace's
last span lies; :func:`complete_groups` then reads it again and hands on each trace at its last span,
after which its spans are freed. Only the trace being read (and a session spread over the file) are
held. A file that cannot be read twice (a pipe) is gathered whole, as without a plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hoprag.finite_numbers import loads  # span attributes are user input: the one number rule
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


_TAG_PREFIXES = ("hoprag.case_id:", "case_id:", "case:")
_CALL_KINDS = frozenset({"RETRIEVER", "LLM", "RERANKER", "EMBEDDING"})


def _case(span: OtelSpan) -> str:
    """The case a span names (attribute, metadata or tag), or ``""``."""
    attrs = span.attributes
    value = attrs.get("hoprag.case_id")
    if value not in (None, ""):
        return str(value)
    meta = attrs.get("metadata")
    if isinstance(meta, str) and '"case_id"' in meta:  # OpenInference writes the metadata as JSON
        try:
            meta = loads(meta)
        except ValueError:
            meta = None
    if isinstance(meta, dict) and meta.get("hoprag.case_id", meta.get("case_id")) not in (None, ""):
        return str(meta.get("hoprag.case_id", meta.get("case_id")))
    tags = attrs.get("tag.tags")
    for tag in tags if isinstance(tags, list) else ():
        for prefix in _TAG_PREFIXES:
            if str(tag).startswith(prefix) and len(str(tag)) > len(prefix):
                return str(tag)[len(prefix):]
    return ""


class _Ties:
    """What ties each trace to others of its question, gathered span by span: the case it names, its
    session, and whether its root is a single call (a retrieval, an LLM, a reranker or an embedding)."""

    def __init__(self) -> None:
        self.case: dict[str, str] = {}
        self.session: dict[str, str] = {}
        self.call_root: set[str] = set()

    def add(self, span: OtelSpan) -> None:
        trace_id = span.trace_id
        if trace_id not in self.case:
            case = _case(span)
            if case:
                self.case[trace_id] = case
        if trace_id not in self.session and span.attributes.get("session.id"):
            self.session[trace_id] = str(span.attributes["session.id"])
        if not span.parent_id and span.kind in _CALL_KINDS:
            self.call_root.add(trace_id)

    def key(self, trace_id: str) -> str:
        """``case:ID`` for a single call naming its case (a question's calls made without a parent span),
        else ``session:ID``, else ``""``: a trace with a root of its own keeps its own id, even when
        another trace names the same case (a question asked twice is two traces)."""
        if trace_id in self.call_root and trace_id in self.case:
            return f"case:{self.case[trace_id]}"
        return f"session:{self.session[trace_id]}" if trace_id in self.session else ""


def _merge_keys(order: list[str], session_of: dict[str, str]) -> dict[str, str]:
    """Trace id → key: a trace tied (by case or session) to an earlier trace takes that trace's id."""
    first_of: dict[str, str] = {}
    key_of: dict[str, str] = {}
    for trace_id in order:
        session = session_of.get(trace_id, "")
        key_of[trace_id] = first_of.setdefault(session, trace_id) if session else trace_id
    return key_of


def plan_groups(spans: Iterable[OtelSpan]) -> GroupPlan:
    """The plan of a file's spans (a first reading: only ids, sessions and positions are kept)."""
    ties = _Ties()
    last_span: dict[str, int] = {}  # by trace id (in order of first span), then by key
    for position, span in enumerate(spans):
        last_span[span.trace_id] = position
        ties.add(span)
    session_of = {tid: ties.key(tid) for tid in last_span}
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
    ties = _Ties()
    for group in groups.values():
        for span in group:
            ties.add(span)
    session_of = {tid: ties.key(tid) for tid in groups}
    merged: dict[str, list[OtelSpan]] = {}
    for trace_id, key in _merge_keys(list(groups), session_of).items():
        merged.setdefault(key, []).extend(groups.pop(trace_id))
    for first, (key, group) in enumerate(merged.items()):
        group.sort(key=lambda s: s.start_ns)
        yield SpanGroup(key, first, group)
