"""Per-case scores of ``hoprag eval`` as OpenTelemetry evaluation events, attached to the traces they score.

What is followed (OpenTelemetry GenAI semantic conventions, event ``gen_ai.evaluation.result``,
``docs/gen-ai/gen-ai-events.md`` of open-telemetry/semantic-conventions-genai, status Development):

* an event is a **log record** whose ``eventName`` is ``gen_ai.evaluation.result`` (the logs data
  model's events, not span events), sent as an OTLP ``ExportLogsServiceRequest``;
* it "SHOULD be parented to the GenAI operation span being evaluated": its ``traceId`` and ``spanId``
  are those of the question's root span in the trace the scored hoprag trace came from
  (``plan.otel_trace_id`` / ``plan.otel_span_id``: kept by ``hoprag traces import``, and by
  ``hoprag run`` when it records spans). A trace without them gets records with no ids, found by
  their ``hoprag.case_id`` and ``hoprag.run_id`` attributes;
* attributes: ``gen_ai.evaluation.name`` (required), ``gen_ai.evaluation.score.value`` (a double),
  ``gen_ai.evaluation.score.label`` (low cardinality) and ``gen_ai.evaluation.explanation``.

Per scored case (a case without a trace has nothing to attach to and gets no record), in this order:
``chain_coverage@k`` and ``passage_recall@k`` for each cut-off of the run, ``answer_em`` (label
``correct`` / ``incorrect``) and ``answer_f1`` when the case has a gold answer, and
``earliest_failure``: no value, the failure class as the label (``passed`` when the case passed;
the classes of :mod:`hoprag.evaluation.failures`) and its detail as the explanation. Values are the
very numbers of ``hoprag eval --json``'s ``cases``.

The same fields are what Arize Phoenix calls a span annotation (name, score, label, explanation,
span id; annotator kind ``CODE``). Phoenix takes annotations over its own REST API, not as OTLP
logs, so these records reach it only through a collector that converts them.

Requests hold at most :data:`BATCH` records. A file (:func:`write_otlp_file`) holds one request per
line in the OTLP JSON encoding (ids as hex), as the collector's ``otlpjsonfile`` receiver reads;
an endpoint (:func:`send_otlp`) gets each request as binary protobuf over OTLP/HTTP, every
connection and read inside one deadline (:mod:`hoprag.llm.deadline`).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hoprag import __version__
from hoprag.errors import ConfigError, ExportError
from hoprag.records import Trace

__all__ = ["BATCH", "EVENT", "CaseResults", "EvaluationResult", "ScoreEvents", "case_results", "check_endpoint",
           "logs_requests", "otlp_logs_url", "send_otlp", "to_protobuf", "trace_origin", "write_otlp_file"]

EVENT = "gen_ai.evaluation.result"
#: records per request: a large evaluation stays under receivers' request size limits (the collector's 4 MiB gRPC default)
BATCH = 500
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class EvaluationResult:
    """One ``gen_ai.evaluation.result``: a measure's name and its value, label or explanation."""

    name: str
    value: float | None = None
    label: str | None = None
    explanation: str | None = None


@dataclass(frozen=True)
class CaseResults:
    """The results of one scored case and the span they belong to (ids empty: none recorded)."""

    case_id: str
    run_id: str
    trace_id: str
    span_id: str
    results: tuple[EvaluationResult, ...]


