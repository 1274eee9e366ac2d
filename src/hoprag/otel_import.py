"""Another framework's OpenTelemetry spans as hoprag Traces, so ``hoprag eval`` can score its pipeline.

Input is OTLP JSON, the ``resourceSpans → scopeSpans → spans`` shape the OTLP file and JSON
exporters write: one export request per line, or one whole document. Spans are grouped by trace
id; in each trace

* every OpenInference retrieval span (``openinference.span.kind = RETRIEVER``) becomes one
  :class:`~hoprag.records.HopStep`, in start-time order (hop = its position, or ``hoprag.hop``):
  ``input.value`` is the query, ``retrieval.documents.N.document.id`` / ``.score`` / ``.content``
  give the hit of rank N+1 (document-level: no offsets, so a hit covers a fact of its document);
* the evidence is the retrieved documents in step order, then rank, each document once;
* the answer is the ``output.value`` (or ``llm.output_messages.0.message.content``) of the LLM span
  that ended last, else the root span's ``output.value``; token counts are summed over LLM spans;
* the case id is the first of ``case_attrs`` (default ``hoprag.case_id``, ``session.id``) found on
  the root span, then on any span.

Traces without a retrieval or LLM span (health checks, other requests) are skipped and counted.
What is written passes the redaction boundary (:mod:`hoprag.security.boundary`) like the traces of
``hoprag run``: PII becomes placeholders unless ``redact=False`` (``--no-redact``), credentials ``***``.
Every malformed input is an :class:`~hoprag.errors.InputError` naming the file, the line and the fix.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.finite_numbers import NumberError, refusal
from hoprag.finite_numbers import loads as finite_loads  # json.loads under the number rule
from hoprag.files import read_text
from hoprag.jsonl import iter_jsonl_dicts, parse_json
from hoprag.records import Answer, Evidence, Hit, HopStep, Trace, Usage

__all__ = ["DEFAULT_CASE_ATTRS", "ImportSummary", "OtelSpan", "import_otel_traces", "read_otlp_spans", "spans_to_traces"]

DEFAULT_CASE_ATTRS = ("hoprag.case_id", "session.id")
WHAT = "OTLP spans file"
_KIND = "openinference.span.kind"
_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|score|content)$")
_SHAPE_FIX = ("export spans as OTLP JSON (the OpenTelemetry Collector's file exporter, or an OTLP JSON exporter): "
              "one {\"resourceSpans\": [...]} object per line, or one such document")


@dataclass(frozen=True)
class OtelSpan:
    """The parts of one OTLP span the import reads; ``attributes`` hold plain Python values."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    service: str = ""

    @property
    def kind(self) -> str:
        return str(self.attributes.get(_KIND) or "").upper()


@dataclass(frozen=True)
class ImportSummary:
    """What an import read and wrote."""

    spans: int
    traces: int
    skipped: int
    out: Path


def read_otlp_spans(path: str | Path) -> list[OtelSpan]:
    """Every span of an OTLP JSON file (see the module docstring)."""
    path = Path(path)
    text = read_text(path, WHAT)
    try:
        records: Iterable[tuple[int, Any]] = [(1, finite_loads(text))]
    except NumberError:  # one document holding NaN or 1e400 (hoprag.finite_numbers)
        raise refusal(text, source=str(path)) from None
    except (ValueError, RecursionError):  # not one document: one export request per line
        records = iter_jsonl_dicts(text.splitlines(), source=str(path))
    else:
        if "\\u" in text:  # refuses half a surrogate pair, which could never be written out again
            parse_json(text, source=str(path), fix=_SHAPE_FIX)
    spans: list[OtelSpan] = []
    for line, request in records:
        spans.extend(_request_spans(request, str(path), line))
    if not spans:
        raise InputError("holds no spans", source=str(path), fix=_SHAPE_FIX)
    return spans


