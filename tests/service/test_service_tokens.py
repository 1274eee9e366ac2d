"""Tokens: writes need one when a token file is given; wrong or malformed tokens are 401; loading errors."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from service_helpers import TOKENS

from hoprag.errors import ConfigError
from hoprag.service.tokens import load_tokens

pytestmark = pytest.mark.integration
QUESTION = "What is the first-response target for critical incidents reported by Project Meridian?"


def test_every_request_without_a_token_is_401(server) -> None:
    """With a tokens file there is no anonymous caller: reads need a token as writes do."""
    requests = [("POST", "/api/ask", {"json": {"question": QUESTION}}),
                ("POST", "/api/ask", {"json": {"question": QUESTION, "store": False}}),
                ("GET", "/api/ask/stream", {"params": {"q": QUESTION}}),
                ("POST", "/api/ask/stream", {"json": {"question": QUESTION, "store": False}}),
                ("POST", "/api/feedback", {"json": {"trace_id": "t-1", "thumbs": "up"}}),
                ("POST", "/api/click", {"json": {"trace_id": "t-1", "citation": "x"}}),
                ("GET", "/api/whoami", {}), ("GET", "/api/runs", {}), ("GET", "/api/runs/svc-feedback", {}),
                ("GET", "/api/feedback/summary", {}), ("GET", "/api/traces/t-1", {}),
                ("GET", "/api/documents/contract-09", {}), ("GET", "/api/runs/svc-feedback/report", {})]
    for method, path, kwargs in requests:
        r = httpx.request(method, server.url + path, timeout=30, **kwargs)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", (method, path, r.text)
        assert "token" in r.json()["error"] and r.json()["fix"]


@pytest.mark.parametrize("header", [
    "Bearer tok-public-0123456788",          # one character off
    "Bearer " + TOKENS["public"][:-1],        # a prefix
    "Bearer " + TOKENS["public"] + "x",       # longer
    "Basic " + TOKENS["public"],              # wrong scheme
    "Bearer",
    TOKENS["public"],
])
def test_wrong_tokens_are_401(server, header) -> None:
    r = httpx.post(server.url + "/api/feedback", json={"trace_id": "t-1", "thumbs": "up"}, headers={"Authorization": header})
    assert r.status_code == 401, r.text
    assert set(r.json()) == {"error", "fix"}


def test_a_read_only_token_may_read_at_its_clearance_but_not_write(server) -> None:
    r = httpx.post(server.url + "/api/ask", json={"question": QUESTION}, headers=server.auth("reader"), timeout=30)
    assert r.status_code == 403
    r = httpx.post(server.url + "/api/ask", json={"question": QUESTION, "store": False}, headers=server.auth("reader"), timeout=30)
    assert r.status_code == 200 and r.json()["clearance"] == "internal"


def test_token_table_compares_every_entry_in_constant_time(monkeypatch, tokens_file: Path) -> None:
    import hmac

    table = load_tokens(tokens_file)
    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: calls.append(1) or real(a, b))
    assert table.lookup(TOKENS["public"]).name == "pat"
    assert len(calls) == len(table)  # no early exit on the first match
    calls.clear()
    assert table.lookup("nope-nope-nope") is None and len(calls) == len(table)


@pytest.mark.parametrize(("text", "message"), [
    ("tokens: {}\n", "lists no tokens"),
    ("nothing: here\n", "no 'tokens' list"),
    ("tokens:\n  - {name: a}\n", "has no 'token'"),
    ("tokens:\n  short: {name: a}\n", "shorter than 8"),
    ("tokens:\n  - {token: abcdefghij, clearance: top-secret}\n", "unknown clearance 'top-secret'"),
    ("tokens:\n  - {token: abcdefghij}\n  - {token: abcdefghij}\n", "repeats a token"),
    ("tokens: [\n", "not valid YAML"),
])
def test_bad_token_files_say_what_and_how_to_fix(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_tokens(path)


def test_mapping_shape_of_the_issue_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text("tokens:\n  abcdefghijkl: {name: alice, clearance: confidential}\n", encoding="utf-8")
    caller = load_tokens(path).lookup("abcdefghijkl")
    assert (caller.name, caller.clearance, caller.can_write) == ("alice", "confidential", True)


def test_serve_refuses_a_non_loopback_address_without_a_token_file(enterprise_index: Path) -> None:
    from typer.testing import CliRunner

    from hoprag.cli import app
    from hoprag.commands.serve import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    result = CliRunner().invoke(app, ["serve", str(enterprise_index), "--host", "0.0.0.0"])
    assert result.exit_code != 0
    assert "not a loopback address" in str(result.exception) + result.output
