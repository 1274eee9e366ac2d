"""hoprag as an MCP server, driven by the MCP SDK's own client: over stdio (``hoprag serve --mcp stdio`` as a
subprocess) and streamable HTTP (``--mcp http``'s app on loopback), the four tools, clearance and tokens."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_helpers import ENTERPRISE, TOKENS, start_mcp_http

pytestmark = pytest.mark.integration
mcp = pytest.importorskip("mcp")  # the mcp extra (in dev)

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

QUESTION = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"
HOPRAG = str(Path(sys.executable).with_name("hoprag"))


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


def _text(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _calls(client_target, calls: list[tuple[str, dict]]) -> tuple[list[str], list]:
    async with Client(client_target) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        return names, [await client.call_tool(name, args) for name, args in calls]


def _http(url: str, token: str | None = None):
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


def _enterprise_cases() -> list[dict]:
    return [json.loads(line) for line in (ENTERPRISE / "cases.jsonl").read_text(encoding="utf-8").splitlines()]


def test_stdio_serves_the_four_tools_at_the_starting_users_clearance(enterprise_index: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(command=HOPRAG, args=["serve", str(enterprise_index), "--mcp", "stdio",
                                                         "--store", str(tmp_path / "store.db"), "--clearance", "internal"])
    names, (search, ask, hidden, unknown, shown) = _run(_calls(params, [
        ("search", {"query": "Bastion Fleet hosting region data residency", "k": 5}),
        ("ask", {"question": QUESTION}),
        ("get_document", {"doc_id": "contract-14"}),  # restricted: above internal
        ("get_document", {"doc_id": "contract-99"}),  # does not exist
        ("get_document", {"doc_id": "policy-14-v2", "span": "0:20"}),
    ]))
    assert names == ["search", "ask", "get_document", "evaluate"]
    hits = search.structured_content["result"]
    assert 1 <= len(hits) <= 5 and [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert not any(h["doc_id"].startswith("contract-") for h in hits) and all(h["text"] for h in hits)
    answer = ask.structured_content
    assert answer["clearance"] == "internal" and answer["stored"] is False and answer["steps"]
    assert not any(h["doc_id"].startswith("contract-") for s in answer["steps"] for h in s["hits"])
    # a hidden document is the same error as an unknown one, with the fix
    assert hidden.is_error and unknown.is_error
    assert _text(hidden).replace("contract-14", "X") == _text(unknown).replace("contract-99", "X")
    assert "Fix: use a doc_id from an answer's citations" in _text(hidden)
    doc = shown.structured_content
    assert doc["span"] == [0, 20] and doc["highlight"] == doc["text"][:20]


def test_hoprag_mcp_is_the_stdio_server(enterprise_index: Path, tmp_path: Path) -> None:
    """`hoprag mcp INDEX`, as an MCP client's configuration spells it, is `hoprag serve INDEX --mcp stdio`."""
    params = StdioServerParameters(command=HOPRAG, args=["mcp", str(enterprise_index), "--store", str(tmp_path / "s.db")])
    names, (search,) = _run(_calls(params, [("search", {"query": "data residency policy", "k": 3})]))
    assert names == ["search", "ask", "get_document", "evaluate"]
    hits = search.structured_content["result"]
    assert 1 <= len(hits) <= 3 and all(h["text"] for h in hits)


