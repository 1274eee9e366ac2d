"""The service refuses what the engines refuse, in the house words: one question limit, plain 422s."""

from __future__ import annotations

import httpx
import pytest

from hoprag.errors import InputError
from hoprag.pipeline.question_check import MAX_QUESTION_CHARS, check_question

pytestmark = pytest.mark.integration

PYDANTIC_WORDS = ("Input should be", "validation error for", "Value error,", "type=", "Field required",
                  "Extra inputs", "errors.pydantic.dev")


def test_an_over_long_question_is_refused_at_the_engines_limit(server) -> None:
    question = "why " * (MAX_QUESTION_CHARS // 4) + "?"
    with pytest.raises(InputError):  # the engines refuse it too: one limit
        check_question(question)
    r = httpx.post(server.url + "/api/ask", json={"question": question}, headers=server.auth("internal"), timeout=30)
    assert r.status_code == 422, r.text
    assert "10,001" in r.json()["error"] and "10,000" in r.json()["error"] and r.json()["fix"]
    stream = httpx.get(server.url + "/api/ask/stream", params={"q": "why " * 3000}, headers=server.auth("internal"),
                       timeout=30)
    assert stream.status_code == 422 and "12,000" in stream.json()["error"] and "10,000" in stream.json()["error"]


def test_a_question_at_the_limit_is_answered(server) -> None:
    question = ("Which hosting region holds the Bastion Fleet data? " * 400)[:MAX_QUESTION_CHARS]
    r = httpx.post(server.url + "/api/ask", json={"question": question, "store": False},
                   headers=server.auth("internal"), timeout=60)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(("body", "words"), [
    ({"question": "x", "k": 0}, "k: must be at least 1"),
    ({"question": "x", "extra": 1}, "extra: is an unknown field"),
    ({"question": {"text": "x"}}, "question: must be text"),
    ({"question": "x", "engine": "fast"}, "engine: is not one of the allowed values"),
    ({}, "question: is missing"),
])
def test_422_bodies_say_the_field_what_was_wrong_and_the_fix(server, body, words) -> None:
    r = httpx.post(server.url + "/api/ask", json=body, headers=server.auth("internal"), timeout=30)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and r.json()["fix"]
    assert not any(w in r.text for w in PYDANTIC_WORDS), r.text


@pytest.mark.parametrize(("path", "content", "words"), [
    ("/api/ask", b"", "body: is empty (a JSON object was expected)"),
    ("/api/feedback", b"", "body: is empty (a JSON object was expected)"),
    ("/api/ask", b"not json", "body: is not valid JSON"),
])
def test_an_empty_or_broken_body_is_named_as_the_body(server, path, content, words) -> None:
    # an empty POST said 'invalid request: is missing' and 'add the value'; broken JSON named a field '0'
    r = httpx.post(server.url + path, content=content,
                   headers={"Content-Type": "application/json", **server.auth("internal")}, timeout=30)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "the value" not in r.json()["fix"] and "0:" not in r.json()["error"]


def test_bytes_that_are_not_utf8_are_a_plain_refusal(server) -> None:
    r = httpx.post(server.url + "/api/ask", content=b'{"question": "who \xff founded it"}',
                   headers={"Content-Type": "application/json", **server.auth("internal")}, timeout=30)
    assert r.status_code in (400, 422), r.text  # Starlette cannot decode the body: 400
    assert not any(w in r.text for w in PYDANTIC_WORDS), r.text
    assert r.json()["fix"]
