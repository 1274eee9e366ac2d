"""The selected evidence of an imported trace (hoprag.otel_evidence): the documents the answering LLM
call's prompt holds, in its order; else a reranker's output; else every retrieved document.

Spans are made by hand over the enterprise corpus' own passages, as OpenInference, LlamaIndex,
Haystack and the OTel GenAI conventions record a prompt; expectations are read off the prompts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.io.traces import read_traces
from hoprag.otel_evidence import prompt_order
from hoprag.otel_import import import_otel_traces, spans_to_traces
from hoprag.otlp_spans import OtelSpan

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[2] / "data" / "enterprise"
TEXT = {d["id"]: d["text"] for d in map(json.loads, (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines())}
# ent-001's chains need contract-14, catalog-3 and policy-8-v2
RETRIEVED = ["contract-14", "ticket-2290", "catalog-3"]


def _span(number: int, attrs: dict, parent: int | None = 1, start: int = 0) -> OtelSpan:
    return OtelSpan(trace_id="ab" * 16, span_id=f"{number:016x}", parent_id=f"{parent:016x}" if parent else "",
                    name=f"span {number}", start_ns=1_000 + 10 * start, end_ns=1_005 + 10 * start, attributes=attrs)


def _retriever(number: int, docs: list[str], content: bool = True) -> OtelSpan:
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "Project Orion plan retention"}
    for n, doc in enumerate(docs):
        attrs[f"retrieval.documents.{n}.document.id"] = doc
        attrs[f"retrieval.documents.{n}.document.score"] = 1.0 - n / 10
        if content:
            attrs[f"retrieval.documents.{n}.document.content"] = TEXT[doc]
    return _span(number, attrs, start=number)


def _reranker(number: int, docs: list[str]) -> OtelSpan:
    attrs = {"openinference.span.kind": "RERANKER"}
    for n, doc in enumerate(docs):
        attrs |= {f"reranker.output_documents.{n}.document.id": doc,
                  f"reranker.output_documents.{n}.document.score": 5.0 - n}
    return _span(number, attrs, start=number)


def _llm(number: int, attrs: dict) -> OtelSpan:
    return _span(number, {"openinference.span.kind": "LLM", "output.value": "7 years", **attrs}, start=number)


def _context(*docs: str) -> str:
    """A LlamaIndex-style prompt: the passages, each under its metadata, between rules."""
    blocks = "\n\n".join(f"doc_id: {doc}\n\n{TEXT[doc]}" for doc in docs)
    rule = "\n---------------------\n"
    return f"Context information is below.{rule}{blocks}{rule}Query: ...\nAnswer: "


def _trace(*calls: OtelSpan):
    root = _span(1, {"openinference.span.kind": "CHAIN", "input.value": "Orion retention", "hoprag.case_id": "ent-001"},
                 parent=None)
    (trace,), skipped = spans_to_traces([root, *calls])
    assert skipped == 0
    return trace


def test_the_prompt_holds_two_of_three_retrieved_documents_in_reversed_order() -> None:
    prompt = _context("catalog-3", "contract-14")
    trace = _trace(_retriever(2, RETRIEVED), _llm(3, {"llm.input_messages.0.message.role": "user",
                                                      "llm.input_messages.0.message.content": prompt}))
    assert [e.hit.doc_id for e in trace.evidence] == ["catalog-3", "contract-14"]
    assert [(e.hop, e.hit.rank) for e in trace.evidence] == [(1, 3), (1, 1)]  # each keeps the hit that found it
    assert [h.doc_id for h in trace.steps[0].hits] == RETRIEVED  # the retrieval call keeps what it found
    assert trace.plan["evidence_from"] == "prompt"


def test_the_prompt_wins_over_a_reranker_and_the_reranker_over_retrieval_order() -> None:
    retrieve, rerank = _retriever(2, RETRIEVED), _reranker(3, ["ticket-2290", "contract-14"])
    with_prompt = _trace(retrieve, rerank, _llm(4, {"llm.prompts": [_context("contract-14", "catalog-3")]}))
    assert ([e.hit.doc_id for e in with_prompt.evidence], with_prompt.plan["evidence_from"]) == (
        ["contract-14", "catalog-3"], "prompt")
    without_text = _trace(retrieve, rerank, _llm(4, {"llm.prompts": ["Answer from what you know: Orion?"]}))
    assert ([e.hit.doc_id for e in without_text.evidence], without_text.plan["evidence_from"]) == (
        ["ticket-2290", "contract-14"], "reranker")


def test_no_recorded_text_falls_back_to_every_retrieved_document() -> None:
    # the GenAI convention records ids and scores only: nothing to find in the prompt
    trace = _trace(_retriever(2, RETRIEVED, content=False),
                   _llm(3, {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                       {"type": "text", "content": _context("catalog-3")}]}])}))
    assert ([e.hit.doc_id for e in trace.evidence], trace.plan["evidence_from"]) == (RETRIEVED, "retrieved")


def test_the_answering_call_is_the_last_llm_call_holding_documents() -> None:
    planner = _llm(3, {"input.value": _context("ticket-2290")})
    answerer = _llm(5, {"input.value": json.dumps({"prompt": _context("contract-14", "catalog-3")}),
                        "input.mime_type": "application/json"})  # JSON: the newlines are escaped in the attribute
    judge = _llm(6, {"llm.input_messages.0.message.content": "Is '7 years' a full sentence?"})
    trace = _trace(_retriever(2, RETRIEVED), planner, _retriever(4, ["policy-8-v2"]), answerer, judge)
    assert [e.hit.doc_id for e in trace.evidence] == ["contract-14", "catalog-3"]


def test_template_variables_and_whitespace_changes_are_read() -> None:
    reflowed = " ".join(TEXT["policy-8-v2"].split()).replace(". ", ".\n    ")
    variables = json.dumps({"context_str": f"{reflowed}\n\n{TEXT['contract-14']}", "query_str": "Orion?"})
    trace = _trace(_retriever(2, ["contract-14", "policy-8-v2", "catalog-3"]),
                   _llm(3, {"llm.prompt_template.variables": variables}))
    assert [e.hit.doc_id for e in trace.evidence] == ["policy-8-v2", "contract-14"]


def test_a_passage_inside_a_longer_one_is_not_taken_as_given() -> None:
    long = "Plan KP-214 (Tern Pro) is sold in the Skyline Telemetry family, with 400 units for Orion."
    short = "Plan KP-214 (Tern Pro) is sold"
    assert prompt_order(f"Context: {long}", [short, long]) == [1]
    assert prompt_order(f"Context: {long}\n{short}", [short, long]) == [1, 0]
    assert prompt_order("a KP-214 b", ["KP-214"]) == []  # too short to tell a passage from a word


def test_the_route_changes_the_score_and_the_cli_counts_the_routes(tmp_path, capsys) -> None:
    case = next(c for c in load_cases(DATA / "cases.jsonl") if c.case_id == "ent-001")
    retrieved = ["ticket-2290", "contract-14", "faq-2", "catalog-3", "policy-8-v2"]
    trace = _trace(_retriever(2, retrieved), _llm(3, {"llm.input_messages.0.message.content": _context(
        "policy-8-v2", "catalog-3", "contract-14")}))
    # retrieval order holds the chain only at five; the prompt gave the model the chain first
    assert evaluate_chains([case], [trace], ks=(3,)).cases[0]["chain_coverage@3"] == 1.0
    spans = tmp_path / "spans.jsonl"
    rows = []
    for span in (_span(1, {"openinference.span.kind": "CHAIN", "hoprag.case_id": "ent-001"}, parent=None),
                 _retriever(2, retrieved), _llm(3, {"llm.input_messages.0.message.content": _context("catalog-3")})):
        attrs = [{"key": k, "value": {"arrayValue": {"values": [{"stringValue": x} for x in v]}} if isinstance(v, list)
                  else {"doubleValue": v} if isinstance(v, float) else {"stringValue": str(v)}}
                 for k, v in span.attributes.items()]
        rows.append({"traceId": span.trace_id, "spanId": span.span_id, "parentSpanId": span.parent_id,
                     "name": span.name, "startTimeUnixNano": str(span.start_ns), "endTimeUnixNano": str(span.end_ns),
                     "attributes": attrs})
    spans.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": rows}]}]}) + "\n", encoding="utf-8")
    main(["traces", "import", str(spans), "--out", str(tmp_path / "traces.jsonl")])
    printed = " ".join(capsys.readouterr().out.split())
    assert "selected evidence of 1 traces: 1 from the LLM prompt, 0 from a reranker, 0 all retrieved" in printed
    (imported,) = read_traces(tmp_path / "traces.jsonl")
    assert [e.hit.doc_id for e in imported.evidence] == ["catalog-3"]
    summary = import_otel_traces(spans, tmp_path / "again.jsonl")
    assert summary.evidence_from == {"prompt": 1}


def test_a_prompt_nested_deeper_than_the_json_parser_goes_is_read_as_text() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    trace = _trace(_retriever(2, RETRIEVED), _llm(3, {"input.value": deep, "output.value": deep,
                                                      "output.mime_type": "application/json"}))
    assert (trace.plan["evidence_from"], trace.answer.text) == ("retrieved", deep)