def trace_origin(trace: Trace) -> tuple[str, str]:
    """The trace id and span id ``trace`` came from (32 and 16 lowercase hex), or empty strings."""
    trace_id = str(trace.plan.get("otel_trace_id") or "").lower()
    span_id = str(trace.plan.get("otel_span_id") or "").lower()
    if not _TRACE_ID.match(trace_id) or not trace_id.strip("0"):
        return "", ""
    return trace_id, span_id if _SPAN_ID.match(span_id) and span_id.strip("0") else ""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def case_results(cases: Iterable[Mapping[str, Any]], traces: Mapping[str, Trace],
                 ks: Sequence[int]) -> list[CaseResults]:
    """The results of each case of an evaluation (``report.to_json()["cases"]``) that has a scored trace
    (``report.traces``), in the evaluation's order."""
    made = []
    for row in cases:
        trace = traces.get(str(row.get("case_id")))
        if trace is None or row.get("missing_trace"):
            continue
        results = [EvaluationResult(f"{measure}@{k}", value)
                   for measure in ("chain_coverage", "passage_recall") for k in ks
                   if (value := _number(row.get(f"{measure}@{k}"))) is not None]
        em, f1 = _number(row.get("answer_em")), _number(row.get("answer_f1"))
        if em is not None:
            results.append(EvaluationResult("answer_em", em, "correct" if em >= 1.0 else "incorrect"))
        if f1 is not None:
            results.append(EvaluationResult("answer_f1", f1))
        failure = row.get("failure")
        results.append(EvaluationResult("earliest_failure", None, str(failure) if failure else "passed",
                                        str(row.get("failure_detail") or "") or None))
        trace_id, span_id = trace_origin(trace)
        made.append(CaseResults(str(row["case_id"]), trace.run_id, trace_id, span_id, tuple(results)))
    return made


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _record(case: CaseResults, result: EvaluationResult, now: str) -> dict[str, Any]:
    attributes = [_attribute("gen_ai.evaluation.name", result.name)]
    if result.value is not None:
        attributes.append(_attribute("gen_ai.evaluation.score.value", result.value))
    if result.label is not None:
        attributes.append(_attribute("gen_ai.evaluation.score.label", result.label))
    if result.explanation is not None:
        attributes.append(_attribute("gen_ai.evaluation.explanation", result.explanation))
    attributes += [_attribute("hoprag.case_id", case.case_id), _attribute("hoprag.run_id", case.run_id)]
    record: dict[str, Any] = {"timeUnixNano": now, "observedTimeUnixNano": now, "eventName": EVENT,
                              "attributes": attributes}
    if case.trace_id:
        record["traceId"] = case.trace_id
        if case.span_id:
            record["spanId"] = case.span_id
    return record


def logs_requests(cases: Sequence[CaseResults], *, time_ns: int | None = None,
                  batch: int = BATCH) -> list[dict[str, Any]]:
    """OTLP JSON ``ExportLogsServiceRequest`` documents holding every result, ``batch`` records each."""
    now = str(time.time_ns() if time_ns is None else time_ns)  # int64 fields are strings in OTLP JSON
    records = [_record(case, result, now) for case in cases for result in case.results]
    resource = {"attributes": [_attribute("service.name", "hoprag")]}
    scope = {"name": "hoprag.eval", "version": __version__}
    return [{"resourceLogs": [{"resource": resource, "scopeLogs": [{"scope": scope,
                                                                   "logRecords": records[i:i + batch]}]}]}
            for i in range(0, len(records), batch)]


@dataclass(frozen=True)
class ScoreEvents:
    """An evaluation's results as OTLP logs requests, and what they hold (for the CLI's line)."""

    cases: tuple[CaseResults, ...]
    requests: tuple[dict[str, Any], ...]

    @classmethod
    def of(cls, payload: Mapping[str, Any], traces: Mapping[str, Trace]) -> ScoreEvents:
        """From ``hoprag eval``'s JSON (``cases``, ``config.ks``) and the scored traces (``report.traces``)."""
        cases = tuple(case_results(payload["cases"], traces, payload["config"]["ks"]))
        return cls(cases, tuple(logs_requests(cases)))

    def summary(self) -> str:
        events = sum(len(c.results) for c in self.cases)
        attached = sum(1 for c in self.cases if c.trace_id)
        loose = len(self.cases) - attached
        return (f"{events} evaluation events for {len(self.cases)} traced cases ({attached} on their trace's span"
                + (f", {loose} without OpenTelemetry ids: found by hoprag.case_id" if loose else "") + ")")


