"""The texts of an imported span: a retrieval's query, a question, an answer (JSON outputs unwrapped),
an LLM call's prompt, token counts; OpenInference and OTel GenAI attributes both read (:mod:`hoprag.otel_import`)."""

from __future__ import annotations


from hoprag.finite_numbers import loads  # span attributes are user input: the one number rule
from hoprag.otlp_spans import OtelSpan

__all__ = ["answer_text", "prompt_texts", "root_question", "span_query", "span_text", "token_count", "unwrap_json"]

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
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser goes
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
        except (ValueError, AttributeError, TypeError, RecursionError):
            parts = []
        texts = [str(p.get("content")) for p in parts if isinstance(p, dict) and p.get("type") == "text"]
        if texts:
            return "".join(texts)
    return span_text(span, "output.value")


def prompt_texts(span: OtelSpan) -> list[str]:
    """What an LLM call was given, one text per place a convention records it, most direct first:
    OpenInference chat messages (``llm.input_messages.N.message.content`` or its ``contents.M``
    text parts), completion prompts (``llm.prompts``), GenAI ``gen_ai.input.messages``, the span's
    ``input.value``, then the prompt template's ``llm.prompt_template.variables``. JSON is read for
    its strings, so a passage's text is found as written, not as escaped."""
    attrs = span.attributes
    messages = sorted(((_indices(key), value) for key, value in attrs.items() if isinstance(value, str)
                       and key.startswith("llm.input_messages.") and (key.endswith(".message.content")
                                                                      or key.endswith(".message_content.text"))),
                      key=lambda pair: pair[0])
    prompts = attrs.get("llm.prompts")
    listed = [str(p) for p in prompts] if isinstance(prompts, list) else [str(prompts)] if prompts else []
    listed += [value for _, value in sorted((_indices(key), value) for key, value in attrs.items()
                                            if key.startswith("llm.prompts.") and key.endswith(".prompt.text"))]
    texts = ["\n".join(value for _, value in messages), "\n".join(listed)]
    for key in ("gen_ai.input.messages", "input.value", "llm.prompt_template.variables"):
        value = attrs.get(key)
        texts.append(_strings(value) if isinstance(value, str) else "")
    return [text for text in texts if text]


def _indices(key: str) -> tuple[int, ...]:
    """The numbers of a flattened attribute name, so message 10 sorts after message 9."""
    return tuple(int(part) for part in key.split(".") if part.isdigit())


def _strings(text: str) -> str:
    """A JSON text's strings joined by newlines, in document order; other text as it is."""
    if not text.lstrip().startswith(("{", "[", '"')):
        return text
    try:
        data = loads(text)
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser goes
        return text
    found: list[str] = []
    stack = [data]
    while stack:  # depth first, in order, without recursion: a deep JSON is user input
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return "\n".join(found)


def token_count(span: OtelSpan, *keys: str) -> int:
    for key in keys:
        value = span.attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0
