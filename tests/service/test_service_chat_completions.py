"""hoprag as an OpenAI-compatible model, driven by the official ``openai`` client against the running server:
answers with citations in the message and the trail in ``hoprag``, streamed and not; tokens and clearance
as for the API."""

from __future__ import annotations

import json

import httpx
import pytest
from service_helpers import TOKENS, LiveServer

pytestmark = pytest.mark.integration
openai = pytest.importorskip("openai")  # the dev extra brings it

# its chain runs through a restricted contract (contract-*): below restricted nothing supports it
QUESTION = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"


def client(server: LiveServer, who: str = "restricted") -> "openai.OpenAI":
    return openai.OpenAI(base_url=server.url + "/v1", api_key=TOKENS[who], max_retries=0, timeout=60)


def test_a_completion_is_the_apis_answer_with_citations_and_the_trail(server: LiveServer) -> None:
    completion = client(server).chat.completions.create(
        model="hoprag", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}])
    message = completion.choices[0].message
    extra = completion.model_extra["hoprag"]
    api = httpx.post(server.url + "/api/ask", json={"question": QUESTION, "store": False},
                     headers=server.auth("restricted"), timeout=60).json()
    assert message.role == "assistant" and completion.choices[0].finish_reason == "stop"
    assert completion.id == "chatcmpl-" + extra["trace_id"] and completion.model == "hoprag"
    # the message: the answer, its markers, then one source line per citation
    assert message.content.startswith(api["answer"] + " [1]")
    head, _, sources = message.content.partition("\n\nSources:\n")
    assert head.endswith("".join(f"[{c['marker']}]" for c in api["citations"]))
    assert sources.splitlines() == [f"[{c['marker']}] {c['title']} ({c['doc_id']})" for c in api["citations"]]
    # the extra field: the API's answer view, the steps named as the trail
    assert extra["citations"] == api["citations"] and extra["claims"] == api["claims"]
    assert [s["step_id"] for s in extra["trail"]] == [s["step_id"] for s in api["steps"]]
    assert extra["clearance"] == "restricted" and extra["stored"] is False
    assert any(h["doc_id"].startswith("contract-") for s in extra["trail"] for h in s["hits"])  # restricted: seen


def test_a_stream_is_the_answers_tokens_then_the_sources_then_the_trail(server: LiveServer) -> None:
    chunks = list(client(server).chat.completions.create(
        model="hoprag", messages=[{"role": "user", "content": QUESTION}], stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    extra = last.model_extra["hoprag"]
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(pieces) >= 2 and pieces[-1].startswith(" [1]") and "\n\nSources:\n[1] " in pieces[-1]  # the answer's tokens, then the sources
    whole = client(server).chat.completions.create(model="hoprag", messages=[{"role": "user", "content": QUESTION}])
    assert text == whole.choices[0].message.content  # the offline answer streams exactly what it answers
    assert extra["citations"] == whole.model_extra["hoprag"]["citations"]
    assert all(c.id == "chatcmpl-" + extra["trace_id"] for c in chunks)


def test_an_abstention_says_so_in_the_message_streamed_and_not(server: LiveServer) -> None:
    # public sees nothing of the restricted chain: the engine abstains, and a chat client must not show an empty reply
    whole = client(server, "public").chat.completions.create(model="hoprag",
                                                              messages=[{"role": "user", "content": QUESTION}])
    assert whole.model_extra["hoprag"]["abstained"] is True
    assert whole.choices[0].message.content == "No answer: the documents you may see do not support one."
    chunks = list(client(server, "public").chat.completions.create(
        model="hoprag", messages=[{"role": "user", "content": QUESTION}], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole.choices[0].message.content


def test_tokens_and_clearance_are_the_apis(server: LiveServer) -> None:
    public = client(server, "public").chat.completions.create(model="hoprag",
                                                               messages=[{"role": "user", "content": QUESTION}])
    extra = public.model_extra["hoprag"]
    assert extra["clearance"] == "public"
    shown = json.dumps(public.model_dump())
    assert "contract-" not in shown  # nothing above public: no citation, step or evidence names one
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.url + "/v1", api_key="not-a-token-at-all", max_retries=0).chat.completions.create(
            model="hoprag", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.PermissionDeniedError):  # store is a write: the read-only token may not
        client(server, "reader").chat.completions.create(model="hoprag", store=True,
                                                         messages=[{"role": "user", "content": QUESTION}])
    stored = client(server, "internal").chat.completions.create(model="hoprag", store=True,
                                                                messages=[{"role": "user", "content": QUESTION}])
    trace_id = stored.model_extra["hoprag"]["trace_id"]
    assert stored.model_extra["hoprag"]["stored"] is True
    assert httpx.get(server.url + f"/api/traces/{trace_id}", headers=server.auth("internal")).status_code == 200


def test_models_and_errors_speak_the_clients_language(server: LiveServer) -> None:
    c = client(server)
    assert [m.id for m in c.models.list()] == ["hoprag", "hoprag-single"]
    single = c.chat.completions.create(model="hoprag-single", messages=[{"role": "user", "content": QUESTION}])
    assert single.model_extra["hoprag"]["engine"].startswith("single")
    with pytest.raises(openai.NotFoundError, match="hoprag-single"):
        c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.UnprocessableEntityError, match="no user message"):
        c.chat.completions.create(model="hoprag", messages=[{"role": "system", "content": "hi"}])
    with pytest.raises(openai.UnprocessableEntityError, match="10,000"):
        c.chat.completions.create(model="hoprag", messages=[{"role": "user", "content": "why " * 3000}])
    # sampling options are accepted and not used; a list of content parts is read as text
    parts = c.chat.completions.create(model="hoprag", temperature=0.2, max_tokens=50, top_p=0.9,
                                      messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}]}])
    assert parts.choices[0].message.content
