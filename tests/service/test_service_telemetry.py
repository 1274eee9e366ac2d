"""OpenTelemetry: spans per question, stage and hop with GenAI and hoprag attributes; off by default."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")
pytestmark = pytest.mark.integration


@pytest.fixture
def spans():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from hoprag import telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer(provider.get_tracer("test"))
    yield exporter
    telemetry.use_tracer(None)


def test_tracing_is_off_without_an_endpoint(monkeypatch) -> None:
    from hoprag import telemetry

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert telemetry.enabled() is False


def test_an_ask_leaves_question_stage_and_hop_spans(server, spans) -> None:
    question = "How long is customer data retained for the plan that Project Basalt currently subscribes to?"
    body = httpx.post(server.url + "/api/ask", json={"question": question, "store": False},
                      headers=server.auth("internal"), timeout=30).json()
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "hoprag.answer")
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["hoprag.case_id"] == body["trace_id"]
    assert root.attributes["hoprag.stop_reason"] == body["stop_reason"]
    assert root.attributes["hoprag.clearance"] == "internal"
    stages = {s.name: s for s in finished if s.parent is not None and s.parent.span_id == root.context.span_id}
    assert {"planning", "retrieval", "ranking", "synthesis"} <= set(stages)
    assert stages["synthesis"].attributes["gen_ai.operation.name"] == "chat"
    hops = [s for s in finished if s.name.startswith("hop ")]
    assert len(hops) == len(body["steps"])
    assert all(h.parent.span_id == stages["retrieval"].context.span_id for h in hops)
    first = next(h for h in hops if h.attributes["hoprag.step_id"] == "s1")
    assert first.attributes["hoprag.hop"] == 1 and first.attributes["hoprag.issued_query"]
    assert list(first.attributes["hoprag.selected_ids"]) == body["steps"][0]["selected"]
    assert any("hoprag.bridge" in h.attributes for h in hops)
    assert all(root.start_time <= h.start_time <= h.end_time <= root.end_time for h in hops)
