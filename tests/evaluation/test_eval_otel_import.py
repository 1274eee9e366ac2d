"""OpenTelemetry spans of a pipeline that is not hoprag, imported as Traces and scored against evidence chains.

The spans are made by the OpenTelemetry SDK here, with the OpenInference attributes LlamaIndex and
LangChain instrumentation emit, exported in memory and serialised with the SDK's own OTLP encoder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from hoprag.cli import main  # noqa: E402
from hoprag.datasets.schema import load_cases  # noqa: E402
from hoprag.errors import InputError  # noqa: E402
from hoprag.evaluation.chain_eval import evaluate_chains  # noqa: E402
from hoprag.otel_import import import_otel_traces, read_otlp_spans, spans_to_traces  # noqa: E402
from hoprag.io.traces import read_traces  # noqa: E402

pytestmark = pytest.mark.integration

CASES = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"
Q1 = "Under the current retention policy, how long is customer data kept for the plan acquired under Project Orion?"


def _retrieve(tracer, query: str, docs: list[tuple[str, float]]) -> None:
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": query}
    for n, (doc_id, score) in enumerate(docs):
        attrs[f"retrieval.documents.{n}.document.id"] = doc_id
        attrs[f"retrieval.documents.{n}.document.score"] = score
        attrs[f"retrieval.documents.{n}.document.content"] = f"text of {doc_id}"
    with tracer.start_as_current_span("retrieve", attributes=attrs):
        pass


def _llm(tracer, answer: str, prompt_tokens: int, completion_tokens: int) -> None:
    with tracer.start_as_current_span("llm", attributes={
            "openinference.span.kind": "LLM", "output.value": answer,
            "llm.token_count.prompt": prompt_tokens, "llm.token_count.completion": completion_tokens}):
        pass


@pytest.fixture
def exported():
    """Finished SDK spans of three requests: ent-001 (two retrievals), ent-003 (one), a health check."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "other-rag"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("other-rag")
    with tracer.start_as_current_span("query", attributes={
            "openinference.span.kind": "CHAIN", "input.value": Q1, "hoprag.case_id": "ent-001"}):
        _retrieve(tracer, "plan acquired under Project Orion", [("contract-14", 0.9), ("ticket-2290", 0.4)])
        _retrieve(tracer, "retention of the KP-214 family", [("catalog-3", 0.8), ("policy-8-v2", 0.7)])
        _llm(tracer, "7 years", 120, 3)
    with tracer.start_as_current_span("query", attributes={
            "openinference.span.kind": "CHAIN", "input.value": "{\"query\": \"Wren critical response time?\"}",
            "input.mime_type": "application/json", "session.id": "ent-003"}):
        _retrieve(tracer, "Wren critical response time", [("ticket-2290", 0.6), ("policy-11", 0.5)])
        _llm(tracer, "8 hours", 80, 2)
    with tracer.start_as_current_span("GET /health"):
        pass
    provider.shutdown()
    return exporter.get_finished_spans()


def _otlp_json(spans) -> dict:
    """The OTLP JSON of ``spans``: the SDK's protobuf request, with hex ids as the OTLP JSON spec writes them."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    request = MessageToDict(encode_spans(spans))
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        import base64

                        span[key] = base64.b64decode(span[key]).hex()
    return request


def _write_per_trace(spans, path: Path) -> Path:
    """One export request per trace per line, as the collector's file exporter writes them."""
    by_trace: dict[int, list] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    path.write_text("".join(json.dumps(_otlp_json(group)) + "\n" for group in by_trace.values()), encoding="utf-8")
    return path


