from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoprag.errors import InputError
from hoprag.io.traces import append_trace, read_traces, write_traces
from hoprag.jsonl import read_records
from hoprag.records import Answer, Chunk, Citation, Claim, Document, Evidence, Hit, HopStep, Trace, Usage

pytestmark = pytest.mark.unit


def sample_trace() -> Trace:
    hit = Hit(chunk_id="neil-peart#0", doc_id="neil-peart", score=7.5, rank=1, retriever="bm25", start=0, end=120, title="Neil Peart")
    step = HopStep(
        step_id="s2",
        hop=2,
        sub_query="Rush",
        issued_query="Rush Rush Which band…",
        hits=(hit,),
        selected=("neil-peart#0",),
        depends_on=("s1",),
        filters={"acl": ["public"]},
        bridge={"value": "Rush", "kind": "entity", "from_chunk": "nobodys-hero#0"},
        latency_ms=1.5,
        cumulative_ms=3.0,
    )
    evidence = Evidence(hit=hit, text="Neil Peart was the drummer of Rush.", title="Neil Peart", hop=2, step_id="s2", sub_query="Rush")
    answer = Answer(
        text="Rush",
        claims=(Claim(text="Rush: Neil Peart was the drummer of Rush.", citations=(Citation("neil-peart#0", "neil-peart", 2),)),),
        confidence=0.5,
    )
    return Trace(
        run_id="r1",
        case_id="c1",
        question="Which band?",
        steps=(step,),
        evidence=(evidence,),
        answer=answer,
        stop_reason="sufficient",
        usage=Usage(prompt_tokens=10, completion_tokens=2, cost=0.001),
        config_hash="abc",
        engine="multihop",
        latency_ms=4.0,
    )


def test_trace_round_trips_through_jsonl(tmp_path):
    trace = sample_trace()
    path = tmp_path / "traces.jsonl"
    assert write_traces(path, [trace]) == 1
    append_trace(path, trace)
    back = read_records(path, Trace)
    assert back == [trace, trace] == read_traces(path)
    assert back[0].usage.tokens == 12 and back[0].evidence[0].doc_id == "neil-peart"


def test_foreign_trace_with_only_document_ids_loads(tmp_path):
    path = tmp_path / "foreign.jsonl"
    path.write_text(json.dumps({"case_id": "c9", "evidence": [{"hit": {"doc_id": "d1"}}], "answer": {"text": "x"}}) + "\n")
    (trace,) = read_records(path, Trace)
    assert trace.evidence[0].hit.chunk_id == "d1" and trace.evidence[0].hit.start is None


@given(
    st.text(min_size=1, max_size=20),
    st.text(max_size=200),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
def test_document_round_trip(doc_id, text, metadata):
    doc = Document(id=doc_id, title="T", text=text, metadata=metadata)
    assert Document.from_dict(json.loads(json.dumps(doc.to_dict()))) == doc


def test_chunk_round_trip():
    chunk = Chunk(id="d#1", doc_id="d", text="abc", start=10, end=13, index=1)
    assert Chunk.from_dict(chunk.to_dict()) == chunk


def test_missing_field_names_file_line_and_field(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n\n{"id": "b"}\n')
    with pytest.raises(InputError) as info:
        read_records(path, Document)
    message = str(info.value)
    assert "docs.jsonl:3" in message and "'text'" in message and "Fix:" in message


def test_malformed_line_and_non_object(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n[1, 2]\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: expected a JSON object"):
        read_records(path, Document)
    path.write_text('{"id": "a",\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: malformed JSON"):
        read_records(path, Document)


def test_a_partial_answer_says_why_the_search_stopped():
    """`render.trace_report` names the stop reason: a hop limit is not a budget."""
    from rich.console import Console

    from hoprag.records import Answer, Trace
    from hoprag.render import trace_report

    def headline(stop: str) -> str:
        trace = Trace(run_id="r", case_id="c", question="q?", steps=[], stop_reason=stop,
                      answer=Answer(text="Ada", claims=[], abstained=False, confidence=0.4, partial=True))
        console = Console(record=True, width=200)
        console.print(trace_report(trace)[0])
        return console.export_text()

    assert "the hop limit was reached" in headline("max_hops") and "budget" not in headline("max_hops")
    assert "the time budget ran out" in headline("time_budget")


def _shape(value):
    """``value`` with every container's type spelled out, so a tuple read back as a list would differ."""
    if isinstance(value, dict):
        return ("dict", [(_shape(k), _shape(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value)


def test_to_dict_is_dataclasses_asdict_value_for_value():
    import dataclasses
    from collections import namedtuple
    from pathlib import Path

    # the stored traces of an evaluation fixture, the sample trace, and one with redaction shifts,
    # plan, fallbacks, timings and a named tuple in a free-form field
    traces = read_traces(Path(__file__).parents[1] / "data" / "eval_traces.jsonl") + [sample_trace()]
    span = namedtuple("span", "start end")
    traces.append(dataclasses.replace(
        sample_trace(), plan={"sub_queries": [{"query": "Rush", "order": 1}], "span": span(0, 4)},
        fallbacks={"planner": 1}, timings={"retrieval_ms": 2.5}, redacted=True, redactions={"EMAIL": 1},
        redaction_shifts={"neil-peart#0": ((3, 7),)}, warnings=("slow",)))
    for trace in traces:
        assert _shape(trace.to_dict()) == _shape(dataclasses.asdict(trace))
        assert trace.answer.to_dict() == dataclasses.asdict(trace.answer)
