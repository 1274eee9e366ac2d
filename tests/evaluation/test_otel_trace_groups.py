"""Which spans make one trace (hoprag.otel_trace_groups): a question's calls made without a parent span
are one trace when each names the case (OpenInference using_metadata / using_tags, or an attribute);
traces with roots of their own stay apart even when they name the same case."""

from __future__ import annotations

import json

import pytest

from hoprag.otel_trace_groups import complete_groups, plan_groups
from hoprag.otlp_spans import OtelSpan

pytestmark = pytest.mark.unit


def _span(trace: int, span: int, kind: str, parent: int = 0, **attrs: object) -> OtelSpan:
    return OtelSpan(trace_id=f"{trace:032x}", span_id=f"{span:016x}", parent_id=f"{parent:016x}" if parent else "",
                    name=kind.lower(), start_ns=1_000 * span, end_ns=1_000 * span + 500,
                    attributes={"openinference.span.kind": kind, **attrs})


def _groups(spans: list[OtelSpan]) -> list[tuple[str, int]]:
    planned = [(g.key, len(g.spans)) for g in complete_groups(iter(spans), plan_groups(spans))]
    assert sorted(planned) == sorted((g.key, len(g.spans)) for g in complete_groups(spans))  # a pipe: the same
    return planned


def test_calls_naming_their_case_by_metadata_or_tag_are_one_trace_per_question() -> None:
    meta = {"metadata": json.dumps({"case_id": "q1"})}
    spans = [_span(1, 1, "RETRIEVER", **meta), _span(1, 2, "RETRIEVER", parent=1, **meta),  # retrieve → _retrieve
             _span(2, 3, "RETRIEVER", **meta),
             _span(3, 4, "RETRIEVER", **{"tag.tags": ["case:q2"]}), _span(4, 5, "LLM", **{"tag.tags": ["case:q2"]}),
             _span(5, 6, "LLM", **meta)]
    assert _groups(spans) == [(f"{3:032x}", 2), (f"{1:032x}", 4)]  # q2's two calls end first; q1's four spans


def test_traces_with_a_root_of_their_own_stay_apart_when_they_name_the_same_case() -> None:
    spans = []
    for trace in (1, 2):  # the same question asked twice, each under its own parent span
        root = 10 * trace
        spans += [_span(trace, root, "CHAIN", **{"hoprag.case_id": "q1"}),
                  _span(trace, root + 1, "RETRIEVER", parent=root), _span(trace, root + 2, "LLM", parent=root)]
    assert _groups(spans) == [(f"{1:032x}", 3), (f"{2:032x}", 3)]
