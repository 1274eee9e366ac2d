"""OpenTelemetry: spans per question, stage and hop with GenAI and hoprag attributes; off by default."""

from __future__ import annotations

import time

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


def test_the_question_span_marks_the_engines_events(server, spans) -> None:
    question = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"
    body = httpx.post(server.url + "/api/ask", json={"question": question, "store": False},
                      headers=server.auth("restricted"), timeout=30).json()
    root = next(s for s in spans.get_finished_spans() if s.name == "hoprag.answer")
    names = [e.name for e in root.events]
    hops = max(step["hop"] for step in body["steps"])
    assert names[0] == "hoprag.plan" and names.count("hoprag.hop_started") == hops
    assert "hoprag.judge" in names and body["answer"] and names[-1] == "hoprag.first_token"
    assert [e.timestamp for e in root.events] == sorted(e.timestamp for e in root.events)
    judged = [e.attributes for e in root.events if e.name == "hoprag.judge"]
    assert judged[-1]["hoprag.sufficient"] == (body["stop_reason"] == "sufficient")
    assert not any(question[:20] in str(v) for e in root.events for v in e.attributes.values())  # no query text


def test_each_request_has_a_server_span_that_parents_the_answer(server, spans) -> None:
    from opentelemetry.trace import SpanKind

    question = "How long is customer data retained for the plan that Project Basalt currently subscribes to?"
    httpx.post(server.url + "/api/ask", json={"question": question, "store": False},
               headers=server.auth("internal"), timeout=30).raise_for_status()
    assert httpx.get(server.url + "/api/runs/no-such-run", headers=server.auth("restricted"), timeout=10).status_code == 404
    assert httpx.get(server.url + "/no/such/page?q=secret", timeout=10).status_code == 404
    # a request's span ends just after its last byte is sent: wait (boundedly) until all three ended
    for _ in range(100):
        finished = spans.get_finished_spans()
        requests = [s for s in finished if s.kind == SpanKind.SERVER]
        if len(requests) >= 3:
            break
        time.sleep(0.05)
    assert [s.name for s in requests] == ["POST /api/ask", "GET /api/runs/{run_id}", "GET"]
    ask, run, unrouted = requests
    assert ask.attributes["http.route"] == "/api/ask" and ask.attributes["http.response.status_code"] == 200
    assert run.attributes["http.response.status_code"] == 404 and run.attributes["url.path"] == "/api/runs/no-such-run"
    assert "http.route" not in unrouted.attributes and unrouted.attributes["url.path"] == "/no/such/page"
    assert not any("secret" in str(v) for s in requests for v in s.attributes.values())  # no query string
    root = next(s for s in finished if s.name == "hoprag.answer")
    assert root.parent is not None and root.parent.span_id == ask.context.span_id
    assert root.context.trace_id == ask.context.trace_id


def test_hoprag_run_leaves_a_question_span_per_case(enterprise_index, spans, tmp_path) -> None:
    from service_helpers import ENTERPRISE

    from hoprag.cli import main
    from hoprag.io.traces import read_traces

    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join((ENTERPRISE / "cases.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:2]),
                     encoding="utf-8")
    try:
        main(["run", str(enterprise_index), str(cases), "--out", str(tmp_path / "traces.jsonl"), "--quiet"])
    except SystemExit as exc:
        assert not exc.code
    traces = [t.to_dict() for t in read_traces(tmp_path / "traces.jsonl")]
    roots = [s for s in spans.get_finished_spans() if s.name == "hoprag.answer"]
    assert sorted(r.attributes["hoprag.case_id"] for r in roots) == sorted(t["case_id"] for t in traces)
    assert {r.attributes["hoprag.run_id"] for r in roots} == {traces[0]["run_id"]}
    hops = [s for s in spans.get_finished_spans() if s.name.startswith("hop ")]
    assert len(hops) == sum(len(t["steps"]) for t in traces)


def test_run_engines_are_untouched_when_tracing_is_off(monkeypatch) -> None:
    from hoprag import telemetry

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    engine = object()
    assert telemetry.traced_engine(engine) is engine and telemetry.tracer() is None
