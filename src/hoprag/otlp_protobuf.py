"""OTLP protobuf span files, read span by span in constant memory (``pip install 'hoprag[otel]'``).

Two layouts hold OpenTelemetry spans as protobuf:

* one serialized ``ExportTraceServiceRequest`` (what an SDK's ``SerializeToString()`` or protoc's
  encode mode writes; ``.pb`` / ``.binpb``);
* a stream of them, each preceded by its length as a 4-byte big-endian unsigned integer: the
  OpenTelemetry Collector file exporter's ``format: proto`` (its ``TracesData`` messages are
  wire-compatible with the request).

:func:`otlp_format` tells them from JSON by the first bytes, not the file name, and refuses what is
neither with the fix. :func:`iter_protobuf_spans` walks the wire format of the containers
(request → ``ResourceSpans`` → ``ScopeSpans``) itself and hands each ``Span`` message, decoded by the
official ``opentelemetry-proto`` classes, on as the OTLP JSON mapping of that span (hex ids, typed
``AnyValue``, only the attributes the caller keeps), so the JSON reader in :mod:`hoprag.otlp_spans`
makes the span record: one span model for both encodings. Only one span's bytes are held at a
time, so neither a stream of requests nor one request of 100,000 spans grows memory with the file.
The containers are expected in field order, as every OTLP serializer writes them (a resource after
its spans would leave those spans without a service name).
"""

from __future__ import annotations

import base64
import codecs
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from hoprag.errors import ConfigError, InputError
from hoprag.files import check_file

__all__ = ["INSTALL_FIX", "PROTOBUF_FIX", "Format", "iter_protobuf_spans", "otlp_format"]

Format = Literal["json", "protobuf", "delimited"]
INSTALL_FIX = "pip install 'hoprag[otel]' (it brings opentelemetry-proto), or export the spans as OTLP JSON"
PROTOBUF_FIX = ("pass OTLP JSON (one {\"resourceSpans\": [...]} request per line, or one document) or OTLP protobuf "
                "(one ExportTraceServiceRequest as SerializeToString() writes it, or the OpenTelemetry Collector file "
                "exporter's format: proto)")
_TRUNCATED_FIX = ("the file was cut short (a copy or an export that did not finish): export the spans again, or "
                  "let the Collector's file exporter close the file before reading it")
_ZSTD = b"\x28\xb5\x2f\xfd"
_GZIP = b"\x1f\x8b"
_SNIFF = 8192
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)  # the JSON reader names the encoding
# control bytes no text file holds (tab, newlines, form feed and escape excluded): a binary file has them
_CONTROL = bytes([*range(0, 9), *range(14, 27), *range(28, 32)])
_LEN, _VARINT, _FIXED64, _FIXED32 = 2, 0, 1, 5
_JSON_NAMES = {"string_value": "stringValue", "bool_value": "boolValue", "int_value": "intValue",
               "double_value": "doubleValue"}


def otlp_format(path: str | Path, what: str) -> Format:
    """How ``path`` holds its spans, from its first bytes: ``json`` (text, including every file the JSON
    reader names the fault of: empty, another encoding), one protobuf request, or ``delimited`` requests."""
    path = check_file(path, what)
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(_SNIFF)
    if not head or head.startswith(_BOMS) or head.lstrip(b" \t\r\n")[:1] in (b"{", b"["):
        return "json"
    source = str(path)
    if head.startswith(_GZIP):
        raise InputError("is gzip-compressed", source=source, fix=f"decompress it first: gunzip -k {path}")
    if head.startswith(_ZSTD):
        raise InputError("is zstd-compressed", source=source, fix=f"decompress it first: zstd -d {path}")
    binary = any(byte in _CONTROL for byte in head)
    if head[0] == 0x0A and binary:  # field 1 (resource_spans), length-delimited; else text after an empty line
        return "protobuf"
    length = int.from_bytes(head[:4], "big")
    # a request's first byte after its length; a first request cut short still shows a length under 16 MB
    if len(head) > 4 and 0 < length and (head[4] == 0x0A or head[4:8] == _ZSTD) and (length <= size - 4 or
                                                                                     head[0] == 0):
        return "delimited"
    if not binary:
        return "json"  # text: the JSON reader says what kind of text it is not
    raise InputError(f"this is not OTLP: neither JSON nor an OTLP protobuf request (it starts with bytes "
                     f"{head[:8].hex(' ')})", source=source,
                     fix=f"{PROTOBUF_FIX}; check `file {path}`: is it compressed, or the wrong file?")


