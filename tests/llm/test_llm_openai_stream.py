"""The OpenAI-compatible backend's stream against a scripted loopback server: the request it sends,
the deltas it hands out, the usage it counts, and which failures are retried (only before the first piece)."""

from __future__ import annotations

import json

import pytest
from llm_stub import StubReply, StubServer

from hoprag.llm import LLMServerError, RetryPolicy
from hoprag.llm.openai_compat import OpenAICompatLLM
from hoprag.llm.pricing import ModelPrice, PriceTable
from hoprag.records import Usage

pytestmark = pytest.mark.unit


def events(*texts: str, usage: tuple[int, int] | None = None, error: str | None = None) -> bytes:
    """An event stream as llama.cpp's and OpenAI's servers send it: a role delta, one delta per text,
    the finish, the usage when given, then [DONE] (or an error event after the texts)."""
    chunks = [{"model": "stub-v1", "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
    chunks += [{"model": "stub-v1", "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]}
               for t in texts]
    if error is not None:
        chunks.append({"error": {"message": error}})
    else:
        chunks.append({"model": "stub-v1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if usage is not None:
            chunks.append({"model": "stub-v1", "choices": [], "usage": {"prompt_tokens": usage[0],
                                                                          "completion_tokens": usage[1]}})
    lines = [": keep-alive\n\n"] + [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def backend(server: StubServer, **kwargs: object) -> tuple[OpenAICompatLLM, list[float]]:
    sleeps: list[float] = []
    kwargs.setdefault("retry", RetryPolicy(max_retries=2, initial_delay=0.01, jitter=0.0))
    llm = OpenAICompatLLM("stub-model", base_url=server.url, sleep=sleeps.append, **kwargs)  # type: ignore[arg-type]
    return llm, sleeps


def test_a_stream_hands_out_each_delta_and_the_servers_usage(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body=events("Paris", " is", " the capital.", usage=(12, 4))))
    llm, _ = backend(stub_server)
    llm.prices = PriceTable(models={"stub-model": ModelPrice(input_per_million=1.0, output_per_million=2.0)})
    stream = llm.stream([{"role": "user", "content": "Capital?"}], max_tokens=16)
    assert list(stream) == ["Paris", " is", " the capital."]
    done = stream.completion
    assert (done.text, done.model, done.finish_reason, done.attempts) == ("Paris is the capital.", "stub-v1", "stop", 1)
    assert done.usage == Usage(12, 4, (12 * 1.0 + 4 * 2.0) / 1e6)
    request = stub_server.requests[0]
    assert request["json"] == {"model": "stub-model", "messages": [{"role": "user", "content": "Capital?"}],
                               "max_tokens": 16, "temperature": 0.0, "stream": True,
                               "stream_options": {"include_usage": True}}
    assert request["headers"]["accept"] == "text/event-stream"


def test_a_server_error_before_the_first_piece_is_retried(stub_server: StubServer) -> None:
    stub_server.script(StubReply(503, {"error": {"message": "loading model"}}), StubReply(body=events("Paris.")))
    llm, sleeps = backend(stub_server)
    stream = llm.stream("Capital?")
    assert "".join(stream) == "Paris." and stream.completion.attempts == 2
    assert sleeps == [0.01] and len(stub_server.requests) == 2


def test_an_error_after_the_first_piece_is_not_retried(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body=events("Par", error="the model crashed")), StubReply(body=events("Paris.")))
    llm, sleeps = backend(stub_server)
    read: list[str] = []
    with pytest.raises(LLMServerError, match="failed mid-stream: the model crashed") as info:
        for piece in llm.stream("Capital?"):
            read.append(piece)
    assert read == ["Par"] and info.value.attempts == 1
    assert sleeps == [] and len(stub_server.requests) == 1  # the pieces already handed out cannot be taken back


def test_a_server_refusing_stream_options_streams_without_them(stub_server: StubServer) -> None:
    stub_server.script(StubReply(400, {"error": {"message": "unknown field: stream_options"}}),
                       StubReply(body=events("Paris", " is", " big.")))
    llm, sleeps = backend(stub_server)
    stream = llm.stream("Capital of France?")
    assert "".join(stream) == "Paris is big." and sleeps == []
    assert "stream_options" not in stub_server.requests[1]["json"]
    # no usage reported: estimated from the text, as for any backend without a tokenizer
    assert stream.completion.usage.prompt_tokens > 0 and stream.completion.usage.completion_tokens > 0