def test_imported_spans_become_traces_scored_against_chains(exported, tmp_path) -> None:
    path = _write_per_trace(exported, tmp_path / "spans.jsonl")
    summary = import_otel_traces(path, tmp_path / "traces.jsonl")
    assert (summary.spans, summary.traces, summary.skipped) == (len(exported), 2, 1)
    traces = {t.case_id: t.to_dict() for t in read_traces(tmp_path / "traces.jsonl")}
    first = traces["ent-001"]
    assert first["question"] == Q1 and first["answer"]["text"] == "7 years"
    assert [s["issued_query"] for s in first["steps"]] == ["plan acquired under Project Orion",
                                                            "retention of the KP-214 family"]
    assert [(h["doc_id"], h["rank"], h["score"]) for h in first["steps"][0]["hits"]] == [
        ("contract-14", 1, 0.9), ("ticket-2290", 2, 0.4)]
    assert [e["hit"]["doc_id"] for e in first["evidence"]] == ["contract-14", "ticket-2290", "catalog-3", "policy-8-v2"]
    assert first["usage"]["prompt_tokens"] == 120 and first["engine"] == "otel:other-rag"
    assert traces["ent-003"]["question"] == "Wren critical response time?"

    from hoprag.records import Trace

    cases = [c for c in load_cases(CASES) if c.case_id in ("ent-001", "ent-003")]
    report = evaluate_chains(cases, [Trace.from_dict(t) for t in traces.values()], ks=(2, 5))
    rows = {r["case_id"]: r for r in report.cases}
    # ent-001: its chains need contract-14, catalog-3 and policy-8-v2; the first two evidence entries
    # hold only contract-14 (and ticket-2290, off-chain), the first five all three.
    assert rows["ent-001"]["chain_coverage@2"] == 0.0 and rows["ent-001"]["chain_coverage@5"] == 1.0
    # ent-003: chain ticket-2290 → policy-11 is held in the first two; its answer is 4 hours, not 8.
    assert rows["ent-003"]["chain_coverage@2"] == 1.0
    assert (rows["ent-001"]["answer_em"], rows["ent-003"]["answer_em"]) == (1.0, 0.0)
    assert report.aggregate["chain_coverage@2"] == pytest.approx((0.0 + 1.0) / 2)
    assert report.aggregate["answer_em"] == pytest.approx((1.0 + 0.0) / 2)


def test_one_document_with_protobuf_ids_and_the_cli_eval(exported, tmp_path, capsys) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(MessageToDict(encode_spans(exported)), indent=2), encoding="utf-8")  # base64 ids
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(line for line in CASES.read_text(encoding="utf-8").splitlines(keepends=True)
                             if '"ent-001"' in line[:30] or '"ent-003"' in line[:30]), encoding="utf-8")
    main(["import-traces", "otel", str(spans), "--out", str(tmp_path / "traces.jsonl")])
    assert "wrote 2 traces" in capsys.readouterr().out
    main(["eval", str(cases), str(tmp_path / "traces.jsonl"), "--k", "2", "--json", str(tmp_path / "eval.json")])
    aggregate = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))["aggregate"]
    assert aggregate["chain_coverage@2"] == pytest.approx(0.5)


def test_case_attr_names_where_the_case_id_is(exported, tmp_path) -> None:
    spans = read_otlp_spans(_write_per_trace(exported, tmp_path / "spans.jsonl"))
    with pytest.raises(InputError, match="--case-attr"):
        spans_to_traces(spans, case_attrs=("app.case",))
    renamed = [s if "session.id" not in s.attributes else
               type(s)(**{**s.__dict__, "attributes": {"app.case": "ent-003"}}) for s in spans]
    traces, _ = spans_to_traces(renamed, case_attrs=("hoprag.case_id", "app.case"))
    assert sorted(t.case_id for t in traces) == ["ent-001", "ent-003"]


@pytest.mark.parametrize(("content", "message"), [
    ('{"spans": []}\n', "not OTLP JSON: no 'resourceSpans'"),
    ('[1, 2]\n', "expected an OTLP JSON object"),
    ('{"resourceSpans": {"a": 1}}\n', "'resourceSpans' is not a list"),
    ('{"resourceSpans": []}\n', "holds no spans"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}\n', "no traceId or spanId"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": "cd", "name": "x"}]}]}]}\n',
     "has an OpenInference retrieval or LLM span"),
    ('{"resourceSpans": []}\nnot json\n', "malformed JSON"),
])
def test_bad_span_files_are_clear_errors(tmp_path, content, message) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("[", r"\[")):
        import_otel_traces(path, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_cases_file_given_as_out_is_not_overwritten(exported, tmp_path) -> None:
    path = _write_per_trace(exported, tmp_path / "spans.jsonl")
    out = tmp_path / "cases.jsonl"
    out.write_text(CASES.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(InputError, match="holds a cases file .* not a traces file"):
        import_otel_traces(path, out)
    assert out.read_text(encoding="utf-8") == CASES.read_text(encoding="utf-8")
