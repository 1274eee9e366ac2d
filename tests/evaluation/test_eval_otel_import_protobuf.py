"""OTLP protobuf span files import as the same traces as the same spans in OTLP JSON.

The spans are made by the OpenTelemetry SDK and encoded by its own OTLP encoder (``encode_spans``):
one serialized ``ExportTraceServiceRequest`` (``SerializeToString()``), and a stream of requests each
preceded by its length as 4 big-endian bytes (the OpenTelemetry Collector file exporter's
``format: proto``). The JSON twin is the same requests in the OTLP JSON mapping with hex ids.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import sys
import tracemalloc
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
pytest.importorskip("opentelemetry.proto")

from google.protobuf.json_format import MessageToDict  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402

from hoprag.cli import main  # noqa: E402
from hoprag.errors import ConfigError  # noqa: E402
from hoprag.io.traces import read_traces  # noqa: E402
from hoprag.otlp_spans import iter_otlp_spans  # noqa: E402

pytestmark = pytest.mark.integration

Q1 = "Under the current retention policy, how long is customer data kept for the plan acquired under Project Orion?"


@pytest.fixture(scope="module")
def exported():
    """Finished SDK spans of two questions (ent-001: two retrievals; ent-003 by session) and a health check."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "other-rag"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("other-rag")

    def retrieve(query: str, docs: list[tuple[str, float]]) -> None:
        attrs: dict[str, object] = {"openinference.span.kind": "RETRIEVER", "input.value": query}
        for n, (doc_id, score) in enumerate(docs):
            attrs |= {f"retrieval.documents.{n}.document.id": doc_id,
                      f"retrieval.documents.{n}.document.score": score,
                      f"retrieval.documents.{n}.document.content": f"text of {doc_id}"}
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass

    with tracer.start_as_current_span("query", attributes={
            "openinference.span.kind": "CHAIN", "input.value": Q1, "hoprag.case_id": "ent-001",
            "tag.tags": ["prod", "orion"], "hoprag.flagged": True}):
        retrieve("plan acquired under Project Orion", [("contract-14", 0.9), ("ticket-2290", 0.4)])
        retrieve("retention of the KP-214 family", [("catalog-3", 0.8), ("policy-8-v2", 0.7)])
        with tracer.start_as_current_span("llm", attributes={
                "openinference.span.kind": "LLM", "output.value": "7 years", "llm.token_count.prompt": 120,
                "llm.token_count.completion": 3, "embedding.vector": [0.5] * 8}):
            pass
    with tracer.start_as_current_span("query", attributes={
            "openinference.span.kind": "CHAIN", "input.value": "Wren critical response time?",
            "session.id": "ent-003"}):
        retrieve("Wren critical response time", [("ticket-2290", 0.6), ("policy-11", 0.5)])
    with tracer.start_as_current_span("GET /health"):
        pass
    provider.shutdown()
    return exporter.get_finished_spans()


def _requests(spans) -> list:
    """One ExportTraceServiceRequest per trace, as a batch per question reaches the collector; the
    first also holds a kvlist and a bytes value, which the SDK's span attributes cannot."""
    by_trace: dict[int, list] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    requests = [encode_spans(group) for group in by_trace.values()]
    root = next(s for s in requests[0].resource_spans[0].scope_spans[0].spans if s.name == "query")
    meta = root.attributes.add(key="metadata")
    meta.value.kvlist_value.values.add(key="team").value.string_value = "search"
    meta.value.kvlist_value.values.add(key="attempt").value.int_value = 2
    root.attributes.add(key="hoprag.digest").value.bytes_value = b"\x00\x01\xfe"
    return requests


