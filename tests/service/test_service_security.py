"""The service's safe defaults, walked as a reviewer would, with real HTTP against uvicorn on loopback.

The OWASP ASVS level-1 checks that apply to a loopback API with bearer tokens: V4 access control
(every route takes its caller from hoprag.service.access; reads need a token when the server has a
tokens file; aggregates withheld below the clearance that sees every document), V4.2.2 / V13 CSRF
(writes need a token or a same-origin request; GET never writes), V5 input (ids length-checked, not
echoed; bodies capped, chunked too), V7 errors (JSON {error, fix}, protocol errors included, no
traceback), V14.4 headers (on every response, refusals and errors included), and DNS rebinding (the
Host allow-list of hoprag.service.guard).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_helpers import LiveServer, start_service

from hoprag.errors import ConfigError
from hoprag.service.guard import SECURITY_HEADERS

pytestmark = pytest.mark.integration
# its chain runs through a restricted contract
QUESTION = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"
CROSS_SITE = {"Origin": "https://rebind.attacker.example", "Sec-Fetch-Site": "cross-site"}


@pytest.fixture(scope="module")
def local(enterprise_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """No tokens, loopback, restricted: the server the issue's rebinding page read."""
    store = tmp_path_factory.mktemp("security-store") / "store.db"
    yield from start_service(enterprise_index, store, clearance="restricted", run_id="sec-run",
                             allow_hosts=("hoprag.internal.example",))


def _has_headers(r: httpx.Response) -> None:
    for name, value in SECURITY_HEADERS.items():
        if name != "Content-Security-Policy":  # the evaluation report sets a stricter one of its own
            assert r.headers.get(name) == value, (name, r.status_code, r.request.url)
    assert "content-security-policy" in r.headers


def _stored(server: LiveServer) -> tuple[int, int]:
    store = server.state.store
    store.flush()
    return len(store.store.traces(store.trace_run)), len(store.store.feedback(store.feedback_run))


# --- DNS rebinding: the Host allow-list ------------------------------------------------------------


@pytest.mark.parametrize("host", ["rebind.attacker.example", "rebind.attacker.example:8000", "127.0.0.1.nip.io",
                                  "localhost.attacker.example", "", "10.0.0.5"])
def test_a_host_name_not_on_the_list_gets_nothing(local: LiveServer, host: str) -> None:
    for path in ("/", "/api/documents/contract-14", "/api/whoami", "/openapi.json"):
        r = httpx.get(local.url + path, headers={"Host": host})
        assert r.status_code == 400, (host, path)
        assert set(r.json()) == {"error", "fix"} and "--allow-host" in r.json()["fix"]
        assert "MASTER" not in r.text and (not host or host not in r.text)
        _has_headers(r)
    r = httpx.post(local.url + "/api/ask", json={"question": QUESTION}, headers={"Host": host})
    assert r.status_code == 400


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:1234", "127.0.0.1", "127.1.2.3:9", "[::1]:8000",
                                  "app.localhost", "hoprag.internal.example", "hoprag.internal.example.:80"])
def test_loopback_names_and_allowed_hosts_are_answered(local: LiveServer, host: str) -> None:
    r = httpx.get(local.url + "/api/documents/contract-14", headers={"Host": host})
    assert r.status_code == 200 and r.json()["acl"] == "restricted"


@pytest.mark.unit
@pytest.mark.parametrize(("value", "taken"), [("*", False), ("http://hoprag.example", False), ("a b", False),
                                              ("hoprag.example/x", False), ("hoprag.example", True),
                                              ("hoprag.example:8443", True), ("[::1]:8000", True), ("10.0.0.7", True)])
def test_allow_host_takes_names_not_patterns_or_urls(value: str, taken: bool) -> None:
    # '*' or a URL matched no Host header and was taken without a word
    from hoprag.service.state import ServiceConfig

    if taken:
        assert ServiceConfig(index_dir="i", allow_hosts=(value,)).allow_hosts == (value,)
    else:
        with pytest.raises(ConfigError, match="is not a host name.*Fix: "):
            ServiceConfig(index_dir="i", allow_hosts=(value,))


# --- no state change on GET; writes need a token or this server's page ---------------------------