def _request_spans(request: Any, source: str, line: int) -> Iterator[OtelSpan]:
    if not isinstance(request, dict):
        raise InputError(f"expected an OTLP JSON object, got {type(request).__name__}", source=source, line=line,
                         fix=_SHAPE_FIX)
    resource_spans = _first(request, "resourceSpans", "resource_spans")
    if resource_spans is None:
        keys = ", ".join(sorted(request)[:5]) or "none"
        raise InputError(f"not OTLP JSON: no 'resourceSpans' (keys: {keys})", source=source, line=line, fix=_SHAPE_FIX)
    for resource in _list(resource_spans, "resourceSpans", source, line):
        described = resource.get("resource")
        resource_attrs = _attributes(described.get("attributes") if isinstance(described, dict) else None,
                                     source, line)
        service = str(resource_attrs.get("service.name") or "")
        scopes = _first(resource, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") or []
        for scope in _list(scopes, "scopeSpans", source, line):
            for raw in _list(scope.get("spans") or [], "spans", source, line):
                yield _span(raw, service, source, line)


def _span(raw: dict[str, Any], service: str, source: str, line: int) -> OtelSpan:
    trace_id = _first(raw, "traceId", "trace_id")
    span_id = _first(raw, "spanId", "span_id")
    if not trace_id or not span_id:
        raise InputError("a span has no traceId or spanId", source=source, line=line, field="spans", fix=_SHAPE_FIX)
    try:
        start = int(_first(raw, "startTimeUnixNano", "start_time_unix_nano") or 0)
        end = int(_first(raw, "endTimeUnixNano", "end_time_unix_nano") or start)
        if not (0 <= start < 2**64 and 0 <= end < 2**64):  # fixed64 in OTLP
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"span {span_id}: startTimeUnixNano/endTimeUnixNano are not nanoseconds since the epoch",
                         source=source, line=line, fix="write times as integers from 0 to 2^64 - 1") from None
    return OtelSpan(trace_id=_hex_id(trace_id), span_id=_hex_id(span_id),
                    parent_id=_hex_id(_first(raw, "parentSpanId", "parent_span_id") or ""),
                    name=str(raw.get("name") or ""), start_ns=start, end_ns=max(end, start),
                    attributes=_attributes(raw.get("attributes"), source, line), service=service)


def _first(obj: dict[str, Any], *keys: str) -> Any:
    return next((obj[k] for k in keys if k in obj), None)


def _list(value: Any, name: str, source: str, line: int) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"'{name}' is not a list of objects", source=source, line=line, fix=_SHAPE_FIX)
    return value


def _hex_id(value: Any) -> str:
    """Ids as hex: OTLP JSON writes hex, protobuf's JSON mapping base64; both name the same span."""
    text = str(value)
    if re.fullmatch(r"[0-9a-fA-F]+", text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except ValueError:
        return text


def _attributes(items: Any, source: str, line: int) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise InputError("'attributes' is not a list of {key, value}", source=source, line=line, fix=_SHAPE_FIX)
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise InputError("an attribute is not a {key, value} object", source=source, line=line, fix=_SHAPE_FIX)
        out[item["key"]] = _value(item.get("value"))
    return out


def _value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}`` and kin) as a Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:  # int64 is a JSON string in OTLP JSON
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_value(v) for v in _values(value["arrayValue"])]
    if "kvlistValue" in value:
        return {str(kv.get("key")): _value(kv.get("value")) for kv in _values(value["kvlistValue"])
                if isinstance(kv, dict)}
    return value.get("bytesValue")


def _values(holder: Any) -> list[Any]:
    values = holder.get("values") if isinstance(holder, dict) else None
    return values if isinstance(values, list) else []


