"""hoprag as an OpenAI-compatible model: ``POST /v1/chat/completions`` (JSON and streamed) and ``GET /v1/models``.

The official ``openai`` client, or any chat UI that speaks the Chat Completions API, asks hoprag as
it would ask a model: ``base_url=http://127.0.0.1:8000/v1``, ``api_key=`` a token of the server's
tokens file (any text on a server without one). The last user message is the question; earlier
messages are not read (each question is answered from the documents alone). The model names the
engine: ``hoprag`` (multi-hop) or ``hoprag-single`` (single-shot).

* The message is the answer, its citation markers (``[1]``) and a "Sources" list naming each cited
  document; streamed, the answer's tokens arrive as the engine writes them and the sources follow.
* The extra field ``hoprag`` (on the completion; on the last chunk of a stream) holds what
  ``POST /api/ask`` returns besides the answer: ``trace_id``, ``citations`` with their spans,
  ``claims``, the evidence ``trail`` (one entry per retrieval call), ``evidence``, ``clearance``,
  ``stored`` and the rest. The openai client shows it as ``completion.hoprag`` (``model_extra``).
* Tokens and clearance are the API's (:mod:`hoprag.service.access`): retrieval runs at the token's
  clearance, and ``store: true`` (the Chat Completions flag) stores the answer, a write.
* Sampling options (``temperature``, ``max_tokens``, ...) are accepted and not used: the engine's
  configuration decides how answers are written. Errors take the API's shape
  (``{"error": {"message", "type", "fix"}}``, :func:`openai_error`), so a client shows what was wrong
  and the fix; an error during a stream is an ``error`` event the openai client raises as ``APIError``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal, Optional, Union

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from hoprag.service.access import may_write, reader
from hoprag.service.answers import answer, answer_events, check_question
from hoprag.service.models import AskRequest, ErrorBody
from hoprag.service.records import new_trace_id
from hoprag.service.state import ServiceError
from hoprag.service.tokens import Caller

__all__ = ["MODELS", "message_text", "openai_error", "router"]

router = APIRouter()
#: model name -> the engine it answers with
MODELS = {"hoprag": "multihop", "hoprag-single": "single"}
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (400, 401, 403, 404, 413, 422, 504)}


_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                413: "invalid_request_error", 422: "invalid_request_error", 504: "timeout"}


def openai_error(status: int, what: str, fix: str) -> dict[str, Any]:
    """An error of a ``/v1`` route as the Chat Completions API writes one (the fix in the message too)."""
    return {"error": {"message": f"{what}. Fix: {fix}", "type": _ERROR_TYPES.get(status, "invalid_request_error"),
                      "param": None, "code": None, "fix": fix}}


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")  # name, tool_call_id, ...: nothing an answer uses
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Union[str, list[dict[str, Any]], None] = None


class ChatRequest(BaseModel):
    # chat clients send sampling options (temperature, top_p, max_tokens, stop, ...) with every request:
    # accepted and not used, as the engine's configuration writes the answer
    model_config = ConfigDict(extra="ignore")
    model: str = Field(..., max_length=100, description="hoprag (multi-hop) or hoprag-single")
    messages: list[ChatMessage] = Field(..., min_length=1, max_length=200)
    stream: bool = False
    store: bool = Field(False, strict=True, description="store the (redacted) answer, a write: a token or this server's page")
    k: Optional[int] = Field(None, ge=1, le=50, description="hits per retrieval call (engine default when absent)")


def _question(body: ChatRequest) -> str:
    for message in reversed(body.messages):
        if message.role != "user":
            continue
        if isinstance(message.content, str):
            return message.content
        parts = [p.get("text", "") for p in message.content or () if p.get("type") == "text"]
        return "\n".join(str(p) for p in parts)
    raise ServiceError(422, "messages: there is no user message", 'end the messages with {"role": "user", '
                       '"content": "your question"}')


def _ask(body: ChatRequest) -> AskRequest:
    engine = MODELS.get(body.model)
    if engine is None:
        raise ServiceError(404, f"model '{body.model[:100]}' is not served here",
                           f"use one of: {', '.join(MODELS)} (GET /v1/models)")
    question = _question(body)
    if not question.strip():
        raise ServiceError(422, "the last user message is empty", "put the question in the last user message")
    ask = AskRequest.model_construct(question=question, k=body.k, engine=engine, mode="bm25", llm="default",
                                     store=body.store)
    check_question(ask)
    return ask


# An abstention has no answer text; a chat client shows an empty message as nothing at all, so the
# message says why there is none (the page's words).
ABSTAINED = "No answer: the documents you may see do not support one."


def message_text(view: dict[str, Any], answer_text: str | None = None) -> str:
    """The assistant message: the answer, its citation markers and the sources they point to."""
    text = view["answer"] if answer_text is None else answer_text
    if not text and view.get("abstained"):
        text = ABSTAINED
    return text + _sources(view)


def _sources(view: dict[str, Any]) -> str:
    citations = view["citations"]
    if not citations:
        return ""
    markers = "".join(f"[{c['marker']}]" for c in citations)
    lines = [f"[{c['marker']}] {c['title'] or c['doc_id']} ({c['doc_id']})" for c in citations]
    return f" {markers}\n\nSources:\n" + "\n".join(lines)


def _extra(view: dict[str, Any]) -> dict[str, Any]:
    """The ``hoprag`` field: everything of the answer's view but the text, the trail named as such."""
    extra = {k: v for k, v in view.items() if k not in ("answer", "question", "steps")}
    extra["trail"] = view["steps"]
    return extra


def _completion_id(trace_id: str) -> str:
    return "chatcmpl-" + trace_id


@router.get("/v1/models", tags=["openai"])
async def models(caller: Caller = Depends(reader)) -> dict[str, Any]:
    """The models a Chat Completions client may name: one per engine."""
    return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "hoprag"}
                                       for name in MODELS]}


@router.post("/v1/chat/completions", responses=ERRORS, tags=["openai"])
async def chat_completions(body: ChatRequest, request: Request, caller: Caller = Depends(reader)) -> Any:
    """An answer as a chat completion (``stream: true``: as chunks); the trail in the field ``hoprag``."""
    state = request.app.state.hoprag
    ask = _ask(body)
    if ask.store:
        may_write(state, caller, request)
    trace_id = new_trace_id()
    created = int(time.time())
    head = {"id": _completion_id(trace_id), "created": created, "model": body.model}
    if not body.stream:
        view = await answer(state, ask, caller, trace_id)
        return {**head, "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": message_text(view)}}],
                "hoprag": _extra(view)}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        data = {**head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    async def stream() -> AsyncIterator[str]:
        yield chunk({"role": "assistant", "content": ""})
        async for name, data in answer_events(state, ask, caller, trace_id):
            if name == "token":
                yield chunk({"content": data["text"]})
            elif name == "answer":
                if not data["answer"] and data.get("abstained"):
                    yield chunk({"content": ABSTAINED})
                sources = _sources(data)
                if sources:
                    yield chunk({"content": sources})
                yield chunk({}, "stop", hoprag=_extra(data))
            elif name == "error":
                error = openai_error(504 if "no answer within" in data["error"] else 500, data["error"], data["fix"])
                yield f"event: error\ndata: {json.dumps(error, ensure_ascii=False)}\n\n"
                return
        yield "data: [DONE]\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
