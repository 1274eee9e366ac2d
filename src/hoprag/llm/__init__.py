"""The LLM layer: one backend contract, offline/OpenAI-compatible/llama.cpp backends, a scripted fake."""

from hoprag.llm.base import Completion, LLM, Message, RetryPolicy, normalize_messages, sum_usage
from hoprag.llm.errors import (
    LLMBudgetError,
    LLMContextLengthError,
    LLMDependencyError,
    LLMError,
    LLMFallbackError,
    LLMJSONError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnavailableError,
    MissingAPIKeyError,
)
from hoprag.llm.fake import Call, ScriptedLLM
from hoprag.llm.guard import CircuitBreaker, Fallback, LLMGuard, QuestionScope, current_scope, question_scope
from hoprag.llm.offline import OfflineLLM, OfflineRequest
from hoprag.llm.pricing import ModelPrice, PriceTable, load_price_table
from hoprag.llm.registry import SPEC_FORMS, make_llm
from hoprag.llm.settings import LLMSettings

__all__ = [
    "Call",
    "CircuitBreaker",
    "Completion",
    "Fallback",
    "LLM",
    "LLMBudgetError",
    "LLMContextLengthError",
    "LLMDependencyError",
    "LLMError",
    "LLMFallbackError",
    "LLMGuard",
    "LLMSettings",
    "LLMJSONError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMServerError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "Message",
    "MissingAPIKeyError",
    "ModelPrice",
    "OfflineLLM",
    "OfflineRequest",
    "PriceTable",
    "QuestionScope",
    "RetryPolicy",
    "SPEC_FORMS",
    "ScriptedLLM",
    "current_scope",
    "load_price_table",
    "make_llm",
    "normalize_messages",
    "question_scope",
    "sum_usage",
]
