"""OpenTelemetry spans for answered questions (``pip install 'hoprag[otel]'``); off, and free, by default.

:func:`record_trace` turns a finished :class:`~hoprag.records.Trace` into spans laid on its own
timings: one span for the question, one per stage (planning, retrieval, ranking, synthesis) and one
per hop (per retrieval step), with the GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``) and hoprag's own
attributes (``hoprag.hop``, ``hoprag.sub_query``, ``hoprag.issued_query``, ``hoprag.bridge``,
``hoprag.selected_ids``, ``hoprag.stop_reason``), and what ``hoprag traces import`` needs to give the
trace back (:mod:`hoprag.otel_round_trip`: the GenAI retrieval query and documents, the answer, the
selected evidence, claims and bridge states). Every text is redacted before it becomes an attribute
(:mod:`hoprag.security.boundary`: PII placeholders, credentials masked).
:func:`listener` is how an answer's spans are recorded: a listener for the engine's events
(:mod:`hoprag.pipeline.events`, the events the CLI's progress lines and the service's stream read
too) that notes when the plan was made, each hop started, the judge decided and the first token of
the answer came (span events on the question's span) and records the spans once ``AnswerReady``
brings the trace. ``hoprag ask`` and the service pass it to the engine; :func:`traced_engine` does
for a batch run (``hoprag run``), whose traces then name their question's span (``plan.otel_trace_id``
/ ``otel_span_id``) so ``hoprag eval --otel-out`` attaches scores to it. The service adds a span per
HTTP request (:mod:`hoprag.service.request_spans`).

Spans are recorded only when tracing is on: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, whose exporter then reads the standard ``OTEL_*``
variables, or a caller installed a tracer with :func:`use_tracer`. Otherwise every call returns at once
without importing OpenTelemetry.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hoprag.records import Trace

if TYPE_CHECKING:
    from hoprag.pipeline.events import EngineEvent, OnEvent

__all__ = ["enabled", "listener", "record_trace", "traced_engine", "traced_setup", "tracer", "use_tracer"]

_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_lock = threading.Lock()
_tracer: Any = None
_configured = False


def use_tracer(tracer: Any) -> None:
    """Record spans with ``tracer`` (an OpenTelemetry tracer); ``None`` turns recording off again."""
    global _tracer, _configured
    with _lock:
        _tracer, _configured = tracer, tracer is not None


def _get_tracer() -> Any:
    global _tracer, _configured
    if _configured:
        return _tracer
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true" or not any(os.environ.get(v) for v in _ENDPOINT_VARIABLES):
        return None
    with _lock:
        if not _configured:
            try:
                from opentelemetry import trace
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
                from opentelemetry.sdk.resources import Resource
                from opentelemetry.sdk.trace import TracerProvider
                from opentelemetry.sdk.trace.export import BatchSpanProcessor
            except ImportError:
                from hoprag.errors import ConfigError

                raise ConfigError("OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed. "
                                  "Fix: pip install 'hoprag[otel]', or unset the variable") from None
            provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "hoprag")}))
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            trace.set_tracer_provider(provider)
            _tracer, _configured = trace.get_tracer("hoprag"), True
    return _tracer


def enabled() -> bool:
    return _get_tracer() is not None


def tracer() -> Any:
    """The tracer spans are recorded with, or ``None`` when tracing is off."""
    return _get_tracer()


class _TracedEngine:
    """An engine whose every answer also leaves its spans (``hoprag run`` with tracing on)."""

    def __init__(self, engine: Any, model: str) -> None:
        self._engine = engine
        self._model = model

    def __getattr__(self, name: str) -> Any:  # name, config_hash and the rest are the engine's own
        return getattr(self._engine, name)

    def answer(self, question: str, *, case_id: str = "", run_id: str = "", on_event: OnEvent | None = None,
               tokens: bool = False) -> Trace:
        from hoprag.pipeline.events import fan_out

        spans = listener(self._model, {"hoprag.run_id": run_id})
        trace = self._engine.answer(question, case_id=case_id, run_id=run_id, on_event=fan_out(on_event, spans),
                                    tokens=tokens)
        ids = getattr(spans, "ids", None)
        if ids is None:
            return trace
        # the traces file says which spans the answer left, so eval --otel-out attaches its scores there
        from dataclasses import replace

        return replace(trace, plan={**trace.plan, "otel_trace_id": ids[0], "otel_span_id": ids[1]})


@dataclass(frozen=True)
class TracedSetup:
    """A worker's engine setup (e.g. an :class:`~hoprag.pipeline.engine_recipe.EngineRecipe`) whose
    engine records its spans when tracing is on in the worker; picklable when ``setup`` is."""

    setup: Callable[[], Any]
    model: str = "offline"

    def __call__(self) -> Any:
        return traced_engine(self.setup(), model=self.model)


def traced_setup(setup: Callable[[], Any], *, model: str = "offline") -> TracedSetup:
    """``setup`` whose engine is wrapped by :func:`traced_engine` where it is built (a Ray worker)."""
    return TracedSetup(setup, model)


def traced_engine(engine: Any, *, model: str = "offline") -> Any:
    """``engine`` itself when tracing is off; otherwise one that records each answer's spans."""
    return _TracedEngine(engine, model) if enabled() else engine


