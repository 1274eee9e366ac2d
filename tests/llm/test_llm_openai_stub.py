"""The OpenAI-compatible backend against a scripted HTTP server on loopback: every failure mode."""

from __future__ import annotations

import pytest
from llm_stub import StubReply, StubServer, chat_body, free_port

from hoprag.llm import (
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnavailableError,
    MissingAPIKeyError,
    RetryPolicy,
)
from hoprag.llm.openai_compat import OpenAICompatLLM
from hoprag.records import Usage

pytestmark = pytest.mark.unit

SCHEMA = {"title": "Answer", "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HOPRAG_API_KEY", "OPENAI_API_KEY", "HOPRAG_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def backend(server: StubServer, **kwargs: object) -> tuple[OpenAICompatLLM, list[float]]:
    sleeps: list[float] = []
    kwargs.setdefault("retry", RetryPolicy(max_retries=3, initial_delay=0.01, jitter=0.0))
    llm = OpenAICompatLLM("stub-model", base_url=server.url, sleep=sleeps.append, **kwargs)  # type: ignore[arg-type]
    return llm, sleeps


def test_plain_completion_sends_the_openai_request(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body=chat_body("Paris.", 12, 2, model="stub-model-v1")))
    llm, _ = backend(stub_server)
    result = llm.complete([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital?"}],
                          max_tokens=16)
    assert (result.text, result.model, result.usage, result.finish_reason) == (
        "Paris.", "stub-model-v1", Usage(12, 2, 0.0), "stop")
    request = stub_server.requests[0]
    assert (request["method"], request["path"]) == ("POST", "/v1/chat/completions")
    assert request["json"] == {
        "model": "stub-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital?"}],
        "max_tokens": 16,
        "temperature": 0.0,
    }
    assert "authorization" not in request["headers"]  # a local server needs no key


def test_api_key_is_sent_as_bearer(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body=chat_body("ok")))
    llm, _ = backend(stub_server, api_key="sk-local")
    llm.complete("q")
    assert stub_server.requests[0]["headers"]["authorization"] == "Bearer sk-local"


def test_429_then_200_waits_as_retry_after_says(stub_server: StubServer) -> None:
    stub_server.script(
        StubReply(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "0.2"}),
        StubReply(body=chat_body("ok")),
    )
    llm, sleeps = backend(stub_server)
    result = llm.complete("q")
    assert (result.text, result.attempts, sleeps) == ("ok", 2, [0.2])
    assert len(stub_server.requests) == 2


def test_persistent_429_raises_rate_limit_with_the_server_message(stub_server: StubServer) -> None:
    stub_server.script(*[StubReply(429, {"error": {"message": "Rate limit reached"}})] * 2)
    llm, sleeps = backend(stub_server, retry=RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0.0))
    with pytest.raises(LLMRateLimitError, match="HTTP 429: Rate limit reached"):
        llm.complete("q")
    assert sleeps == [0.01]


def test_5xx_are_retried_with_exponential_backoff(stub_server: StubServer) -> None:
    stub_server.script(StubReply(500, "oops"), StubReply(502, "bad gateway"), StubReply(503, "busy"),
                       StubReply(body=chat_body("finally")))
    llm, sleeps = backend(stub_server)
    assert llm.complete("q").text == "finally"
    assert sleeps == pytest.approx([0.01, 0.02, 0.04])


def test_5xx_beyond_the_retry_budget_raises_server_error(stub_server: StubServer) -> None:
    stub_server.script(*[StubReply(500, {"error": "model crashed"})] * 3)
    llm, _ = backend(stub_server, retry=RetryPolicy(max_retries=2, initial_delay=0.0))
    with pytest.raises(LLMServerError, match=r"/v1/chat/completions failed \(HTTP 500: model crashed\)") as info:
        llm.complete("q")
    assert info.value.status == 500 and len(stub_server.requests) == 3


def test_truncated_json_body_is_a_response_error_not_retried(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body='{"choices": [{"message": {"content": "Par'))
    llm, _ = backend(stub_server)
    with pytest.raises(LLMResponseError, match="not valid JSON \\(truncated\\?\\)"):
        llm.complete("q")
    assert len(stub_server.requests) == 1


def test_connection_cut_mid_body_is_retried(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body=chat_body("lost"), cut=True), StubReply(body=chat_body("whole")))
    llm, _ = backend(stub_server)
    assert llm.complete("q").text == "whole"


def test_body_without_choices_is_a_response_error(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body={"object": "chat.completion", "choices": []}))
    llm, _ = backend(stub_server)
    with pytest.raises(LLMResponseError, match="returned no choices"):
        llm.complete("q")


def test_401_without_a_key_names_hoprag_api_key(stub_server: StubServer) -> None:
    stub_server.script(StubReply(401, {"error": {"message": "Missing bearer token"}}))
    llm, _ = backend(stub_server)
    with pytest.raises(MissingAPIKeyError) as info:
        llm.complete("q")
    message = str(info.value)
    assert "requires an API key (HTTP 401: Missing bearer token) and none was given" in message
    assert "Fix: set HOPRAG_API_KEY" in message and info.value.variable == "HOPRAG_API_KEY"


