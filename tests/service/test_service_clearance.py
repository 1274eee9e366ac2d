"""Clearance: with a public token nothing above public reaches any response, event, document or stored trace."""

from __future__ import annotations

import json

import httpx
import pytest
from service_helpers import ENTERPRISE, read_sse

pytestmark = pytest.mark.integration


def _docs_by_acl() -> dict[str, set[str]]:
    levels: dict[str, set[str]] = {}
    for line in (ENTERPRISE / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        levels.setdefault(doc["acl"], set()).add(doc["id"])
    return levels


def _questions() -> list[str]:
    return [json.loads(line)["query"] for line in (ENTERPRISE / "cases.jsonl").read_text(encoding="utf-8").splitlines()]


def _titles(ids: set[str]) -> set[str]:
    out = set()
    for line in (ENTERPRISE / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        if doc["id"] in ids:
            out.add(doc["title"])
    return out


def test_public_caller_never_sees_a_document_above_public(server) -> None:
    levels = _docs_by_acl()
    hidden = levels["internal"] | levels["restricted"]
    hidden_titles = _titles(hidden)
    seen_public: set[str] = set()
    auth = server.auth("public")
    for question in _questions():
        answer = httpx.post(server.url + "/api/ask", json={"question": question}, headers=auth, timeout=30)
        assert answer.status_code == 200
        with httpx.stream("GET", server.url + "/api/ask/stream", params={"q": question}, headers=auth, timeout=30) as r:
            events = read_sse(r)
        trace = httpx.get(server.url + f"/api/traces/{answer.json()['trace_id']}", headers=auth)
        assert trace.status_code == 200
        for text in (answer.text, json.dumps(events), trace.text):
            assert not any(f'"{doc_id}"' in text for doc_id in hidden), question
            assert not any(title in text for title in hidden_titles), question
        seen_public |= {c["doc_id"] for c in answer.json()["citations"]}
    assert seen_public and seen_public <= levels["public"]
    # the stored traces of this caller hold nothing above public either
    server.state.store.flush()
    stored = server.state.store.store.traces(server.state.store.trace_run)
    assert stored and all(json.dumps(t.to_dict()).count("contract-") == 0 for t in stored if t.question in _questions())


def test_a_hidden_document_is_the_same_404_as_an_unknown_one(server) -> None:
    public = server.auth("public")
    hidden = httpx.get(server.url + "/api/documents/contract-14", params={"span": "0:10"}, headers=public)
    unknown = httpx.get(server.url + "/api/documents/contract-99", params={"span": "0:10"}, headers=public)
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json()["fix"] == unknown.json()["fix"]
    assert hidden.json()["error"].replace("contract-14", "X") == unknown.json()["error"].replace("contract-99", "X")
    allowed = httpx.get(server.url + "/api/documents/contract-14", headers=server.auth("restricted"))
    assert allowed.status_code == 200 and allowed.json()["acl"] == "restricted"


def test_an_internal_trace_is_not_shown_to_a_public_caller(server) -> None:
    question = "How long is customer data retained for the plan that Project Basalt currently subscribes to?"
    answer = httpx.post(server.url + "/api/ask", json={"question": question}, headers=server.auth("restricted"), timeout=30).json()
    assert any(c["doc_id"].startswith("contract-") for c in answer["citations"] + [h for s in answer["steps"] for h in s["hits"]])
    assert httpx.get(server.url + f"/api/traces/{answer['trace_id']}", headers=server.auth("public")).status_code == 404
    assert httpx.get(server.url + f"/api/traces/{answer['trace_id']}", headers=server.auth("restricted")).status_code == 200
