"""What an OpenAI-compatible server's replies say, read the same way for every server: the
``response_format`` a JSON mode sends, a refusal of that format, a prompt too long for the context
(with the window and prompt size the body names), the error's own words and ``Retry-After``.

OpenAI, vLLM, llama.cpp's server and llama-cpp-python's each word these their way; the patterns
below are the words seen from each (:mod:`hoprag.llm.openai_compat` sends the requests).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["context_exceeded", "context_numbers", "error_detail", "rejects_format", "retry_after",
           "set_response_format"]

# How servers say a prompt does not fit: OpenAI/vLLM/llama-cpp-python ("maximum context length",
# code context_length_exceeded), llama.cpp's server ("exceeds the available context size",
# exceed_context_size_error), others ("too many tokens", "context window").
_CONTEXT_CUES = re.compile(
    r"context[ _]length|context[ _]window|context size|exceed_context|too many tokens|maximum context|"
    r"prompt is too long|input is too long",
    re.IGNORECASE,
)
_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
    re.compile(r"context window of (\d+)", re.IGNORECASE),
    re.compile(r"\"n_ctx\"\s*:\s*(\d+)"),
    re.compile(r"context size (?:is |of )?\(?(\d+)", re.IGNORECASE),
)
_PROMPT_PATTERNS = (
    re.compile(r"\((\d+) in the messages", re.IGNORECASE),
    re.compile(r"messages resulted in (\d+) tokens", re.IGNORECASE),
    re.compile(r"requested tokens \((\d+)\)", re.IGNORECASE),
    re.compile(r"\"n_prompt_tokens\"\s*:\s*(\d+)"),
)


def set_response_format(body: dict[str, Any], mode: str, schema: dict[str, Any]) -> None:
    if mode == "json_schema":
        name = "".join(c if c.isalnum() or c in "_-" else "_" for c in str(schema.get("title") or "response"))
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": name[:64], "schema": schema}}
    elif mode == "json_object+schema":
        body["response_format"] = {"type": "json_object", "schema": schema}
    elif mode == "json_object":
        body["response_format"] = {"type": "json_object"}
    else:
        body.pop("response_format", None)


def rejects_format(response: httpx.Response) -> bool:
    """A 400/422, or a 5xx naming response_format (llama-cpp-python answers 500 to a field it refuses)."""
    status = response.status_code
    return status in (400, 422) or (status >= 500 and "response_format" in response.text)


def context_exceeded(response: httpx.Response) -> bool:
    """A refusal because the prompt is too long for the model (never a JSON-mode rejection)."""
    return response.status_code in (400, 413, 422) and bool(_CONTEXT_CUES.search(response.text))


def context_numbers(text: str) -> tuple[int | None, int | None]:
    """(context window, prompt tokens) as an error body states them, None where it does not."""

    def first(patterns: tuple[re.Pattern[str], ...]) -> int | None:
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return int(found.group(1))
        return None

    return first(_WINDOW_PATTERNS), first(_PROMPT_PATTERNS)


def error_detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200].strip() or response.reason_phrase
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if error:
        return str(error)[:300]
    return str(data.get("detail") or data)[:300] if isinstance(data, dict) else str(data)[:300]


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP-date; the backoff schedule applies instead