def _json_lines(requests, path: Path) -> Path:
    """The OTLP JSON of the requests, one per line, ids in hex as the OTLP JSON spec writes them."""
    lines = []
    for request in requests:
        data = MessageToDict(request)
        for resource in data["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
        lines.append(json.dumps(data) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _single(requests, path: Path) -> Path:
    """All spans in one request, serialized as SerializeToString() writes it."""
    whole = type(requests[0])()
    for request in requests:
        whole.resource_spans.extend(request.resource_spans)
    path.write_bytes(whole.SerializeToString())
    return path


def _delimited(requests, path: Path) -> Path:
    """Each request preceded by its length, 4 bytes big-endian (the Collector file exporter, format: proto)."""
    path.write_bytes(b"".join(len(data).to_bytes(4, "big") + data for data in
                              (request.SerializeToString() for request in requests)))
    return path


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_protobuf_spans_equal_the_json_spans_with_typed_attributes(exported, tmp_path) -> None:
    requests = _requests(exported)
    from_json = list(iter_otlp_spans(_json_lines(requests, tmp_path / "spans.jsonl")))
    assert list(iter_otlp_spans(_delimited(requests, tmp_path / "spans.binpb"))) == from_json
    assert list(iter_otlp_spans(_single(requests, tmp_path / "spans.pb"))) == from_json
    assert len(from_json) == len(exported) == 7
    root = next(s for s in from_json if s.attributes.get("hoprag.case_id") == "ent-001")
    # AnyValue kinds as the JSON reader gives them: list, bool, kvlist as a dict, int, bytes as base64
    assert root.attributes["tag.tags"] == ["prod", "orion"] and root.attributes["hoprag.flagged"] is True
    assert root.attributes["metadata"] == {"team": "search", "attempt": 2}
    assert root.attributes["hoprag.digest"] == base64.b64encode(b"\x00\x01\xfe").decode() == "AAH+"
    llm = next(s for s in from_json if s.name == "llm")
    assert llm.attributes["llm.token_count.prompt"] == 120 and "embedding.vector" not in llm.attributes
    assert root.service == "other-rag" and len(root.trace_id) == 32 and root.parent_id == ""


def test_traces_import_of_protobuf_writes_the_traces_of_json(exported, tmp_path, capsys) -> None:
    requests = _requests(exported)
    written = {}
    for name, path in (("json", _json_lines(requests, tmp_path / "spans.jsonl")),
                       ("single", _single(requests, tmp_path / "spans.pb")),
                       ("delimited", _delimited(requests, tmp_path / "spans.binpb"))):
        code, said = _cli(["traces", "import", str(path), "--out", str(tmp_path / f"{name}.traces.jsonl")], capsys)
        assert code == 0 and "read 7 spans: wrote 2 traces, 1 traces without retrieval or LLM spans skipped" in said
        written[name] = [t.to_dict() for t in read_traces(tmp_path / f"{name}.traces.jsonl")]
    assert written["single"] == written["json"] and written["delimited"] == written["json"]
    first = written["json"][0]
    assert (first["case_id"], first["question"], first["answer"]["text"]) == ("ent-001", Q1, "7 years")
    assert [e["hit"]["doc_id"] for e in first["evidence"]] == ["contract-14", "ticket-2290", "catalog-3", "policy-8-v2"]
    assert written["json"][1]["case_id"] == "ent-003"


def _metrics() -> bytes:
    """An OTLP metrics export: protobuf whose first field is also 1, holding no spans."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    request = ExportMetricsServiceRequest()
    metric = request.resource_metrics.add().scope_metrics.add().metrics.add(name="latency", unit="ms")
    metric.gauge.data_points.add(as_double=1.5, time_unix_nano=1_700_000_000_000_000_000)
    return request.SerializeToString()


def _bad_files(requests, root: Path) -> dict[str, Path]:
    single = _single(requests, root / "whole.pb").read_bytes()
    stream = _delimited(requests, root / "whole.binpb").read_bytes()
    first = int.from_bytes(stream[:4], "big")
    files = {"truncated single request": (root / "cut.pb", single[: len(single) // 2]),
             "stream cut in its second request": (root / "cut.binpb", stream[: 4 + first + 4 + 40]),
             "stream cut in a length": (root / "cut-length.binpb", stream[: 4 + first + 2]),
             "random binary": (root / "random.bin", b"\x01" + random.Random(7).randbytes(4095)),
             "empty": (root / "empty.pb", b""),
             "gzip": (root / "spans.binpb.gz", gzip.compress(stream)),
             # the Collector's file exporter with compression: zstd compresses each request (a zstd frame)
             "zstd requests": (root / "zstd.binpb", (9).to_bytes(4, "big") + b"\x28\xb5\x2f\xfd" + b"\x00" * 5),
             "a metrics export": (root / "metrics.pb", _metrics())}
    for path, data in files.values():
        path.write_bytes(data)
    (root / "spans-dir").mkdir()
    return {why: path for why, (path, _) in files.items()} | {"directory": root / "spans-dir"}


@pytest.mark.parametrize("why, says", [
    ("truncated single request", "is an OTLP protobuf file cut short: a field at byte"),
    ("stream cut in its second request", "is an OTLP protobuf file cut short: request 2 at byte"),
    ("stream cut in a length", "request 2 at byte"),
    ("random binary", "this is not OTLP: neither JSON nor an OTLP protobuf request (it starts with bytes 01 "),
    ("empty", "is empty"),
    ("gzip", "is gzip-compressed"),
    ("zstd requests", "request 1 is zstd-compressed"),
    ("a metrics export", "this is not OTLP protobuf spans (an ExportTraceServiceRequest): the span at byte"),
    ("directory", "is a directory"),
])
def test_a_bad_spans_file_gets_one_message_and_exit_2(exported, tmp_path, capsys, why, says) -> None:
    path = _bad_files(_requests(exported), tmp_path)[why]
    out = tmp_path / "traces.jsonl"
    code, said = _cli(["traces", "import", str(path), "--out", str(out)], capsys)
    assert code == 2 and says in said and "Fix:" in said, said
    assert "Traceback" not in said and said.count("error:") == 1 and not out.exists()


def test_without_opentelemetry_proto_a_protobuf_file_names_the_extra(exported, tmp_path, capsys,
                                                                     monkeypatch) -> None:
    path = _delimited(_requests(exported), tmp_path / "spans.binpb")
    json_path = _json_lines(_requests(exported), tmp_path / "spans.jsonl")
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.trace.v1.trace_pb2", None)  # import fails as uninstalled
    with pytest.raises(ConfigError, match=r"opentelemetry-proto package\. Fix: pip install 'hoprag\[otel\]'"):
        list(iter_otlp_spans(path))
    code, said = _cli(["traces", "import", str(path), "--out", str(tmp_path / "t.jsonl")], capsys)
    assert code == 2 and "pip install 'hoprag[otel]'" in said and "Traceback" not in said
    assert len(list(iter_otlp_spans(json_path))) == 7  # OTLP JSON needs no extra


def _peak_of_reading(path: Path) -> int:
    tracemalloc.start()
    try:
        for _ in iter_otlp_spans(path):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_one_large_request_is_read_span_by_span(exported, tmp_path) -> None:
    requests = _requests(exported)
    one = _single(requests, tmp_path / "one.pb")
    # the same request's spans 400 times over (20 times as many in the second file): ids repeat, which the reader
    # does not mind; reading it whole would hold its 1.7 MB at once
    def repeated(times: int, path: Path) -> Path:
        whole = type(requests[0])()
        for _ in range(times):
            whole.resource_spans.extend(type(requests[0]).FromString(one.read_bytes()).resource_spans)
        path.write_bytes(whole.SerializeToString())
        return path

    small, large = repeated(20, tmp_path / "small.pb"), repeated(400, tmp_path / "large.pb")
    _peak_of_reading(small)  # imports done
    grown = large.stat().st_size - small.stat().st_size
    held = _peak_of_reading(large) - _peak_of_reading(small)
    assert grown > 1_000_000 and held < grown / 20, (held, grown)
