"""Run an engine over many questions, writing each Trace to disk before anything is scored.

Traces are appended and flushed one by one, so a run that dies half-way keeps what it finished and
``resume`` picks up where it stopped. A question whose engine call raises still gets a Trace (with
``error`` set and ``stop_reason="error"``): nothing is silently dropped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hoprag.errors import HopragError, InputError
from hoprag.pipeline.engine import Engine
from hoprag.jsonl import append_record, read_jsonl_dicts
from hoprag.records import Answer, Trace
from hoprag.redact import redact_trace

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Question:
    """What the system under test may see of a case: its id and its question text."""

    case_id: str
    text: str


@dataclass(frozen=True)
class RunSummary:
    """What a run did. ``fallbacks`` counts model calls that fell back to the offline role, per role,
    over the traces written (``fallback_traces`` of them met one); ``circuits`` says which backend's
    circuit breaker opened, and why. An error-free run may still have fallen back: both are reported."""

    run_id: str
    written: int
    resumed: int
    errors: int
    out: Path
    fallbacks: dict[str, int] = field(default_factory=dict)
    fallback_traces: int = 0
    circuits: tuple[str, ...] = ()

    @property
    def fallback_total(self) -> int:
        return sum(self.fallbacks.values())


def new_run_id(engine: str) -> str:
    return f"{engine}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:6]}"


def _done_case_ids(path: Path) -> tuple[set[str], str | None]:
    if not path.exists():
        return set(), None
    done: set[str] = set()
    run_id: str | None = None
    for _, obj in read_jsonl_dicts(path):
        if "case_id" not in obj:
            raise InputError("trace without case_id", source=str(path), fix="delete the file or fix the line")
        done.add(str(obj["case_id"]))
        run_id = run_id or obj.get("run_id")
    return done, run_id


def run_questions(
    engine: Engine,
    questions: Sequence[Question],
    out: str | Path,
    *,
    run_id: str | None = None,
    resume: bool = True,
    progress: ProgressFn | None = None,
    redact: bool = True,
) -> RunSummary:
    """Answer every question with ``engine``, appending one Trace per question to ``out``."""
    out = Path(out)
    if resume:
        done, previous_run = _done_case_ids(out)
    else:
        done, previous_run = set(), None
        if out.exists():
            out.unlink()
    run_id = run_id or previous_run or new_run_id(engine.name)
    written = errors = fallback_traces = 0
    fallbacks: dict[str, int] = {}
    todo = [q for q in questions if q.case_id not in done]
    for index, question in enumerate(todo, start=1):
        try:
            trace = engine.answer(question.text, case_id=question.case_id, run_id=run_id)
        except (HopragError, OSError, ValueError, RuntimeError, TimeoutError) as exc:
            errors += 1
            trace = Trace(
                run_id=run_id,
                case_id=question.case_id,
                question=question.text,
                answer=Answer(text="", abstained=True),
                stop_reason="error",
                engine=engine.name,
                config_hash=getattr(engine, "config_hash", ""),
                error=f"{type(exc).__name__}: {exc}",
            )
        for role, count in trace.fallbacks.items():
            fallbacks[role] = fallbacks.get(role, 0) + count
        fallback_traces += bool(trace.fallbacks)
        append_record(out, redact_trace(trace) if redact else trace)  # PII never reaches the file
        written += 1
        if progress is not None:
            progress(index, len(todo))
    guard = getattr(engine, "llm_guard", None)
    return RunSummary(
        run_id=run_id, written=written, resumed=len(done), errors=errors, out=out,
        fallbacks=fallbacks, fallback_traces=fallback_traces, circuits=tuple(guard.opened()) if guard else (),
    )


def questions_from_cases(cases: Sequence) -> list[Question]:
    """Strip cases down to what the system under test may see."""
    return [Question(case_id=c.case_id, text=c.query) for c in cases]