def test_stdio_refuses_a_tokens_file(enterprise_index: Path, tokens_file: Path, tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run([HOPRAG, "serve", str(enterprise_index), "--mcp", "stdio", "--tokens", str(tokens_file),
                           "--store", str(tmp_path / "s.db")], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "--mcp http" in done.stderr and done.stdout == ""


@pytest.fixture(scope="module")
def mcp_http(enterprise_index: Path, tokens_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, object]]:
    store = tmp_path_factory.mktemp("mcp-store") / "store.db"
    yield from start_mcp_http(enterprise_index, store, tokens=tokens_file)


def test_http_tools_run_at_the_tokens_clearance(mcp_http) -> None:
    url, _ = mcp_http
    calls = [("ask", {"question": QUESTION}), ("get_document", {"doc_id": "contract-14"})]
    _, (public_ask, public_doc) = _run(_calls(_http(url, TOKENS["public"]), calls))
    _, (restricted_ask, restricted_doc) = _run(_calls(_http(url, TOKENS["restricted"]), calls))
    assert public_ask.structured_content["clearance"] == "public"
    assert "contract-" not in json.dumps(public_ask.structured_content)
    assert public_doc.is_error and not restricted_doc.is_error
    assert restricted_doc.structured_content["acl"] == "restricted"
    assert any(h["doc_id"].startswith("contract-") for s in restricted_ask.structured_content["steps"] for h in s["hits"])


def test_http_without_a_token_or_from_another_host_gets_nothing(mcp_http) -> None:
    url, _ = mcp_http
    # no session, no tool list without a token: a 401 as for every API request (both were open before)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic eDp5"}):
        r = httpx.post(url, json=initialize, headers={**accept, **headers})
        assert r.status_code == 401 and set(r.json()) == {"error", "fix"}, r.text
        assert r.headers["www-authenticate"] == "Bearer" and r.headers["x-content-type-options"] == "nosniff"
    assert "mcp-session-id" not in r.headers
    # the SDK's transport refusals in the service's JSON too (a wrong Content-Type was plain text)
    r = httpx.post(url, content=json.dumps(initialize), headers={**accept, "Content-Type": "text/plain",
                                                                 "Authorization": f"Bearer {TOKENS['public']}"})
    assert r.status_code >= 400 and set(r.json()) == {"error", "fix"} and "Content-Type" in r.json()["fix"], r.text
    assert r.headers["x-content-type-options"] == "nosniff"
    # from another site's page: refused whatever the token (the transport asks servers to check Origin)
    for cross in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        r = httpx.post(url, json=initialize, headers={**accept, **cross, "Authorization": f"Bearer {TOKENS['public']}"})
        assert r.status_code == 403 and "another site" in r.json()["error"], r.text
    assert httpx.post(url, json=initialize, headers={**accept, **{"Authorization": f"Bearer {TOKENS['public']}"}}
                      ).status_code == 200
    r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Host": "rebind.attacker.example", "Authorization": f"Bearer {TOKENS['restricted']}"})
    assert r.status_code == 400 and set(r.json()) == {"error", "fix"} and r.headers["x-frame-options"] == "DENY"


def test_evaluate_scores_as_hoprag_eval_does(mcp_http, enterprise_index: Path) -> None:
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.attribution import TokenContainmentJudge
    from hoprag.evaluation.chain_eval import evaluate_chains
    from hoprag.index.store import load_index
    from hoprag.pipeline.factory import make_engine

    url, _ = mcp_http
    cases = _enterprise_cases()[:3]
    engine = make_engine("multihop", load_index(enterprise_index))
    traces = [engine.answer(c["query"], case_id=c["case_id"], run_id="mcp-eval") for c in cases]
    _, (scored, empty, broken) = _run(_calls(_http(url, TOKENS["reader"]), [
        ("evaluate", {"cases": cases, "traces": [t.to_dict() for t in traces]}),
        ("evaluate", {"cases": cases, "traces": []}),
        ("evaluate", {"cases": cases, "traces": [{"not": "a trace"}]}),
    ]))
    expected = evaluate_chains(load_cases(ENTERPRISE / "cases.jsonl")[:3], traces, judge=TokenContainmentJudge()).to_json()
    assert not scored.is_error, _text(scored)
    got = scored.structured_content
    assert got["aggregate"] == json.loads(json.dumps(expected["aggregate"]))
    assert [r["case_id"] for r in got["cases"]] == [c["case_id"] for c in cases]
    assert got["not_assessable"] == {}  # hoprag's own traces carry bridges and citations: every class assessed
    assert empty.is_error and "at least one case and one trace" in _text(empty)
    assert broken.is_error and "traces item 1" in _text(broken) and "Fix:" in _text(broken)