def test_401_with_a_rejected_key_says_where_the_key_came_from(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    stub_server.script(StubReply(401, {"error": {"message": "Invalid key"}}))
    llm, _ = backend(stub_server)
    with pytest.raises(MissingAPIKeyError, match="rejected the API key from OPENAI_API_KEY"):
        llm.complete("q")


def test_404_points_at_the_base_url(stub_server: StubServer) -> None:
    stub_server.script(StubReply(404, {"detail": "Not Found"}))
    llm, _ = backend(stub_server)
    with pytest.raises(LLMError, match="answered 404: Not Found. Fix: check the base URL"):
        llm.complete("q")


def test_rejected_json_schema_falls_back_and_remembers(stub_server: StubServer) -> None:
    stub_server.script(
        StubReply(422, {"detail": "response_format.type: Input should be 'text' or 'json_object'"}),
        StubReply(body=chat_body('{"answer": "Paris"}')),
        StubReply(body=chat_body('{"answer": "Lyon"}')),
    )
    llm, _ = backend(stub_server)
    assert llm.complete("q", json_schema=SCHEMA).data == {"answer": "Paris"}
    assert llm.json_mode == "json_object+schema"
    assert llm.complete("q2", json_schema=SCHEMA).data == {"answer": "Lyon"}
    formats = [r["json"].get("response_format") for r in stub_server.requests]
    assert formats == [
        {"type": "json_schema", "json_schema": {"name": "Answer", "schema": SCHEMA}},
        {"type": "json_object", "schema": SCHEMA},
        {"type": "json_object", "schema": SCHEMA},
    ]


def test_a_server_without_any_json_mode_gets_prompt_only_json(stub_server: StubServer) -> None:
    stub_server.script(StubReply(400, {"error": {"message": "response_format is not supported"}}),
                       StubReply(400, {"error": {"message": "unknown field schema"}}),
                       StubReply(400, {"error": {"message": "json_object is not supported"}}),
                       StubReply(body=chat_body('Here: {"answer": "Paris"}')))
    llm, _ = backend(stub_server)
    assert llm.complete("q", json_schema=SCHEMA).data == {"answer": "Paris"}
    last = stub_server.requests[-1]["json"]
    assert "response_format" not in last and '"answer"' in last["messages"][0]["content"]
    assert llm.json_mode == "prompt"


def test_a_bad_request_without_json_is_not_retried(stub_server: StubServer) -> None:
    stub_server.script(StubReply(400, {"error": {"message": "max_tokens is too large"}}))
    llm, _ = backend(stub_server)
    with pytest.raises(LLMError, match=r"refused the request \(HTTP 400: max_tokens is too large\)"):
        llm.complete("q")
    assert len(stub_server.requests) == 1


def test_slow_server_times_out(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body=chat_body("late"), delay=1.0))
    llm, _ = backend(stub_server, timeout=0.1, retry=RetryPolicy(max_retries=0))
    with pytest.raises(LLMTimeoutError, match=r"within 0.1 s") as info:
        llm.complete("q")
    assert info.value.timeout == 0.1 and stub_server.url in str(info.value)


def test_unreachable_port_names_the_url_and_the_fix() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = OpenAICompatLLM("m", base_url=url, retry=RetryPolicy(max_retries=0))
    with pytest.raises(LLMUnavailableError) as info:
        llm.complete("q")
    message = str(info.value)
    assert f"cannot reach the LLM server at {url}/chat/completions" in message
    assert "HOPRAG_BASE_URL" in message and "--llm offline" in message
    assert info.value.url == url + "/chat/completions"


def test_list_models(stub_server: StubServer) -> None:
    stub_server.script(StubReply(body={"object": "list", "data": [{"id": "a"}, {"id": "b"}]}))
    llm, _ = backend(stub_server)
    assert llm.list_models() == ["a", "b"]
    assert stub_server.requests[0]["path"] == "/v1/models"


def test_a_400_on_every_level_keeps_the_constrained_mode(stub_server: StubServer) -> None:
    stub_server.script(*[StubReply(400, {"error": {"message": "temperature out of range"}})] * 4)
    llm, _ = backend(stub_server)
    with pytest.raises(LLMError, match="temperature out of range"):
        llm.complete("q", json_schema=SCHEMA)
    assert len(stub_server.requests) == 4 and llm.json_mode == "json_schema"


def test_a_500_naming_response_format_counts_as_a_rejection(stub_server: StubServer) -> None:
    # llama-cpp-python's server answers an unsupported response_format with HTTP 500
    stub_server.script(
        StubReply(500, {"error": {"message": "('body', 'response_format', 'type'): Input should be 'text'"}}),
        StubReply(body=chat_body('{"answer": "Paris"}')),
    )
    llm, sleeps = backend(stub_server)
    assert llm.complete("q", json_schema=SCHEMA).data == {"answer": "Paris"}
    assert llm.json_mode == "json_object+schema" and sleeps == []
