"""Fault containment for model calls: a per-question budget, a circuit breaker per backend, strict mode.

A question's model calls (planner, expander, judge, reranker, synthesiser) all draw on one
:class:`QuestionScope`: its deadline is ``budget`` seconds after the question started, every call's
read timeout and backoff are cut to what is left, and once it is spent the remaining roles answer
offline at once. A :class:`CircuitBreaker` per backend opens after ``threshold`` consecutive
failed calls; from then on the rest of the run uses the offline roles without calling the backend
(a long-lived process, such as a service, can let it try again after ``reset_after`` seconds: one
probe call, which closes the breaker if it succeeds).
Every fallback is recorded in the scope (role, backend, cause, message), which the engine copies
into the trace; with ``strict`` a fallback raises :class:`~hoprag.llm.errors.LLMFallbackError`
instead.

The scope travels in a :mod:`contextvars` variable, so concurrent questions (a service answering
several at once) each keep their own; the engine's worker threads run in a copy of the caller's
context.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

DEFAULT_BUDGET = 30.0
DEFAULT_BREAKER_THRESHOLD = 3
#: the causes a fallback is recorded under
CAUSES = ("error", "budget", "circuit", "invalid")


@dataclass(frozen=True)
class Fallback:
    """One role call that did not use its model: ``cause`` is one of :data:`CAUSES`."""

    role: str
    backend: str
    cause: str
    message: str


class QuestionScope:
    """The model budget and the record of fallbacks and notes of one question (thread-safe)."""

    def __init__(self, budget: float | None = None) -> None:
        self.started = time.monotonic()
        self.budget: float | None = None
        self.deadline: float | None = None
        self.fallbacks: list[Fallback] = []
        self.notes: list[str] = []
        self._lock = threading.Lock()
        if budget:
            self.set_budget(budget)

    def set_budget(self, budget: float | None) -> float | None:
        """Fix the budget (seconds from the question's start) unless one is set; return the deadline."""
        with self._lock:
            if self.deadline is None and budget:
                self.budget = float(budget)
                self.deadline = self.started + self.budget
            return self.deadline

    def remaining(self) -> float | None:
        """Seconds of the budget left (negative once spent); None without a budget."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def record(self, fallback: Fallback) -> None:
        with self._lock:
            self.fallbacks.append(fallback)

    def note(self, text: str) -> None:
        with self._lock:
            if text not in self.notes:
                self.notes.append(text)

    def counts(self) -> dict[str, int]:
        """Fallbacks per role, e.g. ``{"planner": 1, "judge": 2}``."""
        with self._lock:
            return dict(Counter(f.role for f in self.fallbacks))

    def warnings(self) -> tuple[str, ...]:
        """One line per distinct reason (the roles it sent offline, each call counted once), then the notes."""
        with self._lock:
            fallbacks = list(self.fallbacks)
            notes = list(self.notes)
        grouped: dict[tuple[str, str], Counter[str]] = {}
        for f in fallbacks:
            grouped.setdefault((f.backend, f.message), Counter())[f.role] += 1
        lines = []
        for (backend, message), roles in grouped.items():
            who = ", ".join(f"{role} ×{n}" if n > 1 else role for role, n in roles.items())
            lines.append(f"{who} ({backend}) fell back to offline: {message}")
        return (*lines, *notes)


_SCOPE: ContextVar[QuestionScope | None] = ContextVar("hoprag_question_scope", default=None)


def current_scope() -> QuestionScope | None:
    """The scope of the question being answered on this thread, if any."""
    return _SCOPE.get()


@contextmanager
def question_scope(budget: float | None = None) -> Iterator[QuestionScope]:
    """Open a scope for one question; role calls inside it share its budget and record into it."""
    scope = QuestionScope(budget)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


class CircuitBreaker:
    """Opens after ``threshold`` consecutive failures of one backend; stays open for the run, or until
    ``reset_after`` seconds have passed, when one probe call may go through."""

    def __init__(self, backend: str, threshold: int = DEFAULT_BREAKER_THRESHOLD, reset_after: float | None = None) -> None:
        if threshold < 1:
            from hoprag.errors import ConfigError

            raise ConfigError(f"the circuit breaker threshold must be at least 1, got {threshold}")
        self.backend = backend
        self.threshold = threshold
        self.reset_after = reset_after
        self.consecutive = 0
        self.failures = 0
        self.reason: str | None = None
        self._opened_at = 0.0
        self._probing = False
        self._lock = threading.Lock()

    @property
    def open(self) -> bool:
        return self.reason is not None

    def allow(self) -> bool | str:
        """May a call be made now? Closed: True; open: False, except once ``reset_after`` has passed,
        when the one caller that gets ``"probe"`` tries (and reports with success/failure/abandon)."""
        with self._lock:
            if self.reason is None:
                return True
            if self.reset_after is None or self._probing or time.monotonic() - self._opened_at < self.reset_after:
                return False
            self._probing = True
            return "probe"

    def success(self) -> None:
        with self._lock:
            self.consecutive = 0
            self.reason = None
            self._probing = False

    def abandon(self) -> None:
        """The probe was not made or said nothing of the backend's health (e.g. the budget ran out)."""
        with self._lock:
            self._probing = False

    def failure(self, message: str) -> bool:
        """Count a failed call; True when this failure opened the breaker (or a probe reopened it)."""
        with self._lock:
            self.consecutive += 1
            self.failures += 1
            if self._probing or (self.reason is None and self.consecutive >= self.threshold):
                rest = (f"calls wait {self.reset_after:g} s before one probe" if self.reset_after is not None
                        else "the rest of the run uses the offline roles without calling it")
                self.reason = (
                    f"circuit open for {self.backend} after {self.consecutive} consecutive failed calls"
                    f" (last: {message}); {rest}"
                )
                self._opened_at = time.monotonic()
                self._probing = False
                return True
            return False


class LLMGuard:
    """What the model-backed roles of one engine share: the budget, the breakers, strict mode."""

    def __init__(
        self,
        *,
        budget: float | None = DEFAULT_BUDGET,
        strict: bool = False,
        breaker_threshold: int = DEFAULT_BREAKER_THRESHOLD,
        breaker_reset: float | None = None,
    ) -> None:
        if budget is not None and budget < 0:
            from hoprag.errors import ConfigError

            raise ConfigError(f"the model budget must be >= 0 seconds (0 = no budget), got {budget}")
        self.budget = budget or None
        self.strict = strict
        self.breaker_threshold = breaker_threshold
        self.breaker_reset = breaker_reset
        # keyed by the backend object's id; the object is kept so its id cannot be reused
        self._breakers: dict[int, tuple[Any, CircuitBreaker]] = {}
        self._lock = threading.Lock()

    def breaker(self, llm: Any) -> CircuitBreaker:
        """The breaker of one backend instance (roles sharing a backend share its breaker)."""
        with self._lock:
            found = self._breakers.get(id(llm))
            if found is None:
                breaker = CircuitBreaker(getattr(llm, "spec", repr(llm)), self.breaker_threshold, self.breaker_reset)
                found = self._breakers[id(llm)] = (llm, breaker)
            return found[1]

    def opened(self) -> list[str]:
        """Why each open breaker opened (for a run's summary)."""
        with self._lock:
            return [b.reason for _, b in self._breakers.values() if b.reason]

    @contextmanager
    def question(self) -> Iterator[QuestionScope]:
        """A question scope with this guard's budget."""
        with question_scope(self.budget) as scope:
            yield scope
