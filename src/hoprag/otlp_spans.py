"""The spans of an OTLP JSON file, read as a stream and kept small.

Input is the ``resourceSpans → scopeSpans → spans`` shape the OTLP file and JSON exporters write:
one export request per line (read one line at a time, so memory does not grow with the file), or
one whole document (read whole: write one request per line for large files). Ids may be hex (OTLP
JSON) or base64 (protobuf's JSON mapping). A protobuf file (one request, or the Collector's
length-prefixed stream) is told apart by its first bytes and read span by span by
:mod:`hoprag.otlp_protobuf`, which hands each span on in the JSON mapping read here. Of each span
only the attributes the trace import reads are kept (:func:`kept`), so 100,000 spans of a framework
that records every step take tens of megabytes, not the file's size. The console exporter's output
(one pretty-printed span after another) is named as such, with the fix.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.files import open_text, read_text
from hoprag.finite_numbers import NumberError, refusal
from hoprag.finite_numbers import loads as finite_loads  # json.loads under the number rule
from hoprag.jsonl import iter_jsonl_dicts, parse_json
from hoprag.otlp_protobuf import PROTOBUF_FIX, iter_protobuf_spans, otlp_format

__all__ = ["KIND", "SHAPE_FIX", "WHAT", "OtelSpan", "iter_otlp_spans", "kept"]

WHAT = "OTLP spans file"
KIND = "openinference.span.kind"
SHAPE_FIX = ("export spans as OTLP JSON (the OpenTelemetry Collector's file exporter, or an OTLP JSON exporter): "
             "one {\"resourceSpans\": [...]} object per line, or one such document")
_CONSOLE_FIX = ("this is the console exporter's output (ConsoleSpanExporter), not OTLP: export with the OTLP "
                "exporter to a Collector whose file exporter writes OTLP JSON, or write the SDK's spans with "
                "opentelemetry.exporter.otlp.proto.common's encode_spans as JSON, one request per line")
# Attributes the import reads; the rest (embeddings, framework internals) are dropped as read. An LLM
# call's prompt is kept: the documents it holds are the selected evidence (hoprag.otel_evidence).
_KEEP = {KIND, "input.value", "input.mime_type", "output.value", "output.mime_type", "session.id", "metadata",
         "tag.tags", "user.id", "llm.output_messages.0.message.content", "llm.token_count.prompt",
         "llm.token_count.completion", "llm.prompts", "llm.prompt_template.variables"}
_READ_IO = {"RETRIEVER", "LLM", "RERANKER"}
_KEEP_PREFIXES = ("retrieval.documents.", "reranker.output_documents.", "gen_ai.", "hoprag.", "llm.input_messages.",
                  "llm.prompts.")


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
        """The OpenInference span kind, or the one a GenAI ``gen_ai.operation.name`` means."""
        kind = str(self.attributes.get(KIND) or "").upper()
        if kind:
            return kind
        operation = self.attributes.get("gen_ai.operation.name")
        if operation == "retrieval" or (operation == "execute_tool" and "hoprag.hop" in self.attributes):
            return "RETRIEVER"
        if operation in ("chat", "text_completion", "generate_content"):
            return "LLM"
        return ""


def kept(key: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether the import reads attribute ``key`` (``extra``: case attributes a caller names)."""
    return key in _KEEP or key in extra or key.startswith(_KEEP_PREFIXES)


def iter_otlp_spans(path: str | Path, *, extra: frozenset[str] = frozenset()) -> Iterator[OtelSpan]:
    """Every span of an OTLP JSON file, in file order (see the module docstring)."""
    path = Path(path)
    source = str(path)
    form = otlp_format(path, WHAT)
    if form != "json":  # protobuf spans arrive in the JSON mapping, so one reader makes every span record
        count = 0
        for service, raw in iter_protobuf_spans(path, lambda key: kept(key, extra), delimited=form == "delimited"):
            count += 1
            yield _span(raw, service, source, None, extra)
        if not count:
            raise InputError("holds no spans", source=source, fix=PROTOBUF_FIX)
        return
    with open_text(path, WHAT) as lines:
        first = next((line for line in lines if line.strip()), "")
        if not first:
            raise InputError("holds no spans", source=source, fix=SHAPE_FIX)
        try:
            whole = not isinstance(finite_loads(first), dict)  # a list is refused as a document is
        except NumberError:
            whole = False  # the line reader names the line and the field
        except (ValueError, RecursionError):
            whole = True
        if not whole:
            count = 0
            for line, request in iter_jsonl_dicts(_chain(first, lines), source=source):
                for span in _request_spans(request, source, line, extra):
                    count += 1
                    yield span
            if not count:
                raise InputError("holds no spans", source=source, fix=SHAPE_FIX)
            return
    yield from _document_spans(path, extra)


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def _document_spans(path: Path, extra: frozenset[str]) -> Iterator[OtelSpan]:
    """One pretty-printed document, read whole."""
    source = str(path)
    text = read_text(path, WHAT)
    try:
        request = finite_loads(text)
    except NumberError:  # one document holding NaN or 1e400 (hoprag.finite_numbers)
        raise refusal(text, source=source) from None
    except (ValueError, RecursionError):
        if re.search(r'"context":\s*\{\s*"trace_id":\s*"0x', text):
            raise InputError("not OTLP JSON", source=source, fix=_CONSOLE_FIX) from None
        parse_json(text, source=source, fix=SHAPE_FIX)  # names the line and column
        raise InputError("is not JSON", source=source, fix=SHAPE_FIX) from None
    if "\\u" in text:  # refuses half a surrogate pair, which could never be written out again
        parse_json(text, source=source, fix=SHAPE_FIX)
    spans = list(_request_spans(request, source, 1, extra))
    if not spans:
        raise InputError("holds no spans", source=source, fix=SHAPE_FIX)
    yield from spans


