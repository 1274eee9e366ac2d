"""The API over loopback against a real uvicorn: ask, stream, documents, feedback into the store, errors."""

from __future__ import annotations

import json

import httpx
import pytest
from service_helpers import read_sse

pytestmark = pytest.mark.integration

# Its chain runs through a restricted contract: below restricted the engine abstains (nothing to cite),
# so the tests that need an answer ask with the restricted token.
QUESTION = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"


def test_ask_answers_with_citations_and_stores_a_redacted_trace(server) -> None:
    r = httpx.post(server.url + "/api/ask", json={"question": QUESTION}, headers=server.auth("restricted"), timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["stored"] is True and body["clearance"] == "restricted"
    assert body["answer"] and not body["abstained"]
    assert body["citations"] and [c["marker"] for c in body["citations"]] == list(range(1, len(body["citations"]) + 1))
    assert all(c["start"] is not None and c["end"] > c["start"] for c in body["citations"])
    assert body["steps"][0]["hop"] == 1 and body["steps"][0]["hits"]
    trace = httpx.get(server.url + f"/api/traces/{body['trace_id']}", headers=server.auth("restricted")).json()
    assert trace["case_id"] == body["trace_id"] and trace["question"] == QUESTION
    assert "@" not in json.dumps(trace)  # redacted: no mailbox survives in the stored trace


def test_stream_orders_hop_events_then_tokens_then_the_answer(server) -> None:
    with httpx.stream("GET", server.url + "/api/ask/stream", params={"q": QUESTION, "store": "false"},
                      headers=server.auth("restricted"), timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = read_sse(r)
    names = [n for n, _ in events]
    assert names[0] == "start" and names[-1] == "answer"
    assert names.index("planning") < names.index("plan") < names.index("hop") < names.index("hits")
    assert names.index("hits") < names.index("synthesising") < names.index("token")
    assert "judge" in names
    assert max(i for i, n in enumerate(names) if n in ("hop", "hits", "judge")) < names.index("synthesising")
    tokens = [d["text"] for n, d in events if n == "token"]
    final = events[-1][1]
    assert tokens and "".join(tokens) == final["answer"]
    hops = [d["hop"] for n, d in events if n == "hop"]
    assert hops == sorted(hops) and hops[0] == 1
    assert final["stored"] is False


def test_document_span_is_highlighted_and_unknown_ones_are_json_404(server) -> None:
    ask = httpx.post(server.url + "/api/ask", json={"question": QUESTION, "store": False},
                     headers=server.auth("restricted"), timeout=30).json()
    cite = ask["citations"][0]
    doc = httpx.get(server.url + f"/api/documents/{cite['doc_id']}", params={"span": f"{cite['start']}:{cite['end']}"},
                    headers=server.auth("restricted")).json()
    assert doc["span"] == [cite["start"], cite["end"]]
    assert doc["highlight"] == doc["text"][cite["start"]:cite["end"]] and doc["highlight"]
    assert doc["before"] + doc["highlight"] + doc["after"] in doc["text"]
    bad = httpx.get(server.url + f"/api/documents/{cite['doc_id']}", params={"span": "9:1"}, headers=server.auth("restricted"))
    assert bad.status_code == 422 and set(bad.json()) == {"error", "fix"}
    missing = httpx.get(server.url + "/api/documents/no-such-doc", headers=server.auth("restricted"))
    assert missing.status_code == 404 and missing.json()["error"] == "no document 'no-such-doc'"


def test_feedback_lands_in_the_store_as_feedback_stage_metrics(server) -> None:
    ask = httpx.post(server.url + "/api/ask", json={"question": QUESTION}, headers=server.auth("restricted"), timeout=30).json()
    cite = ask["citations"][0]
    r = httpx.post(server.url + "/api/click", json={"trace_id": ask["trace_id"], "citation": cite["chunk_id"]},
                   headers=server.auth("restricted"))
    assert r.status_code == 200, r.text
    r = httpx.post(server.url + "/api/feedback", headers=server.auth("restricted"),
                   json={"trace_id": ask["trace_id"], "thumbs": "down", "tags": ["wrong_document", "missing_citation"],
                         "comment": "mail me at someone@example.com"})
    assert r.status_code == 200, r.text
    assert r.json()["stages"] == ["generate", "retrieve"] and r.json()["run_id"] == "svc-feedback"
    store = server.state.store.store
    events = [e for e in store.feedback("svc-feedback") if e.case_id == ask["trace_id"]]
    assert sorted(e.kind for e in events) == ["click", "tag", "tag", "thumbs", "view"]
    assert all("someone@example.com" not in json.dumps(e.meta) for e in events)
    metrics = {m.name: m.value for m in store.metrics("svc-feedback", stage="feedback")}
    assert metrics["tags.retrieve"] >= 1 and metrics["tag.missing_citation"] >= 1
    assert metrics["citation_clicks"] >= 1 and 0 < metrics["citation_ctr"] <= 1
    detail = httpx.get(server.url + "/api/runs/svc-feedback", headers=server.auth("restricted")).json()
    rows = {row["metric"]: row for row in detail["stages"]["feedback"]}
    assert rows["thumbs_up_rate_latest"]["status"] in ("warn", "block", "pass")
    assert rows["thumbs_up_rate_latest"]["threshold"]
    summary = httpx.get(server.url + "/api/feedback/summary", params={"run_id": "svc-feedback"},
                        headers=server.auth("restricted")).json()
    assert summary["tags_by_stage"]["retrieve"] >= 1 and summary["series"][-1]["down"] >= 1


def test_feedback_is_validated_against_the_tag_taxonomy(server) -> None:
    r = httpx.post(server.url + "/api/feedback", headers=server.auth("internal"),
                   json={"trace_id": "t-x", "tags": ["slow"]})
    assert r.status_code == 422 and "tags" in r.json()["error"]
    r = httpx.post(server.url + "/api/feedback", headers=server.auth("internal"), json={"trace_id": "t-unknown", "thumbs": "up"})
    assert r.status_code == 404 and r.json()["fix"]
    r = httpx.post(server.url + "/api/feedback", headers=server.auth("internal"), json={"trace_id": "t-unknown"})
    assert r.status_code == 422 and r.json()["error"] == "empty feedback"


@pytest.mark.parametrize(("method", "path", "kwargs", "status"), [
    ("GET", "/api/nothing-here", {}, 404),
    ("POST", "/api/ask", {"content": b"{not json"}, 422),
    ("POST", "/api/ask", {"json": {"question": "   "}}, 422),
    ("POST", "/api/ask", {"json": {"question": "x", "k": 0}}, 422),
    ("POST", "/api/ask", {"json": {"question": "x", "extra": 1}}, 422),
    ("POST", "/api/ask", {"content": b'{"question": "' + b"a" * 70000 + b'"}'}, 413),
    ("GET", "/api/ask/stream", {"params": {"q": ""}}, 422),
    ("GET", "/api/runs/no-such-run", {}, 404),
])
def test_errors_are_json_with_a_fix_and_never_a_traceback(server, method, path, kwargs, status) -> None:
    headers = {"Content-Type": "application/json", **server.auth("restricted")}
    r = httpx.request(method, server.url + path, headers=headers, timeout=30, **kwargs)
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "fix"} and body["error"] and body["fix"]
    assert "Traceback" not in r.text


def test_openapi_documents_every_endpoint_and_the_page_is_served(server) -> None:
    spec = httpx.get(server.url + "/openapi.json").json()
    for path in ("/api/ask", "/api/ask/stream", "/api/feedback", "/api/click", "/api/runs", "/api/runs/{run_id}",
                 "/api/traces/{trace_id}", "/api/documents/{doc_id}"):
        assert path in spec["paths"], path
    page = httpx.get(server.url + "/")
    assert page.status_code == 200 and "<form id=\"ask-form\"" in page.text
    assert "http" not in page.text.split("<body>")[0].replace('name="viewport"', "")  # no CDN in the head
    for asset in ("core.js", "trail.js", "runs.js", "app.js", "charts.js", "style.css"):
        assert httpx.get(server.url + f"/static/{asset}").status_code == 200
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "access-control-allow-origin" not in page.headers
