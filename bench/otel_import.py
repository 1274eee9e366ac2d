"""Bench: ``hoprag traces import`` on a generated OTLP JSON file of 100,000 spans, peak memory and time.

The file holds 20,000 traces of five spans, one export request per trace per line (as the
OpenTelemetry Collector's file exporter writes them): a question (``hoprag.case_id``, the enterprise
cases in turn), two OpenInference retrievals of six documents each with their text (about 450
characters) and metadata, an embedding (64 floats, never read) and an LLM span with a long prompt
and the answer. The command runs in a child process under ``/usr/bin/time -v``.

    python bench/otel_import.py [--traces 20000] [--keep DIR]

The issue's bar: 100k spans import in <= 200 MB peak memory.
"""

from __future__ import annotations

import argparse
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


def write_spans(path: Path, traces: int, seed: int = 7) -> int:
    """Write the file; returns the number of spans."""
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [json.loads(line)["id"] for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    rnd = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(traces):
            case, trace_id, root = cases[n % len(cases)], f"{n + 1:032x}", f"{n * 8 + 1:016x}"
            start = 1_700_000_000_000_000_000 + n * 10_000_000
            spans = []

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
                span(f"{n * 8 + 2 + hop:016x}", root, "retrieve", attrs, 100 + hop * 1000, 900)
            span(f"{n * 8 + 4:016x}", root, "embed",
                 [_attr("openinference.span.kind", "EMBEDDING"),
                  _attr("embedding.embeddings.0.embedding.vector", json.dumps([rnd.random() for _ in range(64)]))],
                 50, 40)
            span(f"{n * 8 + 5:016x}", root, "llm",
                 [_attr("openinference.span.kind", "LLM"), _attr("input.value", FILLER * 3),
                  _attr("llm.output_messages.0.message.content", case["answers"][0]),
                  _attr("llm.token_count.prompt", 300), _attr("llm.token_count.completion", 4)], 2500, 500)
            span(root, "", "query", [_attr("openinference.span.kind", "CHAIN"), _attr("input.value", case["query"]),
                                     _attr("hoprag.case_id", case["case_id"])], 0, 4000)
            handle.write(json.dumps({"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "gen")]},
                                                        "scopeSpans": [{"scope": {"name": "gen"},
                                                                        "spans": spans}]}]}) + "\n")
    return traces * 5


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
    began = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", str(hoprag), "traces", "import", str(spans), "--out",
                           str(folder / "traces.jsonl")], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - began
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    print(done.stdout.strip())
    print(f"{count} spans, {spans.stat().st_size / 1e6:.0f} MB: peak RSS {peak / 1024:.0f} MiB, {wall:.1f} s wall")


if __name__ == "__main__":
    main()