def write_otlp_file(path: str | Path, requests: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``requests`` to ``path``, one per line (atomically, never over an input: :mod:`hoprag.io.outputs`)."""
    from hoprag.io.kinds import OTLP_JSON
    from hoprag.io.outputs import write_text

    text = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
                   for r in requests)
    return write_text(path, text, OTLP_JSON, what="--otel-out")


def _with_base64_ids(value: Any) -> Any:
    """The request in protobuf's own JSON mapping: OTLP JSON writes ids as hex, protobuf reads bytes as base64."""
    if isinstance(value, list):
        return [_with_base64_ids(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId") else _with_base64_ids(v)
            for k, v in value.items()}


def to_protobuf(request: Mapping[str, Any]) -> bytes:
    """The binary protobuf of one OTLP JSON logs request (needs opentelemetry-proto: ``hoprag[otel]``)."""
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    except ImportError:
        raise ConfigError("--otel-endpoint sends OTLP protobuf, and opentelemetry-proto is not installed. "
                          "Fix: pip install 'hoprag[otel]', or write the records with --otel-out FILE") from None
    message = json_format.ParseDict(_with_base64_ids(request), ExportLogsServiceRequest())
    return message.SerializeToString()


def check_endpoint(url: str) -> str:
    """``--otel-endpoint``'s logs URL (:func:`otlp_logs_url`), once protobuf encoding is known to be available:
    both are said before anything is scored."""
    logs_url = otlp_logs_url(url)
    to_protobuf({})
    try:
        import httpx  # noqa: F401 - what send_otlp posts with
    except ImportError:
        raise ConfigError("--otel-endpoint needs httpx, which is not installed. Fix: pip install 'hoprag[otel]', "
                          "or write the records with --otel-out FILE") from None
    return logs_url


def otlp_logs_url(url: str) -> str:
    """The logs URL of an OTLP/HTTP endpoint: as given when it ends in ``/v1/logs``, else with it appended
    (as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is read). A URL that is not http(s) with a host is a ConfigError."""
    from hoprag.llm.base_url import check_base_url

    text = check_base_url(url, flag="--otel-endpoint", fix="give the OTLP/HTTP receiver as http://HOST:PORT, e.g. "
                          "--otel-endpoint http://127.0.0.1:4318 (/v1/logs is added)")
    parts = urlsplit(text)
    path = parts.path.rstrip("/")
    return urlunsplit(parts._replace(path=path if path.endswith("/v1/logs") else f"{path}/v1/logs"))


def send_otlp(url: str, requests: Sequence[Mapping[str, Any]], *, timeout: float = 10.0,
              written: str = "") -> int:
    """POST each request to the OTLP/HTTP logs ``url`` as protobuf, all within ``timeout`` seconds; the
    number of records sent. Refusal, no answer, or no connection is one :class:`ExportError`
    (``written`` says where the results are safe, for its message)."""
    import httpx

    from hoprag.llm.deadline import bounded, http_client
    from hoprag.security.boundary import shown

    bodies = [to_protobuf(r) for r in requests]
    sent = 0
    safe = f"; {written}" if written else ""
    where = shown(url, "url")
    try:
        with bounded(time.monotonic() + timeout, timeout), http_client(url, timeout=timeout) as client:
            for body, request in zip(bodies, requests):
                response = client.post(url, content=body, headers={"Content-Type": "application/x-protobuf"})
                if not 200 <= response.status_code < 300:
                    raise ExportError(
                        f"--otel-endpoint {where} refused the evaluation events (HTTP {response.status_code}: "
                        f"{response.text[:200]!r}) after {sent} of them were accepted{safe}. Fix: check that the URL "
                        "is an OTLP/HTTP receiver's (a collector's port 4318) and that it accepts logs")
                sent += sum(len(s["logRecords"]) for r in request["resourceLogs"] for s in r["scopeLogs"])
    except httpx.TimeoutException:
        raise ExportError(f"--otel-endpoint {where} did not answer within {timeout:g} s ({sent} evaluation events "
                          f"sent){safe}. Fix: check that an OTLP/HTTP receiver is running there, or allow it longer "
                          "with --otel-timeout SECONDS") from None
    except httpx.TransportError as exc:
        raise ExportError(f"--otel-endpoint {where} could not be reached ({type(exc).__name__}: {exc}){safe}. Fix: "
                          "start the OTLP/HTTP receiver (a collector listens on port 4318) or correct the URL") from None
    return sent
