"""hoprag's own spans round-trip: a run's traces recorded as spans (hoprag.telemetry), exported as
OTLP JSON, imported (hoprag traces import) and scored give the evaluation the traces themselves give.

The enterprise sample is answered by the multi-hop engine with the OpenTelemetry SDK recording
in memory; the spans are written with the SDK's own OTLP encoder, one request per line.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from hoprag import telemetry  # noqa: E402
from hoprag.datasets.schema import load_cases  # noqa: E402
from hoprag.evaluation.chain_eval import evaluate_chains  # noqa: E402
from hoprag.index.store import IndexConfig, build_index, load_index  # noqa: E402
from hoprag.ingest.loaders import load_corpora  # noqa: E402
from hoprag.io.traces import read_traces  # noqa: E402
from hoprag.otel_import import import_otel_traces  # noqa: E402
from hoprag.pipeline.factory import make_engine  # noqa: E402

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).parents[2] / "data" / "enterprise"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The enterprise cases answered with tracing on: their traces (as stored) and the OTLP JSON file."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from hoprag.security.boundary import trace_for_storage

    work = tmp_path_factory.mktemp("round-trip")
    build_index(load_corpora([ENTERPRISE / "corpus.jsonl"]), work / "index", IndexConfig())
    engine = make_engine("multihop", load_index(work / "index"))
    cases = load_cases(ENTERPRISE / "cases.jsonl")
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "hoprag"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer(provider.get_tracer("hoprag"))
    try:
        traced = telemetry.traced_engine(engine)
        traces = [traced.answer(c.query, case_id=c.case_id, run_id="rt") for c in cases]
    finally:
        telemetry.use_tracer(None)
        provider.shutdown()
    by_trace: dict[int, list] = {}
    for span in exporter.get_finished_spans():
        by_trace.setdefault(span.context.trace_id, []).append(span)
    lines = []
    for group in by_trace.values():
        request = MessageToDict(encode_spans(group))  # base64 ids, as protobuf's JSON mapping writes them
        lines.append(json.dumps(request) + "\n")
    (work / "spans.jsonl").write_text("".join(lines), encoding="utf-8")
    # what a run would have stored: the spans carry the same redacted texts
    return cases, [trace_for_storage(t, "telemetry") for t in traces], work


def test_exported_spans_import_to_the_same_evaluation(recorded) -> None:
    cases, traces, work = recorded
    summary = import_otel_traces(work / "spans.jsonl", work / "imported.jsonl")
    assert summary.traces == len(cases) == len(traces)
    imported = {t.case_id: t for t in read_traces(work / "imported.jsonl")}
    for trace in traces:
        back = imported[trace.case_id]
        assert back.question == trace.question and back.answer.text == trace.answer.text
        assert [(s.step_id, s.hop, s.issued_query, s.hits, s.selected) for s in back.steps] == [
            (s.step_id, s.hop, s.issued_query, s.hits, s.selected) for s in trace.steps]
        assert back.evidence == trace.evidence and back.answer == trace.answer
        assert [(s.bridge, s.depends_on) for s in back.steps] == [(s.bridge, s.depends_on) for s in trace.steps]
        assert back.redaction_shifts == trace.redaction_shifts and back.config_hash == trace.config_hash
    ks = (1, 2, 3, 5, 10)
    original = _scored(evaluate_chains(cases, traces, ks=ks))
    again = _scored(evaluate_chains(cases, [imported[t.case_id] for t in traces], ks=ks))
    assert original["aggregate"]["chain_coverage@5"] > 0  # a real run, not zeros on both sides
    # everything but latency, which passes through the spans' integer nanoseconds (67.2743275 ms
    # comes back as 67.27432750039952)
    assert _without_latency(again) == _without_latency(original)


def _scored(report) -> dict:
    return {"aggregate": report.aggregate, "cases": report.cases, "failures": report.failures,
            "stopping": report.stopping, "groups": report.groups}


def _without_latency(value):
    if isinstance(value, dict):
        return {k: _without_latency(v) for k, v in value.items() if "latency" not in k}
    if isinstance(value, list):
        return [_without_latency(v) for v in value]
    return value


def test_a_hop_span_is_an_otel_genai_retrieval(recorded) -> None:
    _, traces, work = recorded
    request = json.loads((work / "spans.jsonl").read_text(encoding="utf-8").splitlines()[0])
    spans = [s for r in request["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    hop = next(s for s in spans if s["name"].startswith("hop "))
    attrs = {a["key"]: next(iter(a["value"].values())) for a in hop["attributes"]}
    docs = json.loads(attrs["gen_ai.retrieval.documents"])
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["gen_ai.retrieval.query.text"]
    assert docs and all(isinstance(d["id"], str) and isinstance(d["score"], float) for d in docs)
    assert base64.b64decode(hop["traceId"])  # protobuf's JSON ids are read as base64

