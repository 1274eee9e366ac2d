"""Run an engine over many questions, writing each Trace to disk before anything is scored.

Traces are appended and flushed one by one, so a run that dies half-way keeps what it finished and
``resume`` picks up where it stopped. A question whose engine call raises still gets a Trace (with
``error`` set and ``stop_reason="error"``): nothing is silently dropped. Resuming answers the
questions whose last trace is such an error trace again (appending the new trace; readers take the
last one, see :mod:`hoprag.io.traces`) unless ``retry_errors=False`` keeps them as done, and
:class:`QuestionsFailedError` is what a command raises when a run leaves any.

A new traces file starts with a header naming the run, engine, config hash and index artifact
(:mod:`hoprag.io.traces`, which writes every line). Resuming refuses a file written by another engine, config or index,
and a file that is not a traces file at all; a last line cut off by a killed run is dropped (and
said so in ``RunSummary.notes``). ``<out>.lock`` keeps a second writer out while a run appends.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from hoprag.errors import HopragError, InputError
from hoprag.executors import LocalExecutor
from hoprag.pipeline.engine import Engine
from hoprag.io.trace_resume import TracesFileState, check_traces_file, scan_traces_file
from hoprag.io.traces import TracesHeader, append_trace
from hoprag.jsonl import cut_torn_last_line, end_with_newline
from hoprag.locks import exclusive_lock
from hoprag.records import Answer, Trace
from hoprag.security.boundary import trace_for_storage

if TYPE_CHECKING:
    from hoprag.executors import Executor

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
    #: questions answered again because their last trace in ``out`` was an error trace
    retried: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)
    fallback_traces: int = 0
    circuits: tuple[str, ...] = ()
    #: what was done to ``out`` before the run appended (a cut-off last line dropped, a line end added)
    notes: tuple[str, ...] = ()

    @property
    def fallback_total(self) -> int:
        return sum(self.fallbacks.values())


def new_run_id(engine: str) -> str:
    return f"{engine}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:6]}"


LOCK_FIX = "wait for that run to finish, or pass another --out"
#: the exit code of a run that wrote error traces (documented in ``hoprag run --help`` and docs/troubleshooting.md)
EXIT_QUESTIONS_FAILED = 3


class QuestionsFailedError(HopragError):
    """A run finished, but some questions' engine calls failed: their traces are error traces."""

    exit_code = EXIT_QUESTIONS_FAILED

    def __init__(self, summary: RunSummary, *, strict_llm: bool = False) -> None:
        self.summary = summary
        what = f"{summary.errors} of {summary.written} questions failed"
        if strict_llm:
            message = (f"{what} under --strict-llm; each trace's 'error' field in {summary.out} says which model "
                       "call could not be made. Fix: fix the model failure and run the same command again (resuming "
                       "answers those questions again), or drop --strict-llm to let the offline roles answer")
        else:
            message = (f"{what} (their traces in {summary.out} have 'error' set, stop_reason 'error'). Fix: remove "
                       "the cause the 'error' field names, then run the same command again: resuming answers those "
                       "questions again (--keep-errors keeps them as they are)")
        super().__init__(message)

RESUME_FIX = "pass --no-resume to start over (the file is replaced), or another --out to keep both"


def _prepare_out(
    out: Path, current: TracesHeader, *, resume: bool, explicit_run_id: bool, retry_errors: bool = True
) -> tuple[set[str], frozenset[str], str | None, tuple[str, ...]]:
    """Finished case ids, the case ids whose error traces are answered again, the run id to
    continue, and notes on what was repaired in ``out``."""
    from hoprag.io.outputs import check_not_input

    check_not_input(out, what="--out")  # the one output guard: never append to an input of the command
    if out.is_dir():
        raise InputError("the traces output is a directory", source=str(out),
                         fix="pass a file path to --out, e.g. --out traces.jsonl")
    if not out.exists():
        return set(), frozenset(), None, ()
    if not resume:
        check_traces_file(out)  # never delete what is not a traces file
        out.unlink()
        return set(), frozenset(), None, ()
    state = scan_traces_file(out)
    _check_same_run(state, current, explicit_run_id=explicit_run_id)
    notes: list[str] = []
    try:
        if state.torn is not None:
            cut_torn_last_line(out, state.torn)
            notes.append(
                f"{out}: dropped the cut-off last line {state.torn.line} ({state.torn.size} bytes, a write "
                f"interrupted when the run stopped); its case is answered again"
            )
        elif end_with_newline(out):
            notes.append(f"{out}: added the missing line end after the last record")
    except OSError as exc:
        raise InputError(f"the traces file cannot be written ({exc.strerror or exc})", source=str(out),
                         fix=f"make it writable (chmod u+w {out}) or pass another --out") from None
    previous = state.headers[0].run_id if state.headers else (state.run_ids[0] if state.run_ids else None)
    retry = state.errored if retry_errors else frozenset()
    return set(state.case_ids - retry), retry, previous or None, tuple(notes)


