"""The OWASP ASVS 4.0.3 level-1 requirements that apply to ``hoprag serve``, one test each, named by its id.

The service is a JSON API and a script-built page, on loopback by default, whose callers are named by
bearer tokens (``--tokens``) or are the local user. Level-1 requirements that do not apply, and why:
V2 (passwords, OTP, lookup secrets: there are none; a token is a service credential from a file),
V3.2-V3.4 (cookie sessions: the service sets no cookie, V13.2.3 below), V4.3.1 (an admin interface with
MFA: there is none), V6 and V9 (TLS and stored secrets: plain HTTP on loopback; a non-loopback bind
needs --tokens and TLS is a proxy's), V10-V12.2 / V12.4-V12.6 (no uploads, no files written from
requests), V14.4.5 (HSTS: no HTTPS). V11.1.4 (anti-automation) is met by the per-request limits (body,
question length, request timeout), not a rate limit. The broader sweep is test_service_security.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import httpx
import pytest
from service_helpers import TOKENS, LiveServer, start_service

pytestmark = pytest.mark.integration
QUESTION = "Which wipe method is required when the gateways used under Project Wren are decommissioned?"
CROSS_SITE = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
STATIC = Path(str(files("hoprag.service") / "static"))


@pytest.fixture(scope="module")
def local(enterprise_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """No tokens, at restricted: whoever reaches it on this machine is the local caller."""
    store = tmp_path_factory.mktemp("asvs-store") / "store.db"
    yield from start_service(enterprise_index, store, clearance="restricted", run_id="asvs-run")


def _responses(server: LiveServer) -> list[httpx.Response]:
    """A page, an asset, an answer, a refusal, an error of every kind the API gives."""
    auth = server.auth("restricted")
    return [httpx.get(server.url + "/", headers=auth), httpx.get(server.url + "/static/app.js", headers=auth),
            httpx.get(server.url + "/api/whoami", headers=auth), httpx.get(server.url + "/api/runs"),
            httpx.get(server.url + "/api/traces/" + "x" * 500, headers=auth),
            httpx.post(server.url + "/api/ask", content=b"", headers={**auth, "Content-Type": "application/json"}),
            httpx.get(server.url + "/api/documents/no-such-doc", headers=auth),
            httpx.post(server.url + "/api/ask", content=b"x" * 70_000, headers=auth)]


# --- V3 session management ---------------------------------------------------------------------------


def test_v3_1_1_a_token_in_the_url_is_never_taken(server: LiveServer) -> None:
    for name in ("token", "access_token", "api_key", "authorization"):
        r = httpx.get(server.url + "/api/whoami", params={name: TOKENS["restricted"]})
        assert r.status_code == 401, (name, r.text)


# --- V4 access control -------------------------------------------------------------------------------


def test_v4_1_1_access_is_decided_by_the_server(server: LiveServer) -> None:
    # a restricted contract for a public token: what the client claims about itself changes nothing
    for claim in ({}, {"X-Clearance": "restricted"}, {"X-Forwarded-For": "127.0.0.1"}, {"X-Hoprag-Caller": "rita"}):
        r = httpx.get(server.url + "/api/documents/contract-14", headers={**server.auth("public"), **claim})
        assert r.status_code == 404, (claim, r.text)
    assert httpx.get(server.url + "/api/documents/contract-14", headers=server.auth("restricted")).status_code == 200


def test_v4_1_2_callers_cannot_set_their_own_clearance(server: LiveServer) -> None:
    body = {"question": QUESTION, "clearance": "restricted"}
    r = httpx.post(server.url + "/api/ask", json=body, headers=server.auth("public"), timeout=60)
    assert r.status_code == 422 and "clearance: is an unknown field" in r.json()["error"]
    r = httpx.get(server.url + "/api/whoami", params={"clearance": "restricted"}, headers=server.auth("public"))
    assert r.json()["clearance"] == "public"


def test_v4_1_3_each_token_has_only_its_own_rights(server: LiveServer) -> None:
    r = httpx.post(server.url + "/api/ask", json={"question": QUESTION, "store": True}, headers=server.auth("reader"),
                   timeout=60)
    assert r.status_code == 403 and r.json()["fix"]  # a read-only token may not store
    r = httpx.get(server.url + "/api/feedback/summary", headers=server.auth("internal"))
    assert r.status_code == 403  # whole-index counts: only for a token that sees every document
    assert httpx.get(server.url + "/api/feedback/summary", headers=server.auth("restricted")).status_code == 200


@pytest.mark.parametrize("value", ["Bearer", "Bearer two words", "Basic dG9rOng=", f"Bearer {TOKENS['restricted']}x",
                                   f"bearer{TOKENS['restricted']}", "Bearer tok\u00e9"])
def test_v4_1_5_a_broken_authorization_fails_closed(server: LiveServer, value: str) -> None:
    r = httpx.get(server.url + "/api/runs", headers={"Authorization": value.encode("utf-8")})
    assert r.status_code == 401 and set(r.json()) == {"error", "fix"}, r.text


def test_v4_2_1_another_callers_records_are_not_reachable_by_id(server: LiveServer) -> None:
    mine = httpx.post(server.url + "/api/ask", json={"question": QUESTION, "store": True},
                      headers=server.auth("restricted"), timeout=60).json()["trace_id"]
    server.state.store.flush()
    unknown = httpx.get(server.url + "/api/traces/t-00000000000000000000", headers=server.auth("internal"))
    other = httpx.get(server.url + f"/api/traces/{mine}", headers=server.auth("internal"))
    assert other.status_code == unknown.status_code == 404  # the same answer as for an id that never was
    feedback = httpx.post(server.url + "/api/feedback", json={"trace_id": mine, "thumbs": "down"},
                          headers=server.auth("public"))
    assert feedback.status_code in (403, 404, 422), feedback.text
    assert httpx.get(server.url + f"/api/traces/{mine}", headers=server.auth("restricted")).status_code == 200


def test_v4_2_2_a_write_from_another_site_is_refused(local: LiveServer) -> None:
    before = len(local.state.store.store.feedback(local.state.store.feedback_run))
    for path, body in (("/api/ask", {"question": QUESTION, "store": True}), ("/api/ask/stream", {"question": QUESTION}),
                       ("/api/feedback", {"trace_id": "t-1", "thumbs": "up"}), ("/api/click", {"trace_id": "t-1", "chunk_id": "c"})):
        r = httpx.post(local.url + path, json=body, headers=CROSS_SITE, timeout=60)
        assert r.status_code == 403, (path, r.text)
    local.state.store.flush()
    assert len(local.state.store.store.feedback(local.state.store.feedback_run)) == before


def test_v4_3_2_no_directory_listing(local: LiveServer) -> None:
    for path in ("/static/", "/static", "/api/", "/api/documents/"):
        r = httpx.get(local.url + path, follow_redirects=True)  # /static is sent on to /static/
        assert r.status_code in (404, 405, 422) and "app.js" not in r.text, (path, r.status_code)


# --- V5 validation, sanitisation and encoding ----------------------------------------------------------


def test_v5_1_3_inputs_are_checked_against_allow_lists(local: LiveServer) -> None:
    for body in ({"question": "x", "engine": "shell"}, {"question": "x", "k": 0}, {"question": "x", "k": 10_000},
                 {"question": "x", "mode": "sql"}):
        r = httpx.post(local.url + "/api/ask", json=body, timeout=30)
        assert r.status_code == 422 and r.json()["fix"], (body, r.text)
    r = httpx.post(local.url + "/api/feedback", json={"trace_id": "t-1", "tags": ["drop_tables"]})
    assert r.status_code == 422


def test_v5_1_4_structured_input_is_strongly_typed(local: LiveServer) -> None:
    for body in ({"question": {"$ne": ""}}, {"question": ["a"]}, {"question": "x", "k": "5; rm"}, {"question": "x", "store": "yes"}):
        r = httpx.post(local.url + "/api/ask", json=body, timeout=30)
        assert r.status_code == 422, (body, r.text)


def test_v5_1_5_no_redirect_leaves_the_server(local: LiveServer) -> None:
    for path in ("/api/runs/", "/static", "//evil.example/", "/api/ask/stream/"):
        r = httpx.get(local.url + path, headers={"Host": "localhost"})
        location = r.headers.get("location", "")
        assert not (300 <= r.status_code < 400) or location.startswith(("/", "http://localhost")), (path, location)
        assert "evil.example" not in location


def test_v5_3_3_the_page_writes_text_never_markup() -> None:
    # every view is built with textContent and DOM nodes: no sink that would parse text as HTML or code
    sinks = re.compile(r"\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|"
                       r"setTimeout\(\s*[\"'`]|\.srcdoc")
    found = {p.name: sinks.findall(p.read_text(encoding="utf-8")) for p in STATIC.glob("*.js")}
    assert len(found) >= 4 and not any(found.values()), found


def test_v5_3_4_ids_reach_the_store_as_parameters(local: LiveServer) -> None:
    for trace_id in ("' OR '1'='1", "x'; DROP TABLE traces; --", "t-1\" OR \"\"=\""):
        r = httpx.get(local.url + "/api/traces/" + httpx.URL(trace_id).raw_path.decode())
        assert r.status_code == 404 and set(r.json()) == {"error", "fix"}, r.text
    assert httpx.get(local.url + "/api/runs").status_code == 200  # the tables are all there


def test_v5_5_3_only_json_bodies_are_read(local: LiveServer) -> None:
    # a form or text body (what a cross-site form may send without a preflight) is never parsed as JSON
    before = len(local.state.store.store.traces(local.state.store.trace_run))
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        r = httpx.post(local.url + "/api/ask", content=b'{"question": "who", "store": true}',
                       headers={"Content-Type": content_type}, timeout=30)
        assert r.status_code in (415, 422), (content_type, r.status_code)
    local.state.store.flush()
    assert len(local.state.store.store.traces(local.state.store.trace_run)) == before


# --- V7 errors and logging -----------------------------------------------------------------------------


def test_v7_4_1_an_unexpected_error_is_a_generic_message(local: LiveServer, monkeypatch) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("secret detail /home/user/index at line 42")

    monkeypatch.setattr(local.state.pool, "answer", broken)
    r = httpx.post(local.url + "/api/ask", json={"question": QUESTION}, timeout=30)
    assert r.status_code == 500 and set(r.json()) == {"error", "fix"}
    assert "secret" not in r.text and "Traceback" not in r.text and "/home" not in r.text


# --- V8 data protection --------------------------------------------------------------------------------


def test_v8_2_1_nothing_is_kept_in_the_browsers_cache(server: LiveServer) -> None:
    for r in _responses(server):
        assert r.headers.get("cache-control") == "no-store", (r.request.url, r.status_code)


def test_v8_2_2_the_token_stays_out_of_local_storage() -> None:
    scripts = "\n".join(p.read_text(encoding="utf-8") for p in STATIC.glob("*.js"))
    assert "sessionStorage" in scripts and "localStorage.setItem" not in scripts
    assert "document.cookie" not in scripts and "indexedDB" not in scripts


def test_v8_3_1_the_page_sends_questions_in_bodies_not_urls() -> None:
    scripts = "\n".join(p.read_text(encoding="utf-8") for p in STATIC.glob("*.js"))
    assert 'fetch("/api/ask/stream", {method: "POST"' in scripts and "stream?q=" not in scripts
    assert "?token=" not in scripts and "Authorization" in scripts


# --- V12 files and resources -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/documents/..%2F..%2F..%2Fetc%2Fpasswd", "/static/..%2F..%2F__init__.py",
                                  "/static/%2e%2e/api.py", "/static/....//....//pyproject.toml"])
def test_v12_3_1_a_path_from_a_request_never_reaches_the_file_system(local: LiveServer, path: str) -> None:
    with httpx.Client() as client:
        r = client.send(client.build_request("GET", local.url + path), follow_redirects=False)
    assert r.status_code == 404 and "root:" not in r.text and "import" not in r.text, (path, r.text[:200])


# --- V13 API -------------------------------------------------------------------------------------------


def test_v13_2_1_only_the_methods_in_use(local: LiveServer) -> None:
    for method, path in (("TRACE", "/api/ask"), ("PUT", "/api/feedback"), ("DELETE", "/api/runs/asvs-run"),
                         ("PATCH", "/api/click"), ("GET", "/api/feedback"), ("GET", "/v1/chat/completions")):
        r = httpx.request(method, local.url + path)
        assert r.status_code == 405, (method, path, r.status_code)


def test_v13_2_3_no_cookie_to_forge_a_request_with(server: LiveServer, local: LiveServer) -> None:
    for r in [*_responses(server), *_responses(local)]:
        assert "set-cookie" not in r.headers, r.request.url


def test_v13_2_5_the_request_content_type_is_checked(server: LiveServer) -> None:
    r = httpx.post(server.url + "/v1/chat/completions", content=b'{"model": "hoprag", "messages": []}',
                   headers={**server.auth("restricted"), "Content-Type": "text/plain"})
    assert r.status_code in (415, 422), r.text


# --- V14 configuration ---------------------------------------------------------------------------------


def test_v14_3_2_no_debug_surface(local: LiveServer) -> None:
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect", "/debug", "/metrics"):
        assert httpx.get(local.url + path).status_code == 404, path


def test_v14_3_3_no_version_in_the_headers(server: LiveServer) -> None:
    for r in _responses(server):
        for name in ("server", "x-powered-by", "via"):
            assert not re.search(r"\d+\.\d+", r.headers.get(name, "")), (name, r.headers.get(name))


def test_v14_4_1_every_response_names_its_content_type_and_charset(server: LiveServer) -> None:
    for r in _responses(server):
        kind = r.headers.get("content-type", "")
        assert kind, r.request.url
        assert not kind.startswith("text/") or "charset=utf-8" in kind, (r.request.url, kind)


def test_v14_4_2_api_answers_are_attachments(server: LiveServer) -> None:
    for r in _responses(server):
        if r.request.url.path.startswith("/api/") and r.headers.get("content-type", "").startswith("application/json"):
            assert r.headers.get("content-disposition") == 'attachment; filename="api.json"', r.request.url


def test_v14_4_3_a_content_security_policy_on_every_response(server: LiveServer) -> None:
    for r in _responses(server):
        csp = r.headers.get("content-security-policy", "")
        assert "default-src 'self'" in csp and "'unsafe-inline'" not in csp and "frame-ancestors 'none'" in csp


def test_v14_4_4_nosniff_on_every_response(server: LiveServer) -> None:
    for r in _responses(server):
        assert r.headers.get("x-content-type-options") == "nosniff", r.request.url


def test_v14_4_6_no_referrer_leaves_the_page(server: LiveServer) -> None:
    for r in _responses(server):
        assert r.headers.get("referrer-policy") == "no-referrer", r.request.url


def test_v14_4_7_the_page_cannot_be_framed(server: LiveServer) -> None:
    for r in _responses(server):
        assert r.headers.get("x-frame-options") == "DENY", r.request.url


def test_v14_5_1_no_preflight_is_answered(local: LiveServer) -> None:
    r = httpx.options(local.url + "/api/ask", headers={"Origin": "https://evil.example",
                                                       "Access-Control-Request-Method": "POST"})
    assert r.status_code == 405 and not any(h.startswith("access-control-") for h in r.headers)


def test_v14_5_2_the_origin_header_grants_nothing(server: LiveServer) -> None:
    same = server.url
    r = httpx.get(server.url + "/api/runs", headers={"Origin": same, "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 401  # the page's own origin without a token is still nobody


def test_v14_5_3_no_cross_origin_reads_are_allowed(server: LiveServer) -> None:
    r = httpx.get(server.url + "/api/whoami", headers={**server.auth("restricted"), **CROSS_SITE})
    assert not any(h.startswith("access-control-") for h in r.headers)
    assert r.headers.get("cross-origin-resource-policy") == "same-origin"