def test_a_get_never_stores_even_when_asked_to(local: LiveServer) -> None:
    before = _stored(local)
    r = httpx.get(local.url + "/api/ask/stream", params={"q": QUESTION, "store": "true"}, headers=CROSS_SITE)
    assert r.status_code == 422 and "POST /api/ask/stream" in r.json()["fix"]
    with httpx.stream("GET", local.url + "/api/ask/stream", params={"q": QUESTION}, headers=CROSS_SITE,
                      timeout=60) as r:
        assert r.status_code == 200
        last = [line for line in r.iter_lines() if line.startswith("data:")][-1]
    assert json.loads(last[5:])["stored"] is False
    assert _stored(local) == before


@pytest.mark.parametrize("headers", [CROSS_SITE, {"Sec-Fetch-Site": "same-site"},
                                     {"Origin": "http://127.0.0.1:1"}, {"Origin": "null"},
                                     {"Sec-Fetch-Site": "same-origin", "Origin": "https://rebind.attacker.example"}])
def test_writes_from_another_sites_page_are_refused(local: LiveServer, headers: dict) -> None:
    before = _stored(local)
    for path, body in (("/api/ask", {"question": QUESTION}), ("/api/ask/stream", {"question": QUESTION}),
                       ("/api/feedback", {"trace_id": "t-1", "thumbs": "up"}),
                       ("/api/click", {"trace_id": "t-1", "citation": "x"})):
        r = httpx.post(local.url + path, json=body, headers=headers, timeout=30)
        assert r.status_code == 403, (path, r.text)
        assert "another site" in r.json()["error"]
        _has_headers(r)
    assert _stored(local) == before


def test_writes_from_the_page_itself_and_from_scripts_are_taken(local: LiveServer) -> None:
    own = {"Origin": local.url, "Sec-Fetch-Site": "same-origin"}
    before = _stored(local)
    answer = httpx.post(local.url + "/api/ask", json={"question": QUESTION}, headers=own, timeout=30).json()
    assert answer["stored"] is True
    r = httpx.post(local.url + "/api/feedback", json={"trace_id": answer["trace_id"], "thumbs": "up"}, timeout=30)
    assert r.status_code == 200  # no Origin, no Sec-Fetch-Site: not sent by a web page
    traces, events = _stored(local)
    assert traces == before[0] + 1 and events == before[1] + 2  # the view and the thumbs


# --- with tokens: reads need a token, aggregates only for those who see every document -------------


def test_aggregates_are_withheld_below_the_clearance_that_sees_every_document(server: LiveServer) -> None:
    for who, status in (("public", 403), ("internal", 403), ("reader", 403), ("restricted", 200)):
        for path in ("/api/runs/svc-feedback", "/api/feedback/summary"):
            r = httpx.get(server.url + path, headers=server.auth(who))
            assert r.status_code == status, (who, path, r.text)
            if status == 403:
                assert "restricted" in r.json()["fix"] and "36" not in r.text
    runs = httpx.get(server.url + "/api/runs", headers=server.auth("public"))
    assert runs.status_code == 200 and all(set(r) == {"run_id", "kind", "created_at", "artifact_id", "status"}
                                           for r in runs.json())
    who = httpx.get(server.url + "/api/whoami", headers=server.auth("internal")).json()
    assert (who["name"], who["clearance"], who["tokens_required"]) == ("ines", "internal", True)


def test_clearance_with_tokens_is_one_refused_rule(enterprise_index: Path, tokens_file: Path, tmp_path: Path) -> None:
    from hoprag.service.app import ServiceConfig, create_app

    config = ServiceConfig(index_dir=enterprise_index, store=str(tmp_path / "s.db"), tokens=tokens_file,
                           clearance="internal")
    with pytest.raises(ConfigError, match="with --tokens every request needs a token"):
        create_app(config)


def test_serve_prints_who_may_call_it(monkeypatch, enterprise_index: Path, tokens_file: Path, tmp_path: Path) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from hoprag.cli import app

    def run(application, **options: object) -> None:
        application.state.hoprag.store.close()
        application.state.hoprag.executor.shutdown(wait=False)

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.chdir(tmp_path)
    base = ["serve", str(enterprise_index), "--store", str(tmp_path / "store.db")]
    said = CliRunner().invoke(app, [*base, "--tokens", str(tokens_file)]).output
    assert "the 4 tokens of" in said and "without a token are refused (401)" in said and "above the" not in said
    said = CliRunner().invoke(app, [*base, "--clearance", "internal"]).output
    assert "at clearance 'internal'" in said and "9 of 36 documents are above the 'internal' clearance" in said
    result = CliRunner().invoke(app, [*base, "--tokens", str(tokens_file), "--clearance", "internal"])
    assert isinstance(result.exception, ConfigError) and "drop --clearance" in str(result.exception)


