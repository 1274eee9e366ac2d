"""The answer stream is the engine's events: the SSE a request reads are the events the engine emits for
the same question (hoprag.service.streaming), and the service gets them only by handing the engine a
listener: no engine copied, no role swapped for a proxy, no private attribute read, no model streamed
outside the LLM layer."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import httpx
import pytest
from service_helpers import read_sse

from hoprag.pipeline.events import AnswerReady, Token
from hoprag.service.streaming import sse_event

pytestmark = pytest.mark.integration

SRC = Path(__file__).parents[2] / "src" / "hoprag"
QUESTION = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"
#: the multi-hop engine's roles and the listener: what a service that patched its engines would assign
ENGINE_PARTS = {"planner", "expander", "judge", "reranker", "synthesizer", "cache", "on_event"}


def folded(events: list[tuple[str, dict]]) -> list[tuple[str, object]]:
    """(name, data) with each run of ``hits`` (one hop's concurrent retrievals) as one sorted entry."""
    out: list[tuple[str, object]] = []
    for name, data in events:
        if name == "hits" and out and out[-1][0] == "hits":
            out[-1] = ("hits", sorted([*out[-1][1], json.dumps(data, sort_keys=True)]))
        else:
            out.append((name, [json.dumps(data, sort_keys=True)] if name == "hits" else data))
    return out


def test_the_stream_carries_the_events_the_engine_emits(server) -> None:
    with httpx.stream("GET", server.url + "/api/ask/stream", params={"q": QUESTION, "store": "false"},
                      headers=server.auth("restricted"), timeout=60) as r:
        streamed = read_sse(r)
    assert [n for n, _ in streamed][0] == "start" and streamed[-1][0] == "answer"
    # the same question, to the engine the service answers with, heard directly
    heard: list = []
    trace = server.state.pool.answer(QUESTION, trace_id="t-direct", run_id="direct", clearance="restricted",
                                     on_event=heard.append)
    expected = [shown for shown in map(sse_event, heard) if shown is not None]
    assert folded(streamed[1:-1]) == folded(expected)
    assert isinstance(heard[-1], AnswerReady) and heard[-1].trace == trace
    assert "".join(e.text for e in heard if isinstance(e, Token)) == trace.answer.text == streamed[-1][1]["answer"]


def test_the_json_answer_is_the_streamed_answer(server) -> None:
    body = httpx.post(server.url + "/api/ask", json={"question": QUESTION, "store": False},
                      headers=server.auth("restricted"), timeout=60).json()
    with httpx.stream("GET", server.url + "/api/ask/stream", params={"q": QUESTION, "store": "false"},
                      headers=server.auth("restricted"), timeout=60) as r:
        final = read_sse(r)[-1][1]
    assert (body["answer"], body["citations"], body["evidence"]) == (final["answer"], final["citations"],
                                                                      final["evidence"])


def service_offences(name: str, tree: ast.Module) -> list[str]:
    """Where a service module reads another object's private attribute, sets an engine's part or copies."""
    offenders = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            # os._exit is public (the documented way a forked worker ends without the parent's exit handlers)
            if owner not in ("self", "cls") and (owner, node.attr) != ("os", "_exit"):
                offenders.append(f"{name}:{node.lineno} reads .{node.attr} of another object")
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in ENGINE_PARTS:
                    offenders.append(f"{name}:{node.lineno} sets .{target.attr} (pass on_event to answer)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("copy", "deepcopy") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "copy":
            offenders.append(f"{name}:{node.lineno} copies an object (engines are shared, not copied)")
    return offenders


def stream_offences(rel: str, tree: ast.Module) -> list[str]:
    """Where a module asks a model server for a stream itself (a ``"stream": True`` body or ``stream=True``)."""
    offenders = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value == "stream" and isinstance(v, ast.Constant) and v.value is True
                for k, v in zip(node.keys, node.values)):
            offenders.append(f"{rel}:{node.lineno} asks a server for a stream")
        if isinstance(node, ast.Call) and any(
                kw.arg == "stream" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                for kw in node.keywords):
            offenders.append(f"{rel}:{node.lineno} asks for a stream")
    return offenders


def test_the_service_patches_no_engine_and_reads_no_private_attribute() -> None:
    offenders = [o for p in sorted((SRC / "service").glob("*.py"))
                 for o in service_offences(p.name, ast.parse(p.read_text(encoding="utf-8")))]
    assert offenders == [], offenders


def test_no_module_but_the_llm_layer_streams_from_a_model() -> None:
    """A streamed model call is LLM.stream's: the retries, the deadline and the usage are kept there."""
    offenders = [o for p in sorted(SRC.rglob("*.py")) if not p.relative_to(SRC).as_posix().startswith("llm/")
                 for o in stream_offences(p.relative_to(SRC).as_posix(), ast.parse(p.read_text(encoding="utf-8")))]
    assert offenders == [], offenders


def test_the_scans_see_what_they_look_for() -> None:
    patched = ast.parse("request = copy.copy(proto)\nrequest.planner = Wrapper(proto.planner)\nproto._pool.map(f)\n")
    assert len(service_offences("old.py", patched)) == 3
    streamed = ast.parse('body = {"model": m, "stream": True}\nllama.create_chat_completion(stream=True)\n')
    assert len(stream_offences("old.py", streamed)) == 2
