"""The one redaction boundary: everything hoprag stores, exports, logs or prints passes here first.

Stored and exported data (traces files, the run store's rows, imported traces, shared copies,
span attributes) goes through :func:`trace_for_storage`, :func:`text_for_storage` or
:func:`value_for_storage`: PII becomes typed placeholders (``<EMAIL_1>``, :mod:`hoprag.security.redaction`)
unless the caller asked for raw text (``--no-redact``), and credentials become ``***``
(:mod:`hoprag.security.credentials`) always. Messages that reach a terminal or a log go through
:func:`shown`, which masks credentials only: a message names the file or host it is about.

Each writer names itself, and must be one of :data:`WRITERS`; the boundary counts the calls per
writer (:func:`writer_calls`), so a test drives every writer and checks that it came through here.
A new writer registers here, and the registry test then fails until it drives that writer too.
Text with nothing to redact comes back as the same object: what is stored without PII or
credentials is byte-identical to what was given.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from hoprag.records import Trace
from hoprag.security.credentials import mask_credentials
from hoprag.security.redaction import RedactPattern, redact_text, redact_trace

__all__ = ["CHANNELS", "WRITERS", "recording", "shown", "text_for_storage", "trace_for_storage",
           "value_for_storage", "writer_calls"]

#: Everything that writes data out of the process, by name → what it writes.
WRITERS: dict[str, str] = {
    "run-traces": "the traces file of `hoprag run` (hoprag.pipeline.batch.run_questions)",
    "ablation-traces": "the traces files of `hoprag ablate` (hoprag.evaluation.ablations.run_ablations)",
    "otel-import": "the traces file of `hoprag traces import` (hoprag.otel_import)",
    "recorder-traces": "the traces a pipeline records with hoprag.record / hoprag.Recorder (hoprag.recorder)",
    "shared-traces": "the copy `hoprag traces redact` writes (hoprag.evaluation.sharing)",
    "store-traces": "the run store's trace rows (RunStore.add_traces)",
    "store-feedback": "the free text of the run store's feedback events (RunStore.add_feedback)",
    "store-runs": "a run's config, meta and failure reason in the run store (RunRegistry)",
    "service-traces": "the service's answers, queued and then stored (hoprag.service.records)",
    "service-feedback": "the comments the service stores with feedback (hoprag.service.records)",
    "telemetry": "OpenTelemetry span attributes that leave the process (hoprag.telemetry)",
}
#: Where messages are shown, by name → what shows them.
CHANNELS: dict[str, str] = {
    "cli-error": "the command line's error line (hoprag.cli_boundary)",
    "llm-error": "the message of every LLM error (hoprag.llm.errors.LLMError)",
    "url": "a base or store URL shown in a message or a status line",
    "service-log": "the service's log lines (hoprag.service)",
}

_lock = threading.Lock()
_calls: Counter[str] = Counter()

# Keys of free-form values whose strings are ids or names the store joins on: kept as they are.
_ID_KEYS = frozenset({"run_id", "case_id", "event_id", "chunk_id", "doc_id", "kind", "stage", "tag"})


def _record(name: str, known: dict[str, str]) -> None:
    if name not in known:
        # a programming error, not a user's: a writer must be registered to be tested
        raise ValueError(f"unknown writer or channel {name!r}: register it in hoprag.security.boundary")
    with _lock:
        _calls[name] += 1


def writer_calls() -> dict[str, int]:
    """Calls per writer and channel name since the process started (what the registry test reads)."""
    with _lock:
        return dict(_calls)


@contextmanager
def recording() -> Iterator[Counter[str]]:
    """The calls made per writer and channel inside the block (a snapshot taken when it ends)."""
    before = writer_calls()
    seen: Counter[str] = Counter()
    try:
        yield seen
    finally:
        after = writer_calls()
        seen.update({name: n - before.get(name, 0) for name, n in after.items() if n > before.get(name, 0)})


def trace_for_storage(trace: Trace, writer: str, *, redact: bool = True,
                      patterns: Iterable[RedactPattern] = ()) -> Trace:
    """``trace`` as ``writer`` may store it: PII placeholders unless ``redact=False``, no credential ever."""
    _record(writer, WRITERS)
    return redact_trace(trace, patterns, pii=redact)


def text_for_storage(text: str, writer: str, *, redact: bool = True) -> str:
    """One free text as ``writer`` may store it (a comment, a run's failure reason, a span attribute)."""
    _record(writer, WRITERS)
    return redact_text(text, pii=redact)


def value_for_storage(value: Any, writer: str, *, redact: bool = True) -> Any:
    """Every string inside a JSON-like ``value`` as ``writer`` may store it; ids and key names kept."""
    _record(writer, WRITERS)
    return _strings(value, redact)


def _strings(value: Any, redact: bool, key: str = "") -> Any:
    if key in _ID_KEYS:
        return value
    if isinstance(value, str):
        return redact_text(value, pii=redact)
    if isinstance(value, dict):
        out = {k: _strings(v, redact, str(k)) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, (list, tuple)):
        items = [_strings(v, redact, key) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    return value


def shown(message: str, channel: str = "cli-error") -> str:
    """``message`` fit to print or log: credentials masked as ``***``, everything else as it was."""
    _record(channel, CHANNELS)
    return mask_credentials(message)