def iter_protobuf_spans(path: str | Path, keep: Callable[[str], bool], *,
                        delimited: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """(service name, span as its OTLP JSON mapping) of every span of a protobuf file, in file order.

    ``keep``: which attribute keys to convert (the rest are dropped as read); ``delimited``: the file is a
    stream of length-prefixed requests (see :func:`otlp_format`), else one request."""
    schema = _schema()
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as handle:
        reader = _Reader(handle, str(path), size)
        if not delimited:
            yield from _request(reader, size, schema, keep)
            return
        number = 0
        while reader.pos < size:
            number += 1
            if size - reader.pos < 4:
                raise reader.truncated(f"request {number} at byte {reader.pos} has {size - reader.pos} of the 4 "
                                       f"bytes of its length")
            length = int.from_bytes(reader.take(4, size), "big")
            start = reader.pos
            if start + length > size:
                raise reader.truncated(f"request {number} at byte {start - 4} says it holds {length} bytes; the file "
                                       f"ends {size - start} bytes later")
            if length >= 4 and reader.take(4, size) == _ZSTD:
                raise InputError(f"request {number} is zstd-compressed (the Collector's file exporter with "
                                 f"compression: zstd)", source=reader.source,
                                 fix="configure the file exporter without compression (format: proto or json)")
            reader.seek(start)
            yield from _request(reader, start + length, schema, keep)
            reader.seek(start + length)


@dataclass(frozen=True)
class _Schema:
    """The span and resource message classes and the field numbers of the containers that hold them."""

    span: Any
    resource: Any
    resource_spans: int  # ExportTraceServiceRequest (and TracesData) → ResourceSpans
    resource_field: int  # ResourceSpans → Resource
    scope_spans: int  # ResourceSpans → ScopeSpans
    spans: int  # ScopeSpans → Span


def _schema() -> _Schema:
    """The classes and field numbers, from the official package's descriptors."""
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        from opentelemetry.proto.resource.v1.resource_pb2 import Resource
        from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
    except ImportError:
        raise ConfigError("reading OTLP protobuf spans needs the opentelemetry-proto package. "
                          f"Fix: {INSTALL_FIX}") from None

    def number(message: Any, name: str) -> int:
        return int(message.DESCRIPTOR.fields_by_name[name].number)

    return _Schema(span=Span, resource=Resource, resource_spans=number(ExportTraceServiceRequest, "resource_spans"),
                   resource_field=number(ResourceSpans, "resource"), scope_spans=number(ResourceSpans, "scope_spans"),
                   spans=number(ScopeSpans, "spans"))


class _Reader:
    """Sequential reads of a protobuf file that know their byte offset and refuse to run past a bound."""

    def __init__(self, handle: BinaryIO, source: str, size: int) -> None:
        self.handle, self.source, self.size, self.pos = handle, source, size, 0

    def take(self, count: int, end: int) -> bytes:
        self.within(self.pos + count, end)
        data = self.handle.read(count)
        if len(data) < count:  # the file shrank while it was read
            raise self.truncated(f"the file ends at byte {self.pos + len(data)}")
        self.pos += count
        return data

    def varint(self, end: int) -> int:
        value = shift = 0
        while True:
            byte = self.take(1, end)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise self.corrupt(f"a varint at byte {self.pos} runs past 10 bytes")

    def seek(self, pos: int) -> None:
        if pos != self.pos:
            self.handle.seek(pos)
            self.pos = pos

    def within(self, stop: int, end: int) -> None:
        if stop > self.size:
            raise self.truncated(f"a field at byte {self.pos} runs {stop - self.size} bytes past the end of the file")
        if stop > end:
            raise self.corrupt(f"a field at byte {self.pos} runs past the message that holds it")

    def truncated(self, why: str) -> InputError:
        return InputError(f"is an OTLP protobuf file cut short: {why}", source=self.source, fix=_TRUNCATED_FIX)

    def corrupt(self, why: str) -> InputError:
        return InputError(f"this is not OTLP protobuf spans (an ExportTraceServiceRequest): {why}", source=self.source,
                          fix=f"{PROTOBUF_FIX}; an OTLP metrics or logs file holds no spans")


def _fields(reader: _Reader, end: int) -> Iterator[tuple[int, int]]:
    """(field number, length) of each length-delimited field before ``end``, the reader at its content
    (read it, walk it or leave it: the next field is found after it); other wire types are skipped."""
    while reader.pos < end:
        key = reader.varint(end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise reader.corrupt(f"field number 0 at byte {reader.pos}")
        if wire == _LEN:
            length = reader.varint(end)
            stop = reader.pos + length
            reader.within(stop, end)
            yield number, length
            reader.seek(stop)
        elif wire == _VARINT:
            reader.varint(end)
        elif wire in (_FIXED64, _FIXED32):
            reader.take(8 if wire == _FIXED64 else 4, end)
        else:  # groups (3, 4) are not in OTLP; 6 and 7 are no wire type at all
            raise reader.corrupt(f"wire type {wire} at byte {reader.pos}")


def _request(reader: _Reader, end: int, schema: _Schema,
             keep: Callable[[str], bool]) -> Iterator[tuple[str, dict[str, Any]]]:
    for field, length in _fields(reader, end):
        if field != schema.resource_spans:
            continue
        service = ""
        for inner, inner_length in _fields(reader, reader.pos + length):
            if inner == schema.resource_field:
                service = _service(_decode(schema.resource, reader, inner_length, "resource"))
            elif inner == schema.scope_spans:
                for leaf, leaf_length in _fields(reader, reader.pos + inner_length):
                    if leaf == schema.spans:
                        yield service, _span_json(_decode(schema.span, reader, leaf_length, "span"), keep, reader)


def _decode(cls: Any, reader: _Reader, length: int, what: str) -> Any:
    from google.protobuf.message import DecodeError

    at = reader.pos
    data = reader.take(length, reader.pos + length)
    try:
        return cls.FromString(data)
    except DecodeError as exc:
        raise reader.corrupt(f"the {what} at byte {at} does not decode ({exc})") from None


def _service(resource: Any) -> str:
    for item in resource.attributes:
        if item.key == "service.name":
            return str(item.value.string_value)
    return ""


def _span_json(span: Any, keep: Callable[[str], bool], reader: _Reader) -> dict[str, Any]:
    """The OTLP JSON mapping of one span: ids as hex, times as integers, the kept attributes."""
    attributes = []
    for item in span.attributes:
        if keep(item.key):
            try:
                attributes.append({"key": item.key, "value": _any_value(item.value)})
            except ValueError as exc:
                raise InputError(f"span {span.span_id.hex()}: attribute {item.key} holds {exc}, not a finite number",
                                 source=reader.source, fix="record finite numbers (a score that is NaN or "
                                 "infinite ranks nowhere)") from None
    return {"traceId": span.trace_id.hex(), "spanId": span.span_id.hex(), "parentSpanId": span.parent_span_id.hex(),
            "name": span.name, "startTimeUnixNano": span.start_time_unix_nano,
            "endTimeUnixNano": span.end_time_unix_nano, "attributes": attributes}


def _any_value(value: Any) -> dict[str, Any]:
    """An ``AnyValue`` as OTLP JSON writes it (bytes as base64); raises ValueError for a non-finite double."""
    kind = value.WhichOneof("value")
    if kind in _JSON_NAMES:
        held = getattr(value, kind)
        if kind == "double_value" and not math.isfinite(held):
            raise ValueError(repr(held))
        return {_JSON_NAMES[kind]: held}
    if kind == "array_value":
        return {"arrayValue": {"values": [_any_value(v) for v in value.array_value.values]}}
    if kind == "kvlist_value":
        return {"kvlistValue": {"values": [{"key": kv.key, "value": _any_value(kv.value)}
                                           for kv in value.kvlist_value.values]}}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
    return {}  # unset, or a dictionary index (profiles only): no value
