"""Answer streaming from a real model server: token deltas from llama.cpp's OpenAI-compatible server,
the stream's deadline, and the service's streamed ask when its model server is dead.

The tiny model's answers are not judged; the tests check the protocol (tokens arrive one by one,
they join to the answer, citations point into the evidence, a failed stream falls back in time).
"""

from __future__ import annotations

import re

import httpx
import pytest
from service_helpers import free_port, model_engine, read_sse, start_service

from hoprag.llm.guard import LLMGuard, question_scope
from hoprag.llm.openai_compat import OpenAICompatLLM
from hoprag.pipeline.llm_roles import LLMSynthesizer
from hoprag.pipeline.roles import ExtractiveSynthesizer

pytestmark = pytest.mark.integration

QUESTION = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"
MODEL = "gemma3-270m"


@pytest.fixture(scope="module")
def evidence(enterprise_index):
    """Two passages the offline engine holds for the question (at full clearance)."""
    from hoprag.index.store import load_index
    from hoprag.pipeline.factory import make_engine

    trace = make_engine("multihop", load_index(enterprise_index)).answer(QUESTION)
    assert len(trace.evidence) >= 2
    return trace.evidence[:2]


def _plain(text: str) -> str:
    return " ".join(re.sub(r"\[E\d+(?:\s*,\s*E\d+)*\]", "", text).split())


def model_synthesiser(base_url: str) -> LLMSynthesizer:
    """The model synthesiser on the real server, with the offline one to fall back to."""
    # a budget as long as the call's timeout: the tiny model may take half a minute to read a new prompt
    return LLMSynthesizer(OpenAICompatLLM(MODEL, base_url=base_url, timeout=120.0), ExtractiveSynthesizer(),
                          guard=LLMGuard(budget=120.0), stream_max_tokens=24)


def test_real_server_streams_several_tokens_that_join_to_the_answer(llama_server, evidence) -> None:
    tokens: list[str] = []
    synth = model_synthesiser(llama_server)
    with question_scope() as scope:
        answer = synth.answer(QUESTION, evidence, on_token=tokens.append)
    assert scope.fallbacks == []  # the model answered: no fallback
    assert len(tokens) > 1  # real streaming, not one chunk
    assert _plain("".join(tokens)) == answer.text or answer.abstained
    shown = {e.chunk_id for e in evidence}
    assert all(c.chunk_id in shown for claim in answer.claims for c in claim.citations)
    assert synth.usage.prompt_tokens > 0 and 0 < synth.usage.completion_tokens <= 24  # the stream is counted


def test_a_spent_question_budget_falls_back_at_once_and_says_so(llama_server, evidence) -> None:
    tokens: list[str] = []
    synth = model_synthesiser(llama_server)
    with question_scope(budget=1e-6) as scope:
        answer = synth.answer(QUESTION, evidence, on_token=tokens.append)
    assert [f.cause for f in scope.fallbacks] == ["budget"]
    assert "stream failed" in scope.fallbacks[0].message and "model budget" in scope.fallbacks[0].message
    assert answer.text and _plain("".join(tokens)) == answer.text  # the offline text, streamed word by word


@pytest.fixture(scope="module")
def dead_model_service(enterprise_index, tmp_path_factory):
    """The service with an OpenAI-compatible model on a port where nothing listens."""
    store = tmp_path_factory.mktemp("service-dead-llm") / "store.db"
    yield from start_service(enterprise_index, store, clearance="restricted",
                             engine=model_engine(f"openai:{MODEL}", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=5.0),
                             request_timeout=20.0)


