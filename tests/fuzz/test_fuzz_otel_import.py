"""Fuzz the OTLP spans import: any bytes end in traces ``hoprag eval`` scores, or a HopragError naming the file.

The records are the export requests of ``tests/data/otel_spans.jsonl`` (made by the OpenTelemetry SDK
with OpenInference attributes), damaged by :mod:`fuzz_strategies`; the imported traces are scored at once.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_strategies import DATA, FUZZ, JSON_JUNK, ROOT, ends_cleanly, json_bytes, jsonl_bytes, keys_of, read_jsonl
from hypothesis import given
from hypothesis import strategies as st

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.io.traces import read_traces
from hoprag.otel_import import import_otel_traces

pytestmark = pytest.mark.unit

CASES = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")[:4]
REQUESTS = read_jsonl(DATA / "otel_spans.jsonl")
KEYS = keys_of(REQUESTS) + ["openinference.span.kind", "RETRIEVER", "LLM", "intValue", "arrayValue", "kvlistValue"]


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def _import_then_eval(work: Path, data: bytes) -> None:
    path = work / "spans.jsonl"
    path.write_bytes(data)

    def run() -> None:
        summary = import_otel_traces(path, work / "traces.jsonl")
        evaluate_chains(CASES, read_traces(summary.out), ks=(2, 5))

    ends_cleanly(run, path.name)


def test_the_fixture_imports_cleanly(work: Path) -> None:
    summary = import_otel_traces(DATA / "otel_spans.jsonl", work / "traces.jsonl")
    assert [t.case_id for t in read_traces(summary.out)] == ["ent-001", "ent-003"]


@FUZZ
@given(data=st.data())
def test_damaged_export_requests(work: Path, data: st.DataObject) -> None:
    strategy = jsonl_bytes(REQUESTS, KEYS) | json_bytes(REQUESTS, KEYS, whole=REQUESTS[0])
    _import_then_eval(work, data.draw(strategy, label="file"))


@FUZZ
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes(work: Path, raw: bytes) -> None:
    _import_then_eval(work, raw)


def test_known_json_junk(work: Path) -> None:
    for junk in JSON_JUNK:
        _import_then_eval(work, f"{json.dumps(REQUESTS[0])}\n{junk}\n".encode())
        _import_then_eval(work, junk.encode())


def _with_first_span(**changes: object) -> bytes:
    request = json.loads(json.dumps(REQUESTS[0]))
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(changes)
    return (json.dumps(request) + "\n").encode()


@pytest.mark.parametrize("changes", [
    {"startTimeUnixNano": 1e999},  # parsed as infinity
    {"endTimeUnixNano": 10**400},
    {"startTimeUnixNano": -5},
    {"attributes": [{"key": "retrieval.documents.0.document.id", "value": {"stringValue": "d"}},
                    {"key": "retrieval.documents.0.document.score", "value": {"intValue": "9" * 400}},
                    {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]},
    {"attributes": [{"key": "retrieval.documents.0.document.score", "value": {"doubleValue": 10**400}},
                    {"key": "retrieval.documents.0.document.id", "value": {"arrayValue": {"values": 3}}},
                    {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]},
])
def test_out_of_range_values(work: Path, changes: dict) -> None:
    _import_then_eval(work, _with_first_span(**changes))