def spans_to_traces(spans: Sequence[OtelSpan], *, case_attrs: Sequence[str] = DEFAULT_CASE_ATTRS,
                    run_id: str = "otel-import", source: str = WHAT) -> tuple[list[Trace], int]:
    """The Traces ``spans`` describe, in order of first start, and how many traces were skipped."""
    groups: dict[str, list[OtelSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        groups.setdefault(span.trace_id, []).append(span)
    traces, skipped = [], 0
    for trace_id, group in groups.items():
        if not any(s.kind in ("RETRIEVER", "LLM") for s in group):
            skipped += 1
            continue
        traces.append(_trace(trace_id, group, case_attrs, run_id, source))
    if not traces:
        raise InputError(f"none of its {len(groups)} traces has an OpenInference retrieval or LLM span", source=source,
                         fix="instrument the pipeline with OpenInference (openinference.span.kind = RETRIEVER / LLM)")
    return traces, skipped


def _trace(trace_id: str, spans: list[OtelSpan], case_attrs: Sequence[str], run_id: str, source: str) -> Trace:
    ids = {s.span_id for s in spans}
    root = next((s for s in spans if s.parent_id not in ids), spans[0])
    case_id = _case_id(root, spans, case_attrs)
    if not case_id:
        raise InputError(f"trace {trace_id} names no case: none of its spans has {' or '.join(case_attrs)}",
                         source=source, fix="set the case id as a span attribute, or name the attribute that holds "
                         "it with --case-attr NAME")
    start = min(s.start_ns for s in spans)
    steps, evidence, warnings, seen = [], [], [], set()
    retrievals = [s for s in spans if s.kind == "RETRIEVER"]
    for number, span in enumerate(retrievals, start=1):
        hits, texts = _hits(span, warnings)
        query = _text(span, "input.value")
        hop = span.attributes.get("hoprag.hop")
        step = HopStep(step_id=f"s{number}", hop=hop if isinstance(hop, int) and hop >= 1 else number,
                       sub_query=query, issued_query=query, hits=tuple(hits), selected=tuple(h.chunk_id for h in hits),
                       latency_ms=(span.end_ns - span.start_ns) / 1e6, cumulative_ms=(span.end_ns - start) / 1e6)
        steps.append(step)
        for hit in hits:
            if hit.doc_id not in seen:
                seen.add(hit.doc_id)
                evidence.append(Evidence(hit=hit, text=texts.get(hit.doc_id, ""), title="", hop=step.hop,
                                         step_id=step.step_id, sub_query=query))
    llms = sorted((s for s in spans if s.kind == "LLM"), key=lambda s: s.end_ns)
    answer = next((t for t in (_answer(s) for s in reversed(llms)) if t), "") or _text(root, "output.value")
    usage = Usage(prompt_tokens=sum(_tokens(s, "llm.token_count.prompt", "gen_ai.usage.input_tokens") for s in llms),
                  completion_tokens=sum(_tokens(s, "llm.token_count.completion", "gen_ai.usage.output_tokens")
                                        for s in llms))
    question = _text(root, "input.value") or (steps[0].sub_query if steps else "")
    return Trace(run_id=run_id, case_id=case_id, question=question, steps=tuple(steps), evidence=tuple(evidence),
                 answer=Answer(text=answer, abstained=not answer), stop_reason="answered" if answer else "no_answer",
                 usage=usage, engine=f"otel:{root.service or 'unknown'}", latency_ms=(max(s.end_ns for s in spans) - start) / 1e6,
                 plan={"otel_trace_id": trace_id}, warnings=tuple(warnings))


def _case_id(root: OtelSpan, spans: list[OtelSpan], case_attrs: Sequence[str]) -> str:
    for attr in case_attrs:
        for span in (root, *spans):
            value = span.attributes.get(attr)
            if value not in (None, ""):
                return str(value)
    return ""


def _hits(span: OtelSpan, warnings: list[str]) -> tuple[list[Hit], dict[str, str]]:
    docs: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        found = _DOC.match(key)
        if found:
            docs.setdefault(int(found.group(1)), {})[found.group(2)] = value
    hits, texts = [], {}
    for rank, index in enumerate(sorted(docs), start=1):
        doc = docs[index]
        if doc.get("id") in (None, ""):
            warnings.append(f"retrieval span '{span.name}': document {index} has no document.id and was skipped")
            continue
        try:
            score = float(doc.get("score") or 0.0)
        except (TypeError, ValueError, OverflowError):
            score = 0.0
        doc_id = str(doc["id"])
        hits.append(Hit(chunk_id=doc_id, doc_id=doc_id, score=score, rank=rank, retriever=span.name or "retriever"))
        texts.setdefault(doc_id, str(doc.get("content") or ""))
    return hits, texts


def _text(span: OtelSpan, key: str) -> str:
    """A string attribute; a JSON ``input.value`` (``input.mime_type`` application/json) gives its text field."""
    value = span.attributes.get(key)
    if value is None:
        return ""
    text = str(value)
    if span.attributes.get(key.replace(".value", ".mime_type")) == "application/json":
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict):
            for name in ("query", "question", "input", "output", "answer", "text"):
                if isinstance(data.get(name), str):
                    return data[name]
    return text


def _answer(span: OtelSpan) -> str:
    return _text(span, "output.value") or str(span.attributes.get("llm.output_messages.0.message.content") or "")


def _tokens(span: OtelSpan, *keys: str) -> int:
    for key in keys:
        value = span.attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def import_otel_traces(path: str | Path, out: str | Path, *, case_attrs: Sequence[str] = DEFAULT_CASE_ATTRS,
                       run_id: str = "otel-import", redact: bool = True) -> ImportSummary:
    """Read OTLP JSON spans from ``path`` and write their Traces to ``out`` (a traces file ``hoprag eval`` reads).

    ``redact``: PII in the written traces becomes placeholders (ids and offsets kept), as ``hoprag run`` does.
    """
    from hoprag.io.traces import TracesHeader, write_traces
    from hoprag.security.boundary import trace_for_storage

    path, out = Path(path), Path(out)
    spans = read_otlp_spans(path)
    traces, skipped = spans_to_traces(spans, case_attrs=case_attrs, run_id=run_id, source=str(path))
    header = TracesHeader(run_id=run_id, engine=traces[0].engine)
    # the one trace writer: never over an input, complete or absent
    write_traces(out, (trace_for_storage(t, "otel-import", redact=redact) for t in traces), header=header)
    return ImportSummary(spans=len(spans), traces=len(traces), skipped=skipped, out=out)