class _SpanEvents:
    """Notes when the engine's milestones happened; records the question's spans at ``AnswerReady``."""

    def __init__(self, model: str, attributes: dict[str, Any] | None) -> None:
        self.model = model
        self.attributes = attributes
        self.seen: list[tuple[int, EngineEvent]] = []
        self.first_token = False
        self.ids: tuple[str, str] | None = None

    def __call__(self, event: EngineEvent) -> None:
        from hoprag.pipeline.events import AnswerReady, HopStarted, JudgeDecided, PlanMade, Token

        if isinstance(event, AnswerReady):
            self.ids = record_trace(event.trace, model=self.model, attributes=self.attributes, events=self.seen)
        elif isinstance(event, (PlanMade, HopStarted, JudgeDecided)) or (isinstance(event, Token) and not self.first_token):
            self.first_token = self.first_token or isinstance(event, Token)
            self.seen.append((time.time_ns(), event))


def listener(model: str = "offline", attributes: dict[str, Any] | None = None) -> OnEvent | None:
    """A listener for one question's engine events that records its spans when it is answered
    (``attributes`` go on the question's span); ``None`` when tracing is off, so nothing is noted."""
    return _SpanEvents(model, attributes) if enabled() else None


def _event_span(event: EngineEvent) -> tuple[str, dict[str, Any]]:
    """The span event an engine event becomes (no query text: it may hold PII)."""
    from hoprag.pipeline.events import HopStarted, JudgeDecided, PlanMade

    if isinstance(event, PlanMade):
        return "hoprag.plan", {"hoprag.planner": event.planner, "hoprag.sub_queries": len(event.sub_queries)}
    if isinstance(event, HopStarted):
        return "hoprag.hop_started", {"hoprag.hop": event.hop}
    if isinstance(event, JudgeDecided):
        return "hoprag.judge", {"hoprag.hop": event.hop, "hoprag.passages": event.passages,
                                "hoprag.sufficient": event.sufficient}
    return "hoprag.first_token", {}


def _redact(text: str) -> str:
    """``text`` with PII replaced by placeholders (``<EMAIL_1>``): attributes leave the process."""
    from hoprag.security.boundary import text_for_storage

    return text_for_storage(text, "telemetry")