# --- input, errors, headers --------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/traces/{}", "/api/runs/{}", "/api/documents/{}", "/api/runs/{}/report"])
def test_over_long_ids_are_422_and_never_echoed(server: LiveServer, path: str) -> None:
    long_id = "A" * 5000
    r = httpx.get(server.url + path.format(long_id), headers=server.auth("restricted"))
    assert r.status_code == 422, r.text
    assert long_id[:100] not in r.text and len(r.content) < 600
    _has_headers(r)


def test_a_huge_url_and_a_malformed_header_are_json_errors(server: LiveServer) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    # a request line still incomplete after 20 KB (the parser holds at most 16 KB) is refused; the rest of
    # a long URL is never sent, as the kernel would reset a connection closed with unread bytes
    for raw in (b"GET /api/traces/" + b"A" * 20_000,
                b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nthis is not a header\r\n\r\n",
                b"NOT-HTTP\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(raw)
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), head[:80]
        assert b"content-type: application/json" in head.lower() and b"x-frame-options: deny" in head.lower()
        assert set(json.loads(body)) == {"error", "fix"} and b"AAAA" not in reply


def test_bodies_over_the_limit_are_413_declared_or_chunked(server: LiveServer) -> None:
    big = b'{"question": "' + b"a" * 164_000 + b'"}'

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(big), 4096):
            yield big[i:i + 4096]

    for content in (big, chunks()):
        r = httpx.post(server.url + "/api/ask", content=content, timeout=30,
                       headers={"Content-Type": "application/json", **server.auth("restricted")})
        assert r.status_code == 413, r.text
        assert set(r.json()) == {"error", "fix"}
        _has_headers(r)


def test_every_response_carries_the_security_headers(server: LiveServer, local: LiveServer) -> None:
    auth = server.auth("restricted")
    responses = [httpx.get(server.url + "/"), httpx.get(server.url + "/static/app.js"),
                 httpx.get(server.url + "/openapi.json"), httpx.get(server.url + "/api/whoami"),
                 httpx.get(server.url + "/api/whoami", headers=auth),
                 httpx.get(server.url + "/api/nothing", headers=auth),
                 httpx.post(server.url + "/api/ask", json={"question": ""}, headers=auth),
                 httpx.get(server.url + "/api/runs/no-such-run", headers=auth),
                 httpx.get(server.url + "/api/runs/svc-feedback", headers=server.auth("public")),
                 httpx.delete(server.url + "/api/ask", headers=auth)]
    assert sorted({r.status_code for r in responses}) == [200, 401, 403, 404, 405, 422]
    for r in responses:
        _has_headers(r)
        if r.status_code >= 400:
            assert set(r.json()) == {"error", "fix"}


def test_an_unexpected_failure_is_a_json_500_with_the_headers(local: LiveServer, monkeypatch) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom at /secret/path")

    monkeypatch.setattr(local.state.pool, "answer", broken)
    r = httpx.post(local.url + "/api/ask", json={"question": QUESTION, "store": False}, timeout=30)
    assert r.status_code == 500 and r.json() == {"error": "internal error (RuntimeError)",
                                                 "fix": "see the server log; the request was not completed"}
    assert "/secret/path" not in r.text
    _has_headers(r)


# --- one mechanism: no route without a caller --------------------------------------------------------


def test_every_api_route_takes_its_caller_from_the_access_module(server: LiveServer) -> None:
    from fastapi.routing import APIRoute

    from hoprag.service import access

    def calls(dependant) -> set:
        found = {dependant.call}
        for sub in dependant.dependencies:
            found |= calls(sub)
        return found

    def walk(routes) -> Iterator[APIRoute]:
        for route in routes:
            if isinstance(route, APIRoute):
                yield route
            inner = getattr(getattr(route, "original_router", None), "routes", None) or getattr(route, "routes", None)
            yield from walk(inner or ())

    routes = [r for r in walk(server.app.routes) if r.path.startswith(("/api/", "/v1/"))]
    assert len(routes) >= 12
    for route in routes:
        assert calls(route.dependant) & {access.reader, access.writer}, route.path
    writes = {r.path for r in routes if access.writer in calls(r.dependant)}
    assert writes == {"/api/feedback", "/api/click"}  # asks write only with store: they call may_write
    assert all("GET" not in r.methods for r in routes if r.path in writes)