def _check_same_run(state: TracesFileState, current: TracesHeader, *, explicit_run_id: bool) -> None:
    """Refuse to append traces of another engine, config or index (or another explicit run id)."""
    if state.headers:
        recorded = {
            "engine": {h.engine for h in state.headers},
            "config hash": {h.config_hash for h in state.headers},
            "index artifact": {h.index_artifact_id for h in state.headers},
        }
    else:  # an older or foreign file: the traces carry engine and config hash themselves
        recorded = {"engine": set(state.engines), "config hash": set(state.config_hashes)}
    if explicit_run_id:
        recorded["run id"] = set(state.run_ids)
    now = {"engine": current.engine, "config hash": current.config_hash,
           "index artifact": current.index_artifact_id, "run id": current.run_id}
    differ = []
    for what, values in recorded.items():
        values = {v for v in values if v}
        if now[what] and values and values != {now[what]}:
            differ.append(f"{what} {', '.join(sorted(values))} in the file, {now[what]} in this run")
    if differ:
        raise InputError(
            "cannot resume: the file was written by another run configuration (" + "; ".join(differ)
            + "), and one traces file must hold one run",
            source=str(state.path), fix=RESUME_FIX,
        )


def run_questions(
    engine: Engine,
    questions: Sequence[Question],
    out: str | Path,
    *,
    run_id: str | None = None,
    resume: bool = True,
    progress: ProgressFn | None = None,
    redact: bool = True,
    index_artifact_id: str = "",
    executor: Executor | None = None,
    setup: Callable[[], Engine] | None = None,
    retry_errors: bool = True,
) -> RunSummary:
    """Answer every question with ``engine``, appending one Trace per question to ``out``.

    Resuming skips the cases already in ``out`` except those whose last trace is an error trace,
    which are answered again (``retry_errors=False`` keeps them as done).

    ``index_artifact_id`` (the index manifest's ``artifact_id``) goes into the file's header, so a
    resume over a rebuilt index is refused. ``executor`` (:mod:`hoprag.executors`; default: one
    question at a time in this process) answers the questions; traces come back and are written
    in the questions' order. Each worker gets its engine from ``setup()`` (default: ``engine``
    itself); a Ray executor needs a picklable one that builds the same engine there, such as
    :class:`~hoprag.pipeline.engine_recipe.EngineRecipe`.
    """
    out = Path(out)
    current = TracesHeader(run_id=run_id or "", engine=engine.name, config_hash=getattr(engine, "config_hash", ""),
                           index_artifact_id=index_artifact_id)
    with exclusive_lock(out, fix=LOCK_FIX):
        return _run_locked(engine, questions, out, current, resume=resume, run_id=run_id,
                           progress=progress, redact=redact, executor=executor, setup=setup,
                           retry_errors=retry_errors)


def _run_locked(
    engine: Engine,
    questions: Sequence[Question],
    out: Path,
    current: TracesHeader,
    *,
    resume: bool,
    run_id: str | None,
    progress: ProgressFn | None,
    redact: bool,
    executor: Executor | None = None,
    setup: Callable[[], Engine] | None = None,
    retry_errors: bool = True,
) -> RunSummary:
    done, retry, previous_run, notes = _prepare_out(out, current, resume=resume, explicit_run_id=run_id is not None,
                                                    retry_errors=retry_errors)
    run_id = run_id or previous_run or new_run_id(engine.name)
    if not out.exists() or out.stat().st_size == 0:
        append_trace(out, replace(current, run_id=run_id))
    written = errors = fallback_traces = 0
    fallbacks: dict[str, int] = {}
    todo = [q for q in questions if q.case_id not in done]
    retried = sum(1 for q in todo if q.case_id in retry)
    work = executor or LocalExecutor()
    answer = partial(answer_question, run_id=run_id)
    # results come back in the questions' order, so the file reads the same whatever ran them
    for index, trace in enumerate(work.map(answer, todo, setup=setup or _Given(engine)), start=1):
        errors += trace.stop_reason == "error" and bool(trace.error)
        for role, count in trace.fallbacks.items():
            fallbacks[role] = fallbacks.get(role, 0) + count
        fallback_traces += bool(trace.fallbacks)
        # the one redaction boundary: no PII (unless --no-redact) and never a credential reaches the file
        append_trace(out, trace_for_storage(trace, "run-traces", redact=redact))
        written += 1
        if progress is not None:
            progress(index, len(todo))
    guard = getattr(engine, "llm_guard", None)
    return RunSummary(
        run_id=run_id, written=written, resumed=len(done), errors=errors, out=out, retried=retried,
        fallbacks=fallbacks, fallback_traces=fallback_traces, circuits=tuple(guard.opened()) if guard else (),
        notes=notes,
    )


@dataclass(frozen=True)
class _Given:
    """The setup of a local run: the engine already built."""

    engine: Engine

    def __call__(self) -> Engine:
        return self.engine


def answer_question(engine: Engine, question: Question, *, run_id: str) -> Trace:
    """One question's Trace; an engine error becomes a trace with ``error`` set, never a crash."""
    try:
        return engine.answer(question.text, case_id=question.case_id, run_id=run_id)
    except (HopragError, OSError, ValueError, RuntimeError, TimeoutError) as exc:
        return Trace(
            run_id=run_id,
            case_id=question.case_id,
            question=question.text,
            answer=Answer(text="", abstained=True),
            stop_reason="error",
            engine=engine.name,
            config_hash=getattr(engine, "config_hash", ""),
            error=f"{type(exc).__name__}: {exc}",
        )


def questions_from_cases(cases: Sequence) -> list[Question]:
    """Strip cases down to what the system under test may see."""
    return [Question(case_id=c.case_id, text=c.query) for c in cases]
