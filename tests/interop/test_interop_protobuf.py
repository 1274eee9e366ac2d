"""The real LlamaIndex and Haystack pipelines' spans as the Collector's OTLP protobuf stream import to
the traces their OTLP JSON gives, resolved against the corpus with the frameworks' default ids."""

from __future__ import annotations

import pytest

from hoprag.document_resolution import DocumentResolver
from hoprag.io.traces import read_traces
from hoprag.otel_import import import_otel_traces

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("fixture", ["llamaindex_run", "haystack_run"])
def test_protobuf_spans_import_as_their_json_does(fixture, slice_files, tmp_path, request) -> None:
    pytest.importorskip("opentelemetry.proto")
    run = request.getfixturevalue(fixture)
    result, _, _ = slice_files
    cases = {c.case_id: c.query for c in result.cases}
    imported, routes = {}, {}
    for name, spans in (("json", run.spans), ("protobuf", run.spans.with_suffix(".binpb"))):
        resolver = DocumentResolver(result.documents)
        summary = import_otel_traces(spans, tmp_path / f"{name}.jsonl", cases=cases, resolver=resolver)
        imported[name] = [t.to_dict() for t in read_traces(summary.out)]
        routes[name] = dict(resolver.counts)
    assert spans.read_bytes()[4] == 0x0A  # a length, then field 1 of a request: the stream, not JSON
    assert len(imported["json"]) == len(result.cases)
    assert imported["protobuf"] == imported["json"] and routes["protobuf"] == routes["json"]
    assert set(routes["json"]) == {"metadata"}  # the frameworks' own ids, resolved through their metadata
