"""The span conventions besides OpenInference's LLM and retriever spans: OTel GenAI retrieval spans,
an OpenInference reranker, and the console exporter's output (not OTLP: refused, with the fix).

Spans are made by the OpenTelemetry SDK and written with its own OTLP encoder (one request per
trace per line); the expected scores are read off the enterprise cases' chains by hand.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from hoprag.datasets.schema import load_cases  # noqa: E402
from hoprag.errors import InputError  # noqa: E402
from hoprag.evaluation.chain_eval import evaluate_chains  # noqa: E402
from hoprag.io.traces import read_traces  # noqa: E402
from hoprag.otel_import import import_otel_traces  # noqa: E402

pytestmark = pytest.mark.integration

CASES = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"
# ent-001's chains need contract-14, catalog-3 and policy-8-v2; ent-003's ticket-2290 then policy-11.
ENT_001 = ("contract-14", "catalog-3", "policy-8-v2")


def _provider():
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "genai-rag"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _write(spans, path: Path) -> Path:
    """One OTLP JSON request (hex ids) per trace per line, as the Collector's file exporter writes."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    by_trace: dict[int, list] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    lines = []
    for group in by_trace.values():
        request = MessageToDict(encode_spans(group))
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
        lines.append(json.dumps(request) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _genai_retrieval(tracer, query: str, docs: list[tuple[str, float]], source: str = "kb-enterprise") -> None:
    with tracer.start_as_current_span(f"retrieval {source}", attributes={
            "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": query,
            "gen_ai.data_source.id": source,
            "gen_ai.retrieval.documents": json.dumps([{"id": d, "score": s} for d, s in docs])}):
        pass


def _genai_chat(tracer, answer: str) -> None:
    with tracer.start_as_current_span("chat gpt-4o-mini", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 210, "gen_ai.usage.output_tokens": 3,
            "gen_ai.output.messages": json.dumps([{"role": "assistant",
                                                   "parts": [{"type": "text", "content": answer}]}])}):
        pass


def _score(traces, *case_ids: str, ks=(2, 3, 5)):
    cases = [c for c in load_cases(CASES) if c.case_id in case_ids]
    return {r["case_id"]: r for r in evaluate_chains(cases, traces, ks=ks).cases}


def test_genai_retrieval_spans_import_and_score(tmp_path) -> None:
    provider, exporter = _provider()
    tracer = provider.get_tracer("genai-rag")
    with tracer.start_as_current_span("invoke_agent rag", attributes={
            "gen_ai.operation.name": "invoke_agent", "hoprag.case_id": "ent-001"}):
        _genai_retrieval(tracer, "plan acquired under Project Orion", [("contract-14", 0.9), ("ticket-2290", 0.4)])
        _genai_retrieval(tracer, "retention of the KP-214 family", [("catalog-3", 0.8), ("policy-8-v2", 0.7)])
        _genai_chat(tracer, "7 years")
    with tracer.start_as_current_span("invoke_agent rag", attributes={
            "gen_ai.operation.name": "invoke_agent", "hoprag.case_id": "ent-003"}):
        _genai_retrieval(tracer, "Wren critical response time", [("ticket-2290", 0.6), ("policy-11", 0.5)])
        _genai_chat(tracer, "4 hours")
    provider.shutdown()
    summary = import_otel_traces(_write(exporter.get_finished_spans(), tmp_path / "spans.jsonl"),
                                 tmp_path / "traces.jsonl")
    assert (summary.spans, summary.traces, summary.skipped) == (7, 2, 0)
    traces = {t.case_id: t for t in read_traces(tmp_path / "traces.jsonl")}
    first = traces["ent-001"]
    # no root input: the question is the first retrieval's query
    assert first.question == "plan acquired under Project Orion" and first.answer.text == "7 years"
    assert [(s.hop, s.issued_query) for s in first.steps] == [(1, "plan acquired under Project Orion"),
                                                              (2, "retention of the KP-214 family")]
    assert [(h.doc_id, h.rank, h.score, h.retriever) for h in first.steps[0].hits] == [
        ("contract-14", 1, 0.9, "kb-enterprise"), ("ticket-2290", 2, 0.4, "kb-enterprise")]
    assert [e.hit.doc_id for e in first.evidence] == ["contract-14", "ticket-2290", "catalog-3", "policy-8-v2"]
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (210, 3)
    rows = _score(list(traces.values()), "ent-001", "ent-003")
    # ent-001: policy-8-v2 is fourth, so only the first five hold the chain; ent-003: both in the first two
    assert (rows["ent-001"]["chain_coverage@3"], rows["ent-001"]["chain_coverage@5"]) == (0.0, 1.0)
    assert rows["ent-003"]["chain_coverage@2"] == 1.0
    assert (rows["ent-001"]["answer_em"], rows["ent-003"]["answer_em"]) == (1.0, 1.0)


