"""A large spans file is imported without holding its spans: each trace becomes its record at its last span.

The file is generated here: traces of five spans (a question, two retrievals of six documents with
their text, an embedding, an answer), one export request per trace per line, as the collector's file
exporter writes them. Holding every span costs about the file's size (the kept attributes are most
of it); streaming holds one trace's spans and the plan of where traces end.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from hoprag.io.traces import read_traces
from hoprag.otel_import import import_otel_traces
from hoprag.otel_trace_groups import complete_groups, plan_groups
from hoprag.otlp_spans import iter_otlp_spans

pytestmark = pytest.mark.integration

CASES = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"
_PAD = "the passage text a retriever recorded with its document " * 6


def _attr(key: str, value: object) -> dict:
    kind = "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: value}}


def _spans_file(path: Path, traces: int) -> Path:
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as handle:
        for n in range(traces):
            case, trace_id, root = cases[n % len(cases)], f"{n + 1:032x}", f"{8 * n + 1:016x}"
            start = 1_700_000_000_000_000_000 + n * 10_000_000

            def span(number: int, name: str, attrs: list[dict], offset: int, parent: str = root) -> dict:
                return {"traceId": trace_id, "spanId": f"{8 * n + number:016x}", "parentSpanId": parent, "name": name,
                        "startTimeUnixNano": str(start + offset), "endTimeUnixNano": str(start + offset + 900),
                        "attributes": attrs}

            spans = []
            for hop in (1, 2):
                attrs = [_attr("openinference.span.kind", "RETRIEVER"), _attr("input.value", f"hop {hop} of {n}")]
                for rank in range(6):
                    doc = f"doc-{(n * 7 + hop * 3 + rank) % 500}"
                    attrs += [_attr(f"retrieval.documents.{rank}.document.id", doc),
                              _attr(f"retrieval.documents.{rank}.document.score", 1.0 / (rank + 1)),
                              _attr(f"retrieval.documents.{rank}.document.content", f"{doc}: {_PAD}")]
                spans.append(span(1 + hop, "retrieve", attrs, 1000 * hop))
            spans.append(span(4, "embed", [_attr("openinference.span.kind", "EMBEDDING"),
                                           _attr("embedding.vector", json.dumps([0.125] * 64))], 50))
            spans.append(span(5, "llm", [_attr("openinference.span.kind", "LLM"), _attr("input.value", _PAD * 4),
                                         _attr("llm.output_messages.0.message.content", case["answers"][0])], 3000))
            spans.append(span(1, "query", [_attr("openinference.span.kind", "CHAIN"),
                                           _attr("input.value", case["query"]),
                                           _attr("hoprag.case_id", case["case_id"])], 0, parent=""))
            handle.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    return path


def _peak(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_import_holds_one_trace_not_the_file(tmp_path) -> None:
    import_otel_traces(_spans_file(tmp_path / "warm.jsonl", 2), tmp_path / "warm.traces.jsonl")  # imports done
    small, large = _spans_file(tmp_path / "small.jsonl", 200), _spans_file(tmp_path / "large.jsonl", 800)
    grown = large.stat().st_size - small.stat().st_size  # about 6.6 MB: 3,000 spans more
    held = _peak(lambda: list(iter_otlp_spans(large))) - _peak(lambda: list(iter_otlp_spans(small)))
    # without redaction: its memo of redacted texts is bounded (8,192 texts) but fills with the file
    streamed = (_peak(lambda: import_otel_traces(large, tmp_path / "large.traces.jsonl", redact=False))
                - _peak(lambda: import_otel_traces(small, tmp_path / "small.traces.jsonl", redact=False)))
    assert held > grown / 2  # every span at once (what the import used to hold) grows with the file
    # streaming grows only by the plan, each trace's place and records in reference cycles the collector has
    # not reached yet (gc.collect frees them): 1.2 MB here, two kilobytes a trace of the file's eleven
    assert streamed < grown / 4, (streamed, grown)
    traces = read_traces(tmp_path / "large.traces.jsonl")
    assert len(traces) == 800 and [len(t.steps) for t in traces] == [2] * 800
    assert traces[0].case_id == "ent-001" and [e.hit.doc_id for e in traces[0].evidence][:2] == ["doc-3", "doc-4"]


def test_a_trace_is_handed_on_at_its_last_span_and_sessions_still_merge(tmp_path) -> None:
    spans = list(iter_otlp_spans(_spans_file(tmp_path / "spans.jsonl", 3)))
    # two calls of one session without a common root, the second after another question's trace
    session = [type(s)(**{**s.__dict__, "attributes": {**s.attributes, "session.id": "s-1"}})
               for s in spans if s.trace_id in (f"{1:032x}", f"{3:032x}")]
    other = [s for s in spans if s.trace_id == f"{2:032x}"]
    mixed = session[:5] + other + session[5:]
    plan = plan_groups(mixed)
    handed = [(group.key, group.first, len(group.spans)) for group in complete_groups(iter(mixed), plan)]
    assert handed == [(f"{2:032x}", 1, 5), (f"{1:032x}", 0, 10)]  # the session ends with the file
    assert [(g.key, g.first, len(g.spans)) for g in complete_groups(mixed)] == [(f"{1:032x}", 0, 10),
                                                                               (f"{2:032x}", 1, 5)]
