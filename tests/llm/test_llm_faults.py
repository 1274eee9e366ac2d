"""Model faults cost seconds: deadlines, connect vs read timeouts, dead ports, context-length errors.

Against a silent loopback server (accepts, never answers), a port nobody listens on, the scripted
HTTP stub, and the real llama.cpp server / in-process model for the context-length wording.
"""

from __future__ import annotations

import time

import httpx
import pytest
from llm_stub import SilentServer, StubReply, StubServer, chat_body, free_port

from hoprag.llm import (
    LLMBudgetError,
    LLMContextLengthError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnavailableError,
    RetryPolicy,
    ScriptedLLM,
)
from hoprag.llm.openai_compat import DEFAULT_CONNECT_TIMEOUT, OpenAICompatLLM

SCHEMA = {"title": "Answer", "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
LONG_PROMPT = " ".join(f"passage {i} says the retention period of plan KP-{i} is {i} years." for i in range(400))


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HOPRAG_API_KEY", "OPENAI_API_KEY", "HOPRAG_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


# --- deadlines ------------------------------------------------------------------------------------


@pytest.mark.unit
def test_a_silent_server_costs_one_attempt_cut_to_the_deadline() -> None:
    with SilentServer() as server:
        llm = OpenAICompatLLM("m", base_url=server.url, timeout=30.0,
                              retry=RetryPolicy(max_retries=3, initial_delay=0.01, jitter=0.0))
        with pytest.raises(LLMTimeoutError) as info:
            llm.complete("q", deadline=time.monotonic() + 0.4)
        assert server.connections == 1  # no retry: the deadline left no time for one
    assert info.value.timeout is not None and info.value.timeout <= 0.4
    assert info.value.attempts == 1


@pytest.mark.unit
def test_without_a_deadline_a_timeout_is_retried_as_configured() -> None:
    with SilentServer() as server:
        llm = OpenAICompatLLM("m", base_url=server.url, timeout=0.15,
                              retry=RetryPolicy(max_retries=1, initial_delay=0.0), sleep=lambda s: None)
        with pytest.raises(LLMTimeoutError, match="within 0.15 s"):
            llm.complete("q")
        assert server.connections == 2


@pytest.mark.unit
def test_backoff_never_waits_past_the_deadline() -> None:
    llm = ScriptedLLM([LLMServerError("busy", status=503)] * 4,
                      retry=RetryPolicy(max_retries=3, initial_delay=5.0, jitter=0.0))
    with pytest.raises(LLMServerError):
        llm.complete("q", deadline=time.monotonic() + 1.0)
    assert len(llm.history) == 1 and llm.sleeps == []  # the 5 s wait would pass the deadline
    llm.enqueue([])  # the rest of the script stays queued
    assert llm.pending == 3


@pytest.mark.unit
def test_a_passed_deadline_makes_no_call() -> None:
    llm = ScriptedLLM(["never sent"])
    with pytest.raises(LLMBudgetError, match="deadline passed before the call"):
        llm.complete("q", deadline=time.monotonic() - 0.01)
    assert llm.history == [] and llm.pending == 1


@pytest.mark.unit
def test_a_scripted_delay_honours_the_attempt_timeout() -> None:
    llm = ScriptedLLM(["late"], delay=5.0, retry=RetryPolicy(max_retries=0))
    with pytest.raises(LLMTimeoutError, match="scripted delay 5 s"):
        llm.complete("q", deadline=time.monotonic() + 0.05)


# --- dead ports and connect timeouts --------------------------------------------------------------


@pytest.mark.unit
def test_a_dead_port_fails_once_and_is_not_retried() -> None:
    llm = OpenAICompatLLM("m", base_url=f"http://127.0.0.1:{free_port()}/v1", retry=RetryPolicy(max_retries=3))
    with pytest.raises(LLMUnavailableError, match="Connection refused|cannot reach") as info:
        llm.complete("q")
    assert info.value.attempts == 1 and not info.value.retryable


@pytest.mark.unit
def test_connect_timeout_is_separate_from_the_read_timeout() -> None:
    llm = OpenAICompatLLM("m", base_url="http://127.0.0.1:9/v1", timeout=45.0)
    timeouts = llm._timeouts(45.0)
    assert (timeouts.connect, timeouts.read) == (DEFAULT_CONNECT_TIMEOUT, 45.0)
    cut = llm._timeouts(0.5)  # what a nearly spent budget leaves
    assert (cut.connect, cut.read) == (0.5, 0.5)


@pytest.mark.unit
def test_a_connect_timeout_means_unreachable_and_is_not_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectTimeout("timed out", request=request)

    llm = OpenAICompatLLM("m", base_url="http://10.255.255.1:8080/v1", retry=RetryPolicy(max_retries=3))
    llm._client = httpx.Client(transport=httpx.MockTransport(handler))
    with pytest.raises(LLMUnavailableError, match="no connection within 2 s"):
        llm.complete("q")
    assert len(calls) == 1


# --- context length -------------------------------------------------------------------------------

OPENAI_WORDING = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, you requested 2612 tokens "
        "(2100 in the messages, 512 in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
LLAMA_CPP_WORDING = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5000,
        "n_ctx": 4096,
    }
}


@pytest.mark.unit
def test_a_context_length_400_is_not_retried_at_another_json_level(stub_server: StubServer) -> None:
    stub_server.script(StubReply(400, OPENAI_WORDING), StubReply(body=chat_body('{"answer": "x"}')))
    llm = OpenAICompatLLM("m", base_url=stub_server.url, retry=RetryPolicy(max_retries=3))
    with pytest.raises(LLMContextLengthError) as info:
        llm.complete(LONG_PROMPT, json_schema=SCHEMA)
    assert len(stub_server.requests) == 1 and llm.json_mode == "json_schema"
    assert (info.value.window, info.value.prompt_tokens) == (2048, 2100)
    assert "window 2048 tokens, prompt 2100" in str(info.value) and "--n-ctx" in str(info.value)
    assert llm.context_window == 2048
    # the backend now knows how many tokens our characters make: its estimate of the same prompt is >= 2100
    assert llm.prompt_tokens(LONG_PROMPT, SCHEMA) >= 2100 - 10
    stub_server.replies.clear()


@pytest.mark.unit
def test_llama_cpp_server_wording_names_window_and_prompt(stub_server: StubServer) -> None:
    stub_server.script(StubReply(400, LLAMA_CPP_WORDING))
    llm = OpenAICompatLLM("m", base_url=stub_server.url)
    with pytest.raises(LLMContextLengthError) as info:
        llm.complete("q")
    assert (info.value.window, info.value.prompt_tokens) == (4096, 5000)


@pytest.mark.integration
def test_the_real_llama_cpp_server_context_error_is_recognised(llama_server: str) -> None:
    llm = OpenAICompatLLM("gemma3-270m", base_url=llama_server, timeout=120.0, retry=RetryPolicy(max_retries=0))
    try:
        with pytest.raises(LLMContextLengthError) as info:
            llm.complete(LONG_PROMPT * 2, max_tokens=16, json_schema=SCHEMA)
    finally:
        llm.close()
    assert info.value.window == 2048 and info.value.prompt_tokens and info.value.prompt_tokens > 2048
    assert llm.context_window == 2048