def test_a_dead_model_still_streams_an_answer_with_a_recorded_fallback(dead_model_service) -> None:
    with httpx.stream("GET", dead_model_service.url + "/api/ask/stream", params={"q": QUESTION, "store": "false"},
                      timeout=60) as r:
        assert r.status_code == 200
        events = read_sse(r)
    names = [n for n, _ in events]
    assert names[-1] == "answer", events[-1]  # not an 'error' event: it ended within the request timeout
    assert names.index("hop") < names.index("synthesising") < names.index("token")
    assert max(i for i, n in enumerate(names) if n == "hop") < names.index("synthesising")
    assert max(i for i, n in enumerate(names) if n == "token") < names.index("answer")
    final = events[-1][1]
    assert final["answer"] and any("fell back to offline" in w for w in final["warnings"])
    assert any("stream failed" in w for w in final["warnings"])
    assert _plain("".join(d["text"] for n, d in events if n == "token")) == final["answer"]
    evidence = {e["chunk_id"] for e in final["evidence"]}
    assert final["citations"] and all(c["chunk_id"] in evidence for c in final["citations"])


def test_a_dead_model_still_answers_the_json_ask(dead_model_service) -> None:
    r = httpx.post(dead_model_service.url + "/api/ask", json={"question": QUESTION, "store": False}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"] and any("fell back to offline" in w for w in body["warnings"])


@pytest.fixture(scope="module")
def synth_model_service(enterprise_index, llama_server, tmp_path_factory):
    """The service answering with the real model (planning and judging offline: --synth-only)."""
    store = tmp_path_factory.mktemp("service-synth-llm") / "store.db"
    yield from start_service(enterprise_index, store, clearance="restricted", request_timeout=120.0,
                             engine=model_engine(f"openai:{MODEL}", base_url=llama_server, timeout=90.0, synth_only=True))


def test_the_service_streams_the_real_model_token_by_token(synth_model_service) -> None:
    with httpx.stream("GET", synth_model_service.url + "/api/ask/stream", params={"q": QUESTION, "store": "false"},
                      timeout=150) as r:
        assert r.status_code == 200
        events = read_sse(r)
    names = [n for n, _ in events]
    assert names[0] == "start" and names[-1] == "answer", events[-1]
    assert max(i for i, n in enumerate(names) if n in ("hop", "hits", "judge")) < names.index("synthesising")
    assert names.index("synthesising") < names.index("token")
    final = events[-1][1]
    assert not any("stream failed" in w for w in final["warnings"])  # the model answered, no fallback
    tokens = [d["text"] for n, d in events if n == "token"]
    assert len(tokens) > 1  # deltas as the server sent them, not one chunk
    assert _plain("".join(tokens)) == final["answer"] or final["abstained"]
    held = {e["chunk_id"] for e in final["evidence"]}
    assert all(c["chunk_id"] in held for c in final["citations"])


@pytest.fixture(scope="module")
def slow_model_service(enterprise_index, llama_server, tmp_path_factory):
    """The service on the real llama.cpp server with a model budget shorter than the tiny model's
    planning call: the server is still busy with it when the answer is to be streamed."""
    store = tmp_path_factory.mktemp("service-slow-llm") / "store.db"
    yield from start_service(enterprise_index, store, clearance="restricted", request_timeout=8.0,
                             engine=model_engine(f"openai:{MODEL}", base_url=llama_server, timeout=4.0))


def test_a_spent_budget_on_the_real_server_still_ends_the_stream_in_an_answer(slow_model_service) -> None:
    # runs last: the server finishes the abandoned planning call after the test
    with httpx.stream("GET", slow_model_service.url + "/api/ask/stream", params={"q": QUESTION, "store": "false"},
                      timeout=60) as r:
        events = read_sse(r)
    names = [n for n, _ in events]
    assert names[-1] == "answer", events[-1]  # within the request timeout, not an 'error' event
    assert names.index("plan") < names.index("hop") < names.index("synthesising") < names.index("token")
    assert max(i for i, n in enumerate(names) if n == "hop") < names.index("synthesising")
    final = events[-1][1]
    assert final["answer"] and any("model budget" in w and "stream failed" in w for w in final["warnings"])
    assert _plain("".join(d["text"] for n, d in events if n == "token")) == final["answer"]
