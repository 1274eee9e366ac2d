"""Errors of the LLM layer: each says which model or server failed, what went wrong, and the fix.

``retryable`` tells :meth:`hoprag.llm.base.LLM.complete` whether another attempt may succeed.
Every message passes the redaction boundary (:func:`hoprag.security.boundary.shown`) when it is
made: a server URL's password or an ``api_key=`` in it is ``***`` wherever the message goes next
(the terminal, a trace's ``error`` and ``warnings``, the service's JSON errors).
"""

from __future__ import annotations

from hoprag.errors import HopragError


class LLMError(HopragError):
    """A language-model call failed."""

    retryable = False
    #: calls made before this error was raised (set by LLM.complete once retries are spent)
    attempts = 1

    def __init__(self, message: str, *, model: str | None = None, fix: str | None = None) -> None:
        self.model = model
        self.fix = fix
        from hoprag.security.boundary import shown

        text = f"{model}: {message}" if model else message
        if fix:
            text += f". Fix: {fix}"
        super().__init__(shown(text, "llm-error"))


class LLMTimeoutError(LLMError):
    """The backend gave no complete answer within the timeout."""

    retryable = True

    def __init__(self, message: str, *, model: str | None = None, timeout: float | None = None) -> None:
        self.timeout = timeout
        super().__init__(
            message,
            model=model,
            fix=(
                "raise the per-call timeout (timeout=... / --llm-timeout) or the per-question budget"
                " (--llm-budget), lower max_tokens, or use a faster model"
            ),
        )


class LLMUnavailableError(LLMError):
    """The server cannot be reached at all (connection refused, unknown host)."""

    def __init__(self, url: str, reason: str, *, model: str | None = None) -> None:
        from hoprag.security.boundary import shown

        self.url = shown(url, "url")
        super().__init__(
            f"cannot reach the LLM server at {url} ({reason})",
            model=model,
            fix=(
                "start the server, or point --base-url / HOPRAG_BASE_URL at the address it listens on"
                " (e.g. http://127.0.0.1:8080/v1), or run with --llm offline"
            ),
        )


class LLMRateLimitError(LLMError):
    """The server answered HTTP 429; ``retry_after`` is its Retry-After hint in seconds."""

    retryable = True

    def __init__(self, message: str, *, model: str | None = None, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message, model=model, fix="wait, lower concurrency, or raise the retry budget")


class LLMServerError(LLMError):
    """The server failed (HTTP 5xx); another attempt may succeed."""

    retryable = True

    def __init__(self, message: str, *, model: str | None = None, status: int | None = None) -> None:
        self.status = status
        super().__init__(message, model=model, fix="check the server's log; the call is retried with backoff")


class LLMContextLengthError(LLMError):
    """The prompt (plus ``max_tokens``) does not fit the model's context window; retrying as is cannot help.

    ``window`` is the context size in tokens and ``prompt_tokens`` what the request needed, when the
    server said so (None otherwise). The pipeline roles refit the prompt on this error.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        window: int | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        self.window = window
        self.prompt_tokens = prompt_tokens
        super().__init__(
            message,
            model=model,
            fix=(
                "give the model a larger context (--n-ctx for llamacpp:PATH.gguf; a server's own context size"
                " setting), or hand it less evidence (--k)"
            ),
        )


class LLMBudgetError(LLMError):
    """The caller's deadline (the per-question model budget) passed before the call could be made."""

    def __init__(self, message: str, *, model: str | None = None, budget: float | None = None) -> None:
        self.budget = budget
        super().__init__(
            message,
            model=model,
            fix="raise --llm-budget (seconds per question; 0 = no budget), or use a faster model",
        )


class LLMFallbackError(LLMError):
    """Strict mode: a role could not use its model and would have fallen back to the offline role."""

    def __init__(self, role: str, reason: str, *, model: str | None = None) -> None:
        self.role = role
        self.reason = reason
        super().__init__(
            f"{role} could not use its model and strict mode forbids the offline fallback: {reason}",
            model=model,
            fix="fix the model failure named here, or drop --strict-llm to let the offline role answer",
        )


class LLMResponseError(LLMError):
    """The server's answer is not a usable chat completion (truncated or invalid JSON body, no choices)."""


class LLMJSONError(LLMError):
    """The model's reply is not JSON valid against the requested schema, even after one repair attempt."""

    def __init__(self, problem: str, *, model: str | None, text: str, attempts: int) -> None:
        self.problem = problem
        self.text = text
        self.attempts = attempts
        shown = text if len(text) <= 200 else text[:200] + "…"
        super().__init__(
            f"reply is not valid JSON for the requested schema after {attempts} attempt(s): {problem}"
            f" (reply: {shown!r})",
            model=model,
            fix=(
                "use a stronger model for this role, or a server that supports constrained output"
                " (response_format json_schema, e.g. llama.cpp server or vLLM)"
            ),
        )


class MissingAPIKeyError(LLMError):
    """A backend needs an API key that was not given, or the server rejected the one given."""

    def __init__(self, message: str, *, variable: str = "HOPRAG_API_KEY", model: str | None = None) -> None:
        self.variable = variable
        super().__init__(
            message,
            model=model,
            fix=f"set {variable} (or pass api_key= / --api-key), or run with --llm offline",
        )


class LLMDependencyError(LLMError, ImportError):
    """An optional package a backend needs is not installed; the message names the extra."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        LLMError.__init__(
            self,
            f"the package '{package}' is not installed",
            fix=f"pip install 'hoprag[{extra}]'",
        )
