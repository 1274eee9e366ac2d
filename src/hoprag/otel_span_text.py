"""The texts of an imported span: a retrieval's query, a question, an answer (JSON outputs unwrapped),
token counts; OpenInference and OTel GenAI attributes both read (:mod:`hoprag.otel_import`)."""

from __future__ import annotations


from hoprag.finite_numbers import loads  # span attributes are user input: the one number rule
from hoprag.otlp_spans import OtelSpan

__all__ = ["answer_text", "root_question", "span_query", "span_text", "token_count", "unwrap_json"]

_TEXT_KEYS = ("query", "question", "input", "query_str", "str_or_query_bundle", "output", "answer", "response",
              "text", "content")


def span_query(span: OtelSpan | None) -> str:
    """A retrieval span's query: the GenAI query text, hoprag's issued query, else its input text."""
    if span is None:
        return ""
    return str(span.attributes.get("gen_ai.retrieval.query.text") or span.attributes.get("hoprag.issued_query")
               or "") or span_text(span, "input.value")


def root_question(span: OtelSpan) -> str:
    """The root's input when it is text (or JSON holding one text field), else ``""``."""
    text = span_text(span, "input.value")
    return "" if text.lstrip().startswith(("{", "[")) else text


def span_text(span: OtelSpan, key: str) -> str:
    """A string attribute; JSON (``*.mime_type`` application/json) gives its text field: one of
    :data:`_TEXT_KEYS`, the only string it holds, or the first of a ``replies`` list."""
    value = span.attributes.get(key)
    if value is None:
        return ""
    text = str(value)
    if span.attributes.get(key.replace(".value", ".mime_type")) == "application/json":
        return unwrap_json(text)
    return text


def unwrap_json(text: str) -> str:
    try:
        data = loads(text)
    except ValueError:
        return text
    if isinstance(data, str):
        return data
    if not isinstance(data, dict):
        return text
    for name in _TEXT_KEYS:
        if isinstance(data.get(name), str):
            return data[name]
    replies = data.get("replies")
    if isinstance(replies, list) and replies:
        first = replies[0]
        if isinstance(first, str):
            return first
        if isinstance(first, dict) and isinstance(first.get("content") or first.get("text"), str):
            return first.get("content") or first.get("text")
    generations = data.get("generations")  # LangChain's LLMResult, [[{"text": ...}]]: a completion model's output
    if isinstance(generations, list) and generations and isinstance(generations[0], list) and generations[0]:
        first = generations[0][0]
        if isinstance(first, dict) and isinstance(first.get("text"), str):
            return first["text"]
    strings = [v for v in data.values() if isinstance(v, str)]
    return strings[0] if len(data) == 1 and strings else text


def answer_text(span: OtelSpan) -> str:
    message = span.attributes.get("llm.output_messages.0.message.content")
    if isinstance(message, str) and message:
        return message
    output = span.attributes.get("gen_ai.output.messages")
    if isinstance(output, str) and output.startswith("["):
        try:
            parts = [p for m in loads(output) for p in m.get("parts", []) if isinstance(m, dict)]
        except (ValueError, AttributeError, TypeError):
            parts = []
        texts = [str(p.get("content")) for p in parts if isinstance(p, dict) and p.get("type") == "text"]
        if texts:
            return "".join(texts)
    return span_text(span, "output.value")


def token_count(span: OtelSpan, *keys: str) -> int:
    for key in keys:
        value = span.attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0
