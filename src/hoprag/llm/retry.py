"""How a model call is retried: exponential backoff with seeded jitter, a server's Retry-After hint
honoured up to the policy's longest wait (:meth:`hoprag.llm.base.LLM.backoff_delay` draws the jitter)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RetryPolicy"]


class RetryPolicy(BaseModel):
    """Retries for retryable errors: delay_n = min(max_delay, initial_delay * multiplier**n) * (1 ± jitter).

    A server's Retry-After hint raises the delay up to ``max_delay``. The jitter comes from a
    ``random.Random(seed)`` owned by each LLM, so a run's delays are reproducible.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(default=3, ge=0)
    initial_delay: float = Field(default=0.5, ge=0.0)
    multiplier: float = Field(default=2.0, ge=1.0)
    max_delay: float = Field(default=8.0, ge=0.0)
    jitter: float = Field(default=0.25, ge=0.0, le=1.0)
    seed: int = 0

    def delay(self, attempt: int, draw: float, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt + 1`` (0-based), for a jitter ``draw`` in [0, 1) and a
        server's Retry-After hint."""
        base = min(self.max_delay, self.initial_delay * self.multiplier**attempt)
        delay = base * (1.0 + self.jitter * (2.0 * draw - 1.0))
        if retry_after is not None:
            delay = max(delay, retry_after)
        return max(0.0, min(self.max_delay, delay))