def test_a_reranker_output_is_the_selected_evidence(tmp_path) -> None:
    provider, exporter = _provider()
    tracer = provider.get_tracer("rerank-rag")
    retrieved = ["ticket-2290", "contract-14", "policy-11", "catalog-3", "policy-8-v2"]
    reranked = ["contract-14", "catalog-3", "policy-8-v2"]
    with tracer.start_as_current_span("query", attributes={
            "openinference.span.kind": "CHAIN", "input.value": "Orion retention", "hoprag.case_id": "ent-001"}):
        attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "Orion retention"}
        for n, doc in enumerate(retrieved):
            attrs |= {f"retrieval.documents.{n}.document.id": doc, f"retrieval.documents.{n}.document.score": 1 - n / 10}
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass
        attrs = {"openinference.span.kind": "RERANKER", "reranker.query": "Orion retention", "reranker.top_k": 3}
        for n, doc in enumerate(retrieved):
            attrs[f"reranker.input_documents.{n}.document.id"] = doc
        for n, doc in enumerate(reranked):
            attrs |= {f"reranker.output_documents.{n}.document.id": doc,
                      f"reranker.output_documents.{n}.document.score": 5.0 - n}
        with tracer.start_as_current_span("rerank", attributes=attrs):
            pass
        with tracer.start_as_current_span("llm", attributes={"openinference.span.kind": "LLM",
                                                             "output.value": "7 years"}):
            pass
    provider.shutdown()
    import_otel_traces(_write(exporter.get_finished_spans(), tmp_path / "spans.jsonl"), tmp_path / "traces.jsonl")
    (trace,) = read_traces(tmp_path / "traces.jsonl")
    assert [h.doc_id for h in trace.steps[0].hits] == retrieved  # the retrieval call keeps what it found
    assert [(e.hit.doc_id, e.hit.rank, e.hit.score) for e in trace.evidence] == [
        ("contract-14", 1, 5.0), ("catalog-3", 2, 4.0), ("policy-8-v2", 3, 3.0)]
    # the reranker put the chain first: the first three hold it; retrieval order would hold it only at five
    assert _score([trace], "ent-001")["ent-001"]["chain_coverage@3"] == 1.0


def test_the_console_exporters_output_is_not_otlp(tmp_path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    for count in (1, 2):  # one span is one JSON object; two are two objects one after the other
        printed = io.StringIO()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=printed)))
        for n in range(count):
            with provider.get_tracer("x").start_as_current_span(f"retrieve {n}", attributes={
                    "openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.id": "policy-11"}):
                pass
        provider.shutdown()
        path = tmp_path / f"console-{count}.txt"
        path.write_text(printed.getvalue(), encoding="utf-8")
        with pytest.raises(InputError) as caught:
            import_otel_traces(path, tmp_path / "traces.jsonl")
        message = str(caught.value)
        assert "not OTLP JSON" in message and "malformed" not in message
        assert "console exporter" in message and "Fix:" in message and "OTLP exporter" in message
        assert not (tmp_path / "traces.jsonl").exists()
