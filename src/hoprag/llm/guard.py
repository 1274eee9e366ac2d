"""Fault containment for model calls: a per-question budget, a circuit breaker per backend, strict mode.

A question's model calls (planner, expander, judge, reranker, synthesiser) all draw on one
:class:`QuestionScope`: its deadline is ``budget`` seconds after the question started, every call's
read timeout and backoff are cut to what is left, and once it is spent the remaining roles answer
offline at once. A :class:`CircuitBreaker` per backend opens after ``threshold`` consecutive
failed calls; from then on the rest of the run uses the offline roles without calling the backend.
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
    """Opens after ``threshold`` consecutive failures of one backend, and stays open for the run."""

    def __init__(self, backend: str, threshold: int = DEFAULT_BREAKER_THRESHOLD) -> None:
        if threshold < 1:
            from hoprag.errors import ConfigError

            raise ConfigError(f"the circuit breaker threshold must be at least 1, got {threshold}")
        self.backend = backend
        self.threshold = threshold
        self.consecutive = 0
        self.failures = 0
        self.reason: str | None = None
        self._lock = threading.Lock()

    @property
    def open(self) -> bool:
        return self.reason is not None

    def success(self) -> None:
        with self._lock:
            self.consecutive = 0

    def failure(self, message: str) -> bool:
        """Count a failed call; True when this failure opened the breaker."""
        with self._lock:
            self.consecutive += 1
            self.failures += 1
            if self.reason is None and self.consecutive >= self.threshold:
                self.reason = (
                    f"circuit open for {self.backend} after {self.consecutive} consecutive failed calls"
                    f" (last: {message}); the rest of the run uses the offline roles without calling it"
                )
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
    ) -> None:
        if budget is not None and budget < 0:
            from hoprag.errors import ConfigError

            raise ConfigError(f"the model budget must be >= 0 seconds (0 = no budget), got {budget}")
        self.budget = budget or None
        self.strict = strict
        self.breaker_threshold = breaker_threshold
        # keyed by the backend object's id; the object is kept so its id cannot be reused
        self._breakers: dict[int, tuple[Any, CircuitBreaker]] = {}
        self._lock = threading.Lock()

    def breaker(self, llm: Any) -> CircuitBreaker:
        """The breaker of one backend instance (roles sharing a backend share its breaker)."""
        with self._lock:
            found = self._breakers.get(id(llm))
            if found is None:
                found = self._breakers[id(llm)] = (llm, CircuitBreaker(getattr(llm, "spec", repr(llm)), self.breaker_threshold))
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
