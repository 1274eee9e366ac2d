"""How a model-backed role calls its model: budget and breaker first, prompt fitted, fallback recorded.

Every role of :mod:`hoprag.pipeline.llm_roles` asks through :meth:`ModelRole.ask`, which

1. skips the call at once when the backend's circuit is open or the question's budget is spent;
2. fits the prompt to the model's context when the window is known: the lowest-ranked evidence is
   left out first (then the last item's text is shortened), and what was left out is noted;
3. calls with the question's deadline, so retries and waits never pass it;
4. on a context-length error refits (with the window the error named, or half the evidence) and
   asks again, never resending the same prompt;
5. on any other failure counts it against the backend's breaker and falls back, recording role,
   backend, cause and message in the question's scope (or in ``failures`` outside an engine).

With a strict guard, a fallback raises :class:`~hoprag.llm.errors.LLMFallbackError` instead.

:meth:`ModelRole.stream_text` asks for text instead of JSON and hands it out piece by piece as the
model writes it (:meth:`hoprag.llm.base.LLM.stream`), under the same budget, breaker, fitting and
recording; its fallbacks say ``stream failed (…)``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hoprag.errors import HopragError
from hoprag.llm.errors import LLMBudgetError, LLMContextLengthError, LLMFallbackError, LLMTimeoutError
from hoprag.llm.guard import CircuitBreaker, Fallback, LLMGuard, QuestionScope, current_scope
from hoprag.records import Evidence, Usage

#: rounds of refitting after a context-length error before the role gives up on the model
FIT_ROUNDS = 3
#: tokens kept free besides the reply, for the chat template's own markers
FIT_MARGIN = 16
#: characters of each passage shown to a model (before any fitting)
EVIDENCE_WIDTH = 700

Render = Callable[[Sequence[Evidence], int], str]


def evidence_block(evidence: Sequence[Evidence], width: int = EVIDENCE_WIDTH) -> str:
    """Passages as a model sees them: ``[E1] doc=… hop=… title=…`` and the first ``width`` characters."""
    lines = []
    for i, item in enumerate(evidence, start=1):
        text = " ".join(item.text.split())[:width]
        lines.append(f"[E{i}] doc={item.doc_id} hop={item.hop} title={item.title!r}\n{text}")
    return "\n\n".join(lines)


@dataclass(frozen=True)
class ModelReply:
    """What :meth:`ModelRole.ask` got: the parsed reply, or why the role falls back.

    ``shown`` is the evidence the model actually saw (after fitting): citations resolve against it.
    """

    data: Any = None
    fallback: str | None = None
    shown: tuple[Evidence, ...] = ()

    @property
    def ok(self) -> bool:
        return self.fallback is None and self.data is not None


class ModelRole:
    """Base of the model-backed roles: usage bookkeeping and the guarded call (thread-safe).

    ``role`` names the role in fallback counts (``planner``, ``expander``, ``judge``,
    ``reranker``, ``synthesizer``); ``guard`` is shared by the roles of one engine (a role built
    alone gets its own, with the default budget and breaker).
    """

    role = "role"
    name = "model-role"

    def __init__(self, llm, guard: LLMGuard | None = None) -> None:
        self.llm = llm
        self.guard = guard or LLMGuard()
        self.usage = Usage()
        self.failures: list[str] = []
        self.notes: list[str] = []
        self._lock = threading.Lock()

    def ask(
        self,
        system: str,
        schema: type[BaseModel],
        max_tokens: int,
        *,
        user: str = "",
        evidence: Sequence[Evidence] = (),
        render: Render | None = None,
    ) -> ModelReply:
        """Ask the model for JSON valid against ``schema``. ``render(items, width)`` builds the user
        message from ``evidence``, so the prompt can be refitted; else ``user`` is sent as is."""
        scope = current_scope()
        deadline = self._deadline(scope)
        if deadline is not None and time.monotonic() >= deadline:
            return ModelReply(fallback=self._fallback(scope, "budget", self._spent_message(scope)))
        breaker = self.guard.breaker(self.llm)
        permit = breaker.allow()
        if not permit:
            return ModelReply(fallback=self._fallback(scope, "circuit", breaker.reason or "circuit open"))
        try:
            return self._ask(breaker, scope, deadline, system, schema, max_tokens, user, evidence, render)
        finally:
            if permit == "probe":
                breaker.abandon()  # a probe that ended without a verdict on the backend may be tried again

    def _ask(
        self,
        breaker: CircuitBreaker,
        scope: QuestionScope | None,
        deadline: float | None,
        system: str,
        schema: type[BaseModel],
        max_tokens: int,
        user: str,
        evidence: Sequence[Evidence],
        render: Render | None,
    ) -> ModelReply:
        items = list(evidence)
        window_cut = False
        for _ in range(FIT_ROUNDS):
            width = EVIDENCE_WIDTH
            tokens = max_tokens
            if render is not None:
                items, width, tokens = self._fit(system, render, items, schema, max_tokens, len(evidence), scope)
            text = render(items, width) if render is not None else user
            try:
                completion = self.llm.complete(
                    [{"role": "system", "content": system}, {"role": "user", "content": text}],
                    max_tokens=tokens,
                    temperature=0.0,
                    json_schema=schema,
                    deadline=deadline,
                )
            except LLMContextLengthError as exc:
                if render is None or (len(items) <= 1 and width <= 100):
                    return ModelReply(fallback=self._fallback(scope, "error", f"{type(exc).__name__}: {exc}"))
                if self.llm.context_window is None or window_cut:
                    # no window to fit to (or fitting to it was not enough): halve what is sent
                    self._drop(items, max(1, len(items) // 2), len(evidence), "the model refused the prompt as too long", scope)
                window_cut = True
                continue
            except LLMBudgetError:
                return ModelReply(fallback=self._fallback(scope, "budget", self._spent_message(scope)))
            except HopragError as exc:
                return ModelReply(fallback=self._failed(breaker, scope, f"{type(exc).__name__}: {exc}"))
            breaker.success()
            self._add_usage(completion.usage)
            return ModelReply(data=completion.data, shown=tuple(items))
        message = f"the prompt still exceeds the model's context after {FIT_ROUNDS} refits"
        return ModelReply(fallback=self._fallback(scope, "error", message))

    def stream_text(
        self,
        system: str,
        max_tokens: int,
        on_token: Callable[[str], None],
        *,
        evidence: Sequence[Evidence],
        render: Render,
    ) -> ModelReply:
        """Ask for plain text, handing each piece to ``on_token`` as it arrives; ``data`` is the whole text.

        The prompt is fitted like :meth:`ask`'s; a failure (after some pieces were handed out, too)
        falls back, recorded as ``stream failed (…)``, and the text is not retried."""
        scope = current_scope()
        deadline = self._deadline(scope)
        if deadline is not None and time.monotonic() >= deadline:
            return ModelReply(fallback=self._fallback(scope, "budget", f"stream failed ({self._spent_message(scope)})"))
        breaker = self.guard.breaker(self.llm)
        permit = breaker.allow()
        if not permit:
            return ModelReply(fallback=self._fallback(scope, "circuit", f"stream failed ({breaker.reason or 'circuit open'})"))
        try:
            items, width, tokens = self._fit(system, render, list(evidence), None, max_tokens, len(evidence), scope)
            messages = [{"role": "system", "content": system}, {"role": "user", "content": render(items, width)}]
            try:
                with self.llm.stream(messages, max_tokens=tokens, temperature=0.0, deadline=deadline) as stream:
                    for piece in stream:
                        on_token(piece)
                    completion = stream.completion
            except (LLMBudgetError, LLMTimeoutError) as exc:
                if deadline is not None and time.monotonic() >= deadline:  # the question's budget ended it
                    return ModelReply(fallback=self._fallback(scope, "budget",
                                                              f"stream failed ({self._spent_message(scope)})"))
                return ModelReply(fallback=self._failed(breaker, scope, f"stream failed ({type(exc).__name__}: {exc})"))
            except HopragError as exc:
                return ModelReply(fallback=self._failed(breaker, scope, f"stream failed ({type(exc).__name__}: {exc})"))
            breaker.success()
            if completion is not None:
                self._add_usage(completion.usage)
            return ModelReply(data=completion.text if completion is not None else "", shown=tuple(items))
        finally:
            if permit == "probe":
                breaker.abandon()

    def _failed(self, breaker: CircuitBreaker, scope: QuestionScope | None, message: str) -> str:
        """A failed call: counted against the backend's breaker, then the fallback recorded."""
        if breaker.failure(message) and scope is not None:
            scope.note(breaker.reason or "")
        return self._fallback(scope, "error", message)

    def record_fallback(self, cause: str, message: str) -> str:
        """Record a fallback the role decided itself (e.g. an invalid plan); returns the message."""
        return self._fallback(current_scope(), cause, message)

    # -- internals ------------------------------------------------------------------------------

    def _deadline(self, scope: QuestionScope | None) -> float | None:
        if scope is not None:
            return scope.set_budget(self.guard.budget)
        return time.monotonic() + self.guard.budget if self.guard.budget else None

    def _spent_message(self, scope: QuestionScope | None) -> str:
        if scope is not None and scope.budget is not None:
            return f"the question's model budget of {scope.budget:g} s is spent ({scope.elapsed():.1f} s elapsed)"
        return f"the model budget of {self.guard.budget:g} s is spent"

    def _fallback(self, scope: QuestionScope | None, cause: str, message: str) -> str:
        if self.guard.strict:
            raise LLMFallbackError(self.role, message, model=getattr(self.llm, "spec", None))
        if scope is not None:
            scope.record(Fallback(role=self.role, backend=self.llm.spec, cause=cause, message=message))
        else:
            with self._lock:
                self.failures.append(message)
        return message

    def _note(self, scope: QuestionScope | None, text: str) -> None:
        if scope is not None:
            scope.note(text)
        else:
            with self._lock:
                self.notes.append(text)

    def _add_usage(self, u: Usage) -> None:
        with self._lock:
            self.usage = Usage(
                prompt_tokens=self.usage.prompt_tokens + u.prompt_tokens,
                completion_tokens=self.usage.completion_tokens + u.completion_tokens,
                cost=self.usage.cost + u.cost,
            )

    def _fit(
        self,
        system: str,
        render: Render,
        items: list[Evidence],
        schema: type[BaseModel] | None,
        max_tokens: int,
        total: int,
        scope: QuestionScope | None,
    ) -> tuple[list[Evidence], int, int]:
        """Leave out the lowest-ranked evidence (then shorten the last passage) until the prompt fits."""
        window = self.llm.context_window
        if not window:
            return items, EVIDENCE_WIDTH, max_tokens
        tokens = min(max_tokens, max(16, window // 2))  # a reply must leave room for a prompt

        def size(kept: Sequence[Evidence], width: int) -> int:
            messages = [{"role": "system", "content": system}, {"role": "user", "content": render(kept, width)}]
            return self.llm.prompt_tokens(messages, schema)

        limit = window - tokens - FIT_MARGIN
        kept = list(items)
        while len(kept) > 1 and size(kept, EVIDENCE_WIDTH) > limit:
            kept.pop()
        width = EVIDENCE_WIDTH
        while kept and width > 100 and size(kept, width) > limit:
            width //= 2
        if len(kept) < len(items):
            self._drop(items, len(items) - len(kept), total, f"prompt fitted to the model's {window}-token context", scope)
        if width < EVIDENCE_WIDTH:
            self._note(scope, f"{self.name}: passages shortened to {width} characters to fit the model's {window}-token context")
        return kept, width, tokens

    def _drop(self, items: list[Evidence], n: int, total: int, why: str, scope: QuestionScope | None) -> None:
        """Remove the ``n`` lowest-ranked items (the list's tail) in place and note which."""
        if n <= 0 or not items:
            return
        gone = items[len(items) - n :]
        del items[len(items) - n :]
        ids = ", ".join(dict.fromkeys(e.doc_id for e in gone))
        self._note(scope, f"{self.name}: {why}: left out the {len(gone)} lowest-ranked of {total} evidence items ({ids})")