def _request_spans(request: Any, source: str, line: int, extra: frozenset[str]) -> Iterator[OtelSpan]:
    if not isinstance(request, dict):
        raise InputError(f"expected an OTLP JSON object, got {type(request).__name__}", source=source, line=line,
                         fix=SHAPE_FIX)
    resource_spans = _first(request, "resourceSpans", "resource_spans")
    if resource_spans is None:
        keys = ", ".join(sorted(request)[:5]) or "none"
        if isinstance(request.get("context"), dict) and "trace_id" in request["context"]:
            raise InputError(f"not OTLP JSON: a console exporter span (keys: {keys})", source=source, line=line,
                             fix=_CONSOLE_FIX)
        raise InputError(f"not OTLP JSON: no 'resourceSpans' (keys: {keys})", source=source, line=line, fix=SHAPE_FIX)
    for resource in _list(resource_spans, "resourceSpans", source, line):
        described = resource.get("resource")
        resource_attrs = _attributes(described.get("attributes") if isinstance(described, dict) else None,
                                     source, line, None)
        service = str(resource_attrs.get("service.name") or "")
        scopes = _first(resource, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") or []
        for scope in _list(scopes, "scopeSpans", source, line):
            for raw in _list(scope.get("spans") or [], "spans", source, line):
                yield _span(raw, service, source, line, extra)


def _span(raw: dict[str, Any], service: str, source: str, line: int | None, extra: frozenset[str]) -> OtelSpan:
    trace_id = _first(raw, "traceId", "trace_id")
    span_id = _first(raw, "spanId", "span_id")
    if not trace_id or not span_id:
        raise InputError("a span has no traceId or spanId", source=source, line=line, field="spans", fix=SHAPE_FIX)
    try:
        start = int(_first(raw, "startTimeUnixNano", "start_time_unix_nano") or 0)
        end = int(_first(raw, "endTimeUnixNano", "end_time_unix_nano") or start)
        if not (0 <= start < 2**64 and 0 <= end < 2**64):  # fixed64 in OTLP
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"span {span_id}: startTimeUnixNano/endTimeUnixNano are not nanoseconds since the epoch",
                         source=source, line=line, fix="write times as integers from 0 to 2^64 - 1") from None
    span = OtelSpan(trace_id=_hex_id(trace_id), span_id=_hex_id(span_id),
                    parent_id=_hex_id(_first(raw, "parentSpanId", "parent_span_id") or ""),
                    name=str(raw.get("name") or ""), start_ns=start, end_ns=max(end, start),
                    attributes=_attributes(raw.get("attributes"), source, line, extra), service=service)
    if span.parent_id and span.kind not in _READ_IO:  # a framework step's input and output: never read
        span.attributes.pop("input.value", None)
        span.attributes.pop("output.value", None)
    return span


def _first(obj: dict[str, Any], *keys: str) -> Any:
    return next((obj[k] for k in keys if k in obj), None)


def _list(value: Any, name: str, source: str, line: int) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"'{name}' is not a list of objects", source=source, line=line, fix=SHAPE_FIX)
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


def _attributes(items: Any, source: str, line: int, extra: frozenset[str] | None) -> dict[str, Any]:
    """``extra`` None keeps every attribute (a resource's); otherwise those :func:`kept` names."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise InputError("'attributes' is not a list of {key, value}", source=source, line=line, fix=SHAPE_FIX)
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise InputError("an attribute is not a {key, value} object", source=source, line=line, fix=SHAPE_FIX)
        key = item["key"]
        if extra is None or kept(key, extra):
            out[key] = _value(item.get("value"))
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
