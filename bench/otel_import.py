"""Bench: ``hoprag traces import`` on a generated OTLP JSON file of 100,000 spans, peak memory and time.

The file holds 20,000 traces of five spans, one export request per trace per line (as the
OpenTelemetry Collector's file exporter writes them): a question (``hoprag.case_id``, the enterprise
cases in turn), two OpenInference retrievals of six documents each with their text (about 450
characters) and metadata, an embedding (64 floats, never read) and an LLM span with a long prompt
and the answer. The command runs in a child process under ``/usr/bin/time -v``. A second file is the
same but for the LLM span's prompt, which holds the twelve retrieved documents' text as a framework's
chat prompt does (``llm.input_messages`` and ``llm.prompt_template.variables``): the import keeps it
and finds the documents in it (the selected evidence, :mod:`hoprag.otel_evidence`).

    python bench/otel_import.py [--traces 20000] [--keep DIR]

With ``opentelemetry-proto`` installed (``hoprag[otel]``) the same requests are also written as OTLP
protobuf, both ways ``hoprag traces import`` reads it: a length-prefixed stream (the Collector file
exporter's ``format: proto``) and one serialized request holding every span, and imported alike.

The issue's bar: 100k spans import in <= 200 MB peak memory.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "data" / "enterprise" / "cases.jsonl"
CORPUS = ROOT / "data" / "enterprise" / "corpus.jsonl"
FILLER = "lorem ipsum dolor sit amet " * 16


def _attr(key: str, value: object) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def write_spans(path: Path, traces: int, seed: int = 7, prompt: bool = False) -> int:
    """Write the file; returns the number of spans. ``prompt``: the LLM span's prompt holds the
    retrieved documents' text."""
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [json.loads(line)["id"] for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    rnd = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(traces):
            case, trace_id, root = cases[n % len(cases)], f"{n + 1:032x}", f"{n * 8 + 1:016x}"
            start = 1_700_000_000_000_000_000 + n * 10_000_000
            spans = []
            given: list[str] = []

            def span(span_id: str, parent: str, name: str, attrs: list, offset: int, duration: int) -> None:
                record = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": 1,
                          "startTimeUnixNano": str(start + offset),
                          "endTimeUnixNano": str(start + offset + duration), "attributes": attrs}
                if parent:
                    record["parentSpanId"] = parent
                spans.append(record)

            for hop in range(2):
                attrs = [_attr("openinference.span.kind", "RETRIEVER"),
                         _attr("input.value", case["query"][:40] + f" hop {hop}")]
                for rank in range(6):
                    doc = docs[rnd.randrange(len(docs))]
                    attrs += [_attr(f"retrieval.documents.{rank}.document.id", doc),
                              _attr(f"retrieval.documents.{rank}.document.score", 1.0 / (rank + 1)),
                              _attr(f"retrieval.documents.{rank}.document.content", f"text of {doc} " + FILLER),
                              _attr(f"retrieval.documents.{rank}.document.metadata",
                                    json.dumps({"doc_id": doc, "file_name": doc + ".txt"}))]
                given += [a["value"]["stringValue"] for a in attrs if a["key"].endswith(".document.content")]
                span(f"{n * 8 + 2 + hop:016x}", root, "retrieve", attrs, 100 + hop * 1000, 900)
            span(f"{n * 8 + 4:016x}", root, "embed",
                 [_attr("openinference.span.kind", "EMBEDDING"),
                  _attr("embedding.embeddings.0.embedding.vector", json.dumps([rnd.random() for _ in range(64)]))],
                 50, 40)
            context = "\n\n".join(reversed(given))
            asked = ([_attr("llm.input_messages.0.message.role", "user"),
                      _attr("llm.input_messages.0.message.content", f"Context:\n{context}\n\nQuery: {case['query']}"),
                      _attr("llm.prompt_template.variables", json.dumps({"context_str": context}))] if prompt else [])
            span(f"{n * 8 + 5:016x}", root, "llm",
                 [_attr("openinference.span.kind", "LLM"), _attr("input.value", FILLER * 3), *asked,
                  _attr("llm.output_messages.0.message.content", case["answers"][0]),
                  _attr("llm.token_count.prompt", 300), _attr("llm.token_count.completion", 4)], 2500, 500)
            span(root, "", "query", [_attr("openinference.span.kind", "CHAIN"), _attr("input.value", case["query"]),
                                     _attr("hoprag.case_id", case["case_id"])], 0, 4000)
            handle.write(json.dumps({"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "gen")]},
                                                        "scopeSpans": [{"scope": {"name": "gen"},
                                                                        "spans": spans}]}]}) + "\n")
    return traces * 5


def write_protobuf(spans: Path, stream: Path, single: Path) -> bool:
    """The JSON requests as OTLP protobuf: length-prefixed, and as one request (serialized messages
    concatenate into their merge, so the requests one after another are one request); False without
    opentelemetry-proto."""
    try:
        from google.protobuf.json_format import ParseDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        return False
    with spans.open(encoding="utf-8") as lines, stream.open("wb") as prefixed, single.open("wb") as whole:
        for line in lines:
            request = json.loads(line)
            for resource in request["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:  # the protobuf JSON mapping writes ids as base64
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode("ascii")
            data = ParseDict(request, ExportTraceServiceRequest()).SerializeToString()
            prefixed.write(len(data).to_bytes(4, "big") + data)
            whole.write(data)
    return True


def measure(hoprag: Path, spans: Path, out: Path, label: str, count: int) -> None:
    """Run the import in a child process under /usr/bin/time -v and print its peak RSS and wall time."""
    began = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", str(hoprag), "traces", "import", str(spans), "--out", str(out)],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - began
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    print(done.stdout.strip())
    print(f"{label}: {count} spans, {spans.stat().st_size / 1e6:.0f} MB: peak RSS {peak / 1024:.0f} MiB, "
          f"{wall:.1f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--keep", type=Path, help="folder to keep the spans and traces files in")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="hoprag-otel-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    spans = folder / "spans.jsonl"
    count = write_spans(spans, args.traces)
    hoprag = Path(sys.executable).with_name("hoprag")
    measure(hoprag, spans, folder / "traces.jsonl", "OTLP JSON, one request per line", count)
    prompted = folder / "spans_prompted.jsonl"
    write_spans(prompted, args.traces, prompt=True)
    measure(hoprag, prompted, folder / "traces_prompted.jsonl", "OTLP JSON, the prompt holding the documents", count)
    stream, single = folder / "spans.binpb", folder / "spans.pb"
    if not write_protobuf(spans, stream, single):
        print("OTLP protobuf: skipped (pip install 'hoprag[otel]' for opentelemetry-proto)")
        return
    measure(hoprag, stream, folder / "traces.binpb.jsonl", "OTLP protobuf, length-prefixed requests", count)
    measure(hoprag, single, folder / "traces.pb.jsonl", "OTLP protobuf, one request", count)
    same = all((folder / name).read_text(encoding="utf-8").splitlines()[1:]
               == (folder / "traces.jsonl").read_text(encoding="utf-8").splitlines()[1:]
               for name in ("traces.binpb.jsonl", "traces.pb.jsonl"))
    print(f"traces from protobuf identical to those from JSON (header aside): {same}")


if __name__ == "__main__":
    main()
