"""Fuzz the OTLP protobuf import: damaged protobuf spans end in traces ``hoprag eval`` scores, or a HopragError.

The records are the export requests of ``tests/data/otel_spans.jsonl`` (made by the OpenTelemetry SDK),
serialized by the official ``opentelemetry-proto`` classes, one request and the Collector's
length-prefixed stream, then cut, overwritten or spliced at any byte.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.proto")

from fuzz_strategies import DATA, FUZZ, ROOT, ends_cleanly, read_jsonl  # noqa: E402
from google.protobuf.json_format import ParseDict  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from hoprag.datasets.schema import load_cases  # noqa: E402
from hoprag.evaluation.chain_eval import evaluate_chains  # noqa: E402
from hoprag.io.traces import read_traces  # noqa: E402
from hoprag.otel_import import import_otel_traces  # noqa: E402

pytestmark = pytest.mark.unit

CASES = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")[:4]


def _message(request: dict) -> ExportTraceServiceRequest:
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:  # hex in OTLP JSON, base64 in protobuf's JSON mapping
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode("ascii")
    return ParseDict(request, ExportTraceServiceRequest())


REQUESTS = [_message(r).SerializeToString() for r in read_jsonl(DATA / "otel_spans.jsonl")]
SINGLE = b"".join(REQUESTS)  # serialized requests one after another are one request (their merge)
STREAM = b"".join(len(r).to_bytes(4, "big") + r for r in REQUESTS)


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def _import_then_eval(work: Path, data: bytes) -> object:
    path = work / "spans.binpb"
    path.write_bytes(data)

    def run() -> None:
        summary = import_otel_traces(path, work / "traces.jsonl")
        evaluate_chains(CASES, read_traces(summary.out), ks=(2, 5))

    return ends_cleanly(run, path.name)


def test_the_fixture_imports_cleanly_both_ways(work: Path) -> None:
    for data in (SINGLE, STREAM):
        assert _import_then_eval(work, data) is None
        assert [t.case_id for t in read_traces(work / "traces.jsonl")] == ["ent-001", "ent-003"]


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    data = draw(st.sampled_from([SINGLE, STREAM]))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["cut", "overwrite", "splice"]))
        junk = draw(st.binary(min_size=1, max_size=6) | st.sampled_from([b"\xff" * 10, b"\x0a\x7f", b"\x00\x00"]))
        if how == "cut":
            data = data[:at]
        elif how == "overwrite":
            data = data[:at] + junk + data[at + len(junk):]
        else:
            data = data[:at] + junk + data[at:]
    return data


@FUZZ
@given(data=damaged())
def test_damaged_protobuf_requests(work: Path, data: bytes) -> None:
    _import_then_eval(work, data)


@FUZZ
@given(raw=st.binary(max_size=200), lead=st.sampled_from([b"\x0a", b"\x00\x00\x00\x10\x0a", b"\x00\x00\x00\x00"]))
def test_arbitrary_bytes_that_look_like_protobuf(work: Path, raw: bytes, lead: bytes) -> None:
    _import_then_eval(work, lead + raw)


def test_a_score_that_is_not_finite_is_refused_naming_the_attribute(work: Path) -> None:
    request = ExportTraceServiceRequest.FromString(REQUESTS[0])
    span = next(s for scope in request.resource_spans[0].scope_spans for s in scope.spans
                if any(a.key.startswith("retrieval.documents.") for a in s.attributes))
    score = next(a for a in span.attributes if a.key.endswith(".document.score"))
    score.value.double_value = float("nan")
    error = _import_then_eval(work, request.SerializeToString())
    assert f"attribute {score.key} holds nan, not a finite number" in str(error)
