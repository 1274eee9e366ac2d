"""The LLM layer: one backend contract, offline/OpenAI-compatible/llama.cpp backends, a scripted fake."""

from hoprag.llm.base import Completion, LLM, Message, RetryPolicy, normalize_messages, sum_usage
from hoprag.llm.errors import (
    LLMDependencyError,
    LLMError,
    LLMJSONError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnavailableError,
    MissingAPIKeyError,
)
from hoprag.llm.fake import Call, ScriptedLLM
from hoprag.llm.offline import OfflineLLM, OfflineRequest
from hoprag.llm.pricing import ModelPrice, PriceTable, load_price_table
from hoprag.llm.registry import SPEC_FORMS, make_llm

__all__ = [
    "Call",
    "Completion",
    "LLM",
    "LLMDependencyError",
    "LLMError",
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
    "RetryPolicy",
    "SPEC_FORMS",
    "ScriptedLLM",
    "load_price_table",
    "make_llm",
    "normalize_messages",
    "sum_usage",
]