def record_trace(trace: Trace, *, model: str = "offline", operation: str = "hoprag.answer",
                 attributes: dict[str, Any] | None = None,
                 events: Sequence[tuple[int, EngineEvent]] = ()) -> tuple[str, str] | None:
    """Spans for ``trace``, ending now (see the module docstring); nothing when tracing is off.
    ``events`` (when each happened, in ns since the epoch) become span events of the question's span.
    Returns the question's span's trace id and span id (hex), or None when nothing was recorded."""
    tracer = _get_tracer()
    if tracer is None:
        return None
    from opentelemetry import trace as otel

    from hoprag.otel_round_trip import (CLAIMS, EVIDENCE, SHIFTS, claims_json, evidence_json, output_messages_json,
                                        shifts_json)
    from hoprag.security.boundary import trace_for_storage

    stored = trace_for_storage(trace, "telemetry")  # the texts below leave the process: PII as placeholders
    end = time.time_ns()
    start = end - int(trace.latency_ms * 1e6)
    root_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"hoprag-{trace.engine}",
                  "gen_ai.request.model": model, "gen_ai.usage.input_tokens": trace.usage.prompt_tokens,
                  "gen_ai.usage.output_tokens": trace.usage.completion_tokens, "hoprag.case_id": trace.case_id,
                  "hoprag.stop_reason": trace.stop_reason, "hoprag.engine": trace.engine,
                  "hoprag.config_hash": trace.config_hash, "hoprag.hops": max((s.hop for s in trace.steps), default=0),
                  "hoprag.abstained": trace.answer.abstained,
                  # what an import needs to give the trace back (hoprag.otel_round_trip)
                  "hoprag.question": stored.question, EVIDENCE: evidence_json(stored.evidence),
                  "hoprag.answer.confidence": trace.answer.confidence, "hoprag.answer.partial": trace.answer.partial,
                  **({CLAIMS: claims_json(stored.answer.claims)} if stored.answer.claims else {}),
                  **({SHIFTS: shifts_json(stored.redaction_shifts)} if stored.redaction_shifts else {}),
                  **({} if "synthesis_ms" in trace.timings else
                     {"gen_ai.output.messages": output_messages_json(stored.answer.text)}),
                  **(attributes or {})}
    root = tracer.start_span(operation, start_time=start, attributes=root_attrs)
    for when, event in events:
        name, attrs = _event_span(event)
        root.add_event(name, attributes=attrs, timestamp=when)
    context = otel.set_span_in_context(root)
    offset = start
    for stage in ("planning", "retrieval", "ranking", "synthesis"):
        ms = trace.timings.get(f"{stage}_ms")
        if ms is None:
            continue
        attrs: dict[str, Any] = {"hoprag.stage": stage}
        if stage == "synthesis":
            attrs.update({"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                          "gen_ai.usage.input_tokens": trace.usage.prompt_tokens,
                          "gen_ai.usage.output_tokens": trace.usage.completion_tokens,
                          "gen_ai.output.messages": output_messages_json(stored.answer.text)})
        span = tracer.start_span(stage, context=context, start_time=offset, attributes=attrs)
        if stage == "retrieval":
            _hop_spans(tracer, otel.set_span_in_context(span), stored, start)
        offset += int(ms * 1e6)
        span.end(end_time=offset)
    root.end(end_time=end)
    context_of = root.get_span_context()
    if not context_of.is_valid:  # a no-op tracer's span
        return None
    return otel.format_trace_id(context_of.trace_id), otel.format_span_id(context_of.span_id)


def _hop_spans(tracer: Any, context: Any, trace: Trace, start: int) -> None:
    """One GenAI retrieval span per step; ``trace`` is redacted already."""
    from hoprag.otel_round_trip import BRIDGE, documents_json
    from hoprag.security.boundary import value_for_storage

    for step in trace.steps:
        step_end = start + int(step.cumulative_ms * 1e6)
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "retrieve", "hoprag.hop": step.hop,
                 "hoprag.step_id": step.step_id, "hoprag.sub_query": _redact(step.sub_query),
                 "hoprag.issued_query": _redact(step.issued_query), "hoprag.hits": len(step.hits),
                 "hoprag.selected_ids": list(step.selected),
                 "gen_ai.retrieval.query.text": step.issued_query, "gen_ai.retrieval.documents": documents_json(step.hits)}
        if step.bridge.get("value"):
            attrs["hoprag.bridge"] = _redact(str(step.bridge["value"]))
        if step.bridge:  # the whole state, for an import (hoprag.otel_round_trip)
            attrs[BRIDGE] = json.dumps(value_for_storage(step.bridge, "telemetry"), ensure_ascii=False, default=str)
        if step.depends_on:
            attrs["hoprag.depends_on"] = list(step.depends_on)
        span = tracer.start_span(f"hop {step.hop} {step.step_id}", context=context,
                                 start_time=step_end - int(step.latency_ms * 1e6), attributes=attrs)
        span.end(end_time=step_end)
