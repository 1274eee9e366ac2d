"""How answering reaches its models: one validated value for the CLI's model flags and the library.

``LLMSettings`` holds what every backend of one engine shares: where the server is and its key
(``openai:`` only), the per-call read timeout and connect timeout, retries, the llama.cpp context
size, the per-question budget, strict mode and the circuit breaker's threshold. ``make(spec)``
builds a backend with them; ``guard()`` the :class:`~hoprag.llm.guard.LLMGuard` its roles share.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hoprag.llm.base import DEFAULT_TIMEOUT, LLM, RetryPolicy
from hoprag.llm.guard import DEFAULT_BREAKER_THRESHOLD, DEFAULT_BUDGET, LLMGuard
from hoprag.llm.openai_compat import DEFAULT_CONNECT_TIMEOUT

OFFLINE = "offline"


def backend_kind(spec: str | None) -> str:
    """``offline`` | ``openai`` | ``llamacpp`` | whatever precedes the colon (validated by make_llm)."""
    if spec is None or not spec.strip():
        return OFFLINE
    return spec.strip().partition(":")[0].lower()


class LLMSettings(BaseModel):
    """Model settings shared by every backend of one engine (``hoprag ask/run/ablate`` flags)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(default=None, description="OpenAI-compatible server (openai: only)")
    api_key: str | None = Field(default=None, repr=False, description="API key (openai: only)")
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, description="read timeout of one call, seconds")
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0, description="connect timeout, seconds")
    retries: int = Field(default=3, ge=0, description="retries of a transient failure (429, 5xx, timeout)")
    n_ctx: int | None = Field(default=None, ge=64, description="llama.cpp context size in tokens (llamacpp: only)")
    budget: float = Field(
        default=DEFAULT_BUDGET, ge=0, description="wall-clock seconds for all model calls of one question; 0 = none"
    )
    strict: bool = Field(default=False, description="a fallback to an offline role is an error")
    breaker_threshold: int = Field(
        default=DEFAULT_BREAKER_THRESHOLD, ge=1, description="consecutive failures that open a backend's circuit"
    )
    breaker_reset: float | None = Field(
        default=None, gt=0, description="seconds after which an open circuit lets one probe call through; None = never"
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        from hoprag.llm.base_url import check_base_url

        return None if value is None else check_base_url(value)  # a ConfigError: passes pydantic untouched

    def backend_options(self, spec: str) -> dict[str, Any]:
        """``make_llm`` keyword arguments for ``spec``: each backend gets only what applies to it."""
        kind = backend_kind(spec)
        options: dict[str, Any] = {"timeout": self.timeout, "retry": RetryPolicy(max_retries=self.retries)}
        if kind == "openai":
            options.update(base_url=self.base_url, api_key=self.api_key, connect_timeout=self.connect_timeout)
        elif kind == "llamacpp" and self.n_ctx is not None:
            options["n_ctx"] = self.n_ctx
        return options

    def make(self, spec: str | None, **extra: Any) -> LLM | None:
        """The backend for ``spec`` with these settings (``extra`` overrides them); None for ``offline``."""
        if backend_kind(spec) == OFFLINE:
            return None
        from hoprag.llm.registry import make_llm

        return make_llm(str(spec), **{**self.backend_options(str(spec)), **extra})

    def guard(self) -> LLMGuard:
        return LLMGuard(budget=self.budget or None, strict=self.strict, breaker_threshold=self.breaker_threshold,
                        breaker_reset=self.breaker_reset)
