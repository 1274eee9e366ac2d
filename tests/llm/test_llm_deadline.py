"""One wall-clock deadline per question (:mod:`hoprag.llm.deadline`): model servers that trickle, never
answer, stall after their headers or stream forever cannot make a question outlive its budget.

Every server here is real (a socket on loopback), misbehaves in one way, and stops by itself after
``LIFE`` seconds. The bounds asserted are budget + 1 s of wall time (a bound, not a benchmark);
the budget is spent by the first model call, so every later role falls back at once.
"""

from __future__ import annotations

import ast
import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.llm import deadline as call_deadline
from hoprag.llm.base import LLM, RetryPolicy
from hoprag.llm.errors import LLMResponseError, LLMTimeoutError, LLMUnavailableError
from hoprag.llm.openai_compat import OpenAICompatLLM

sys.path.insert(0, str(Path(__file__).parent))
from llm_stub import chat_body, free_port  # noqa: E402

ROOT = Path(__file__).parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
QUESTION = "Under the current retention policy, how long is customer data kept for the plan acquired under Project Orion?"
#: seconds after which a misbehaving server stops by itself, whatever the test does
LIFE = 20.0
#: how far past its budget a question may end (the guarantee)
SLACK = 1.0


# --- servers that misbehave --------------------------------------------------------------------------


def _reply_bytes() -> bytes:
    body = json.dumps(chat_body('{"sub_queries": [{"order": 1, "query": "x"}]}')).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _sse_event(text: str) -> bytes:
    event = f'data: {json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})}\n\n'.encode()
    return f"{len(event):x}\r\n".encode() + event + b"\r\n"  # one HTTP chunk


class FaultyServer:
    """An HTTP server on loopback that answers every request in one broken way:

    ``trickle``: the whole response (status line and headers included) one byte every 0.5 s;
    ``silent``: reads the request, never answers; ``stall``: sends headers naming a body, then nothing;
    ``sse``: a chunked event stream, one token event every 0.5 s, never finished; ``flood``: a 4 GB body
    sent as fast as the client reads.
    ``closed_after`` holds, per connection, the seconds from its request to the client closing it.
    """

    def __init__(self, mode: str, every: float = 0.5) -> None:
        self.mode = mode
        self.every = every
        self.connections = 0
        self.closed_after: list[float] = []
        self._ends = time.monotonic() + LIFE
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self._thread = threading.Thread(target=self._accept, daemon=True, name="faulty-server")

    @property
    def url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def _live(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self._ends

    def _accept(self) -> None:
        while self._live():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True, name="faulty-server-conn").start()
        self._sock.close()

    def _read_request(self, conn: socket.socket) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return False
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return False
            body += chunk
        return True

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5.0)
        try:
            if not self._read_request(conn):
                return
            asked = time.monotonic()
            conn.settimeout(self.every)
            if self.mode == "trickle":
                pending = _reply_bytes()
                while pending and self._live():
                    conn.sendall(pending[:1])
                    pending = pending[1:]
                    if self._closed(conn):
                        break
            elif self.mode == "stall":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{")
            elif self.mode == "flood":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000000000\r\n\r\n")
                block = b" " * 65536
                while self._live():
                    conn.sendall(block)
            elif self.mode == "sse":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                while self._live():
                    conn.sendall(_sse_event("more "))
                    if self._closed(conn):
                        break
            while self._live() and not self._closed(conn):
                pass
            if self._live():
                self.closed_after.append(time.monotonic() - asked)
        except OSError:  # the client went away mid-send: it cancelled the request
            self.closed_after.append(time.monotonic() - asked)
        finally:
            conn.close()

    def _closed(self, conn: socket.socket) -> bool:
        """Wait up to ``every`` seconds for the client to close its end."""
        try:
            return conn.recv(1) == b""
        except socket.timeout:
            return False

    def __enter__(self) -> FaultyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)


# --- the library: one call, one bound ---------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["trickle", "silent", "stall", "sse"])
def test_a_call_ends_by_its_deadline_and_closes_the_connection(mode: str) -> None:
    with FaultyServer(mode) as server:
        llm = OpenAICompatLLM("m", base_url=server.url, timeout=30.0, retry=RetryPolicy(max_retries=3))
        threads = {t.ident for t in threading.enumerate()}
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError, match="no complete answer"):
            llm.complete("q", deadline=started + 1.5)
        took = time.monotonic() - started
        llm.close()
        time.sleep(0.6)  # the server notices the closed connection at its next wait
        assert took < 1.5 + SLACK, f"{mode}: {took:.1f} s"
        assert server.connections == 1  # the deadline left no time for a retry
        assert server.closed_after and server.closed_after[0] < 1.5 + SLACK  # the request was cancelled
    extra = [t.name for t in threading.enumerate() if t.ident not in threads and not t.name.startswith("faulty")]
    assert extra == []  # nothing left running


@pytest.mark.integration
def test_a_flood_is_refused_before_it_fills_memory() -> None:
    with FaultyServer("flood") as server:
        llm = OpenAICompatLLM("m", base_url=server.url, timeout=30.0, retry=RetryPolicy(max_retries=3))
        started = time.monotonic()
        with pytest.raises(LLMResponseError, match="sent more than 32 MiB"):
            llm.complete("q", deadline=started + 5)
        assert time.monotonic() - started < 5 + SLACK and server.connections == 1
        llm.close()


@pytest.mark.integration
def test_the_per_call_timeout_is_wall_clock_too() -> None:
    # no question budget: --llm-timeout alone bounds each attempt, a trickle included
    with FaultyServer("trickle") as server:
        llm = OpenAICompatLLM("m", base_url=server.url, timeout=1.0, retry=RetryPolicy(max_retries=0))
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError, match="within 1 s"):
            llm.complete("q")
        assert time.monotonic() - started < 1.0 + SLACK
        llm.close()


@pytest.mark.unit
def test_bounds_nest_and_only_tighten() -> None:
    now = time.monotonic()
    assert call_deadline.remaining() is None
    with call_deadline.bounded(now + 10) as outer:
        assert outer == now + 10
        with call_deadline.bounded(now + 60) as inner:
            assert inner == now + 10  # a later inner end cannot loosen the outer one
        with call_deadline.bounded(now + 1) as inner:
            assert inner == now + 1
    assert call_deadline.current_end() is None
    assert call_deadline.attempt_end(now + 5, 60.0, started=now) == now + 5
    assert call_deadline.attempt_end(None, 2.0, started=now) == now + 2
    assert call_deadline.attempt_end(None, None) is None


@pytest.mark.unit
def test_a_backend_cannot_replace_the_call_path() -> None:
    with pytest.raises(TypeError, match="overrides complete"):
        type("Skipper", (LLM,), {"complete": lambda self, messages, **kw: None, "_complete": lambda *a, **k: None})
    with pytest.raises(TypeError, match="overrides _call"):
        type("Skipper", (LLM,), {"_call": lambda *a, **k: None, "_complete": lambda *a, **k: None})
    with pytest.raises(TypeError, match="overrides stream"):
        type("Skipper", (LLM,), {"stream": lambda *a, **k: None, "_complete": lambda *a, **k: None})
    with pytest.raises(TypeError, match="overrides _stream_call"):
        type("Skipper", (LLM,), {"_stream_call": lambda *a, **k: None, "_complete": lambda *a, **k: None})


#: the only module that may open an HTTP connection for a model call
BOUNDED_MODULE = "src/hoprag/llm/deadline.py"
#: httpx names that open connections of their own (and so would skip the bound)
HTTP_OPENERS = {"Client", "AsyncClient", "stream", "request", "get", "post", "put", "patch", "delete",
                "HTTPTransport", "AsyncHTTPTransport"}


def _opener(call: ast.Call) -> str | None:
    """``httpx.Client(...)``, ``self._httpx.stream(...)``, ``requests.get(...)``, ``urlopen(...)``: its name."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "urlopen":
        return "urlopen"
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value
    owner_name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    if func.attr == "urlopen" or (func.attr in HTTP_OPENERS and owner_name in ("httpx", "_httpx", "requests")):
        return f"{owner_name}.{func.attr}"
    return None


def test_no_module_opens_an_http_connection_outside_the_bounded_client() -> None:
    offenders = []
    for path in sorted((ROOT / "src" / "hoprag").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == BOUNDED_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = _opener(node) if isinstance(node, ast.Call) else None
            if name:
                offenders.append(f"{rel}:{node.lineno} {name}")
    assert offenders == [], "model calls must use hoprag.llm.deadline.http_client: " + ", ".join(offenders)


def test_the_scan_sees_a_client_made_directly() -> None:
    tree = ast.parse("import httpx\nclient = httpx.Client(timeout=5)\nwith self._httpx.stream('GET', u): pass\n")
    assert [_opener(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and _opener(n)] == [
        "httpx.Client", "_httpx.stream"]


# --- the CLI: one budget per question -----------------------------------------------------------------


def call_main(argv: list[str]) -> int:
    saved, sys.argv = sys.argv, ["hoprag", *argv]
    try:
        main()
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = saved


def trace_of(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"): stdout.rindex("}") + 1])


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("HOPRAG_API_KEY", "OPENAI_API_KEY", "HOPRAG_BASE_URL", "HOPRAG_LLM", "HOPRAG_CLEARANCE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("llm-deadline") / "index"
    assert call_main(["index", str(ENTERPRISE / "corpus.jsonl"), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def offline_seconds(index_dir) -> float:
    """What ``ask`` takes with no model here (loading the index, retrieving): not part of the budget."""
    started = time.monotonic()
    assert call_main(["ask", str(index_dir), QUESTION, "--json"]) == 0
    return time.monotonic() - started


@pytest.mark.integration
@pytest.mark.parametrize(("mode", "budget"), [("trickle", 2), ("silent", 3), ("stall", 2), ("sse", 5)])
def test_ask_ends_within_its_budget_whatever_the_server_does(index_dir, offline_seconds, capsys, mode, budget):
    capsys.readouterr()
    with FaultyServer(mode) as server:
        started = time.monotonic()
        code = call_main(["ask", str(index_dir), QUESTION, "--llm", "openai:slow", "--base-url", server.url,
                          "--llm-budget", str(budget), "--llm-timeout", "5", "--json"])
        took = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 0, err
    assert took < budget + SLACK + offline_seconds, f"{mode}: ask took {took:.1f} s with a {budget} s budget"
    trace = trace_of(out)
    assert trace["latency_ms"] < (budget + SLACK) * 1000
    warnings = " ".join(trace["warnings"])
    assert f"the question's model budget of {budget} s is spent" in warnings
    assert "no complete answer" in warnings and trace["fallbacks"].get("planner") == 1
    assert trace["answer"]["text"]  # the offline roles answered


@pytest.mark.integration
def test_strict_llm_turns_a_spent_budget_into_an_error_in_time(index_dir, offline_seconds, capsys):
    capsys.readouterr()
    with FaultyServer("trickle") as server:
        started = time.monotonic()
        code = call_main(["ask", str(index_dir), QUESTION, "--llm", "openai:slow", "--base-url", server.url,
                          "--llm-budget", "2", "--strict-llm"])
        took = time.monotonic() - started
    _, err = capsys.readouterr()
    assert code == 2 and took < 2 + SLACK + offline_seconds
    assert "strict mode forbids the offline fallback" in " ".join(err.split()) and "Traceback" not in err


@pytest.mark.integration
def test_a_dead_port_ends_quickly_and_says_where(index_dir, offline_seconds, capsys):
    capsys.readouterr()
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    code = call_main(["ask", str(index_dir), QUESTION, "--llm", "openai:gone", "--base-url", url,
                      "--llm-budget", "5", "--json"])
    took = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 0, err
    assert took < offline_seconds + SLACK
    warnings = " ".join(trace_of(out)["warnings"])
    assert f"cannot reach the LLM server at {url}/chat/completions" in warnings and "Fix:" in warnings


@pytest.mark.integration
def test_run_gives_each_question_its_own_budget(index_dir, tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    lines = (ENTERPRISE / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "traces.jsonl"
    capsys.readouterr()
    with FaultyServer("trickle") as server:
        code = call_main(["run", str(index_dir), str(cases), "--out", str(out), "--llm", "openai:slow",
                          "--base-url", server.url, "--llm-budget", "2", "--quiet"])
        # each question's planner called the server: a slow question did not spend the next one's budget
        assert server.connections == 3
    _, err = capsys.readouterr()
    assert code == 0, err
    traces = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if '"case_id"' in line]
    assert len(traces) == 3
    for trace in traces:
        assert trace["latency_ms"] < (2 + SLACK) * 1000
        assert "the question's model budget of 2 s is spent" in " ".join(trace["warnings"])


# --- the service's answer stream ------------------------------------------------------------------------


@pytest.mark.integration
def test_the_answer_stream_ends_by_the_question_budget():
    from hoprag.llm.guard import question_scope
    from hoprag.llm.openai_compat import OpenAICompatLLM
    from hoprag.pipeline.llm_roles import LLMSynthesizer
    from hoprag.pipeline.roles import ExtractiveSynthesizer
    from hoprag.records import Evidence, Hit

    hit = Hit(chunk_id="c1", doc_id="d1", score=1.0, rank=1, retriever="bm25")
    evidence = [Evidence(hit=hit, text="Tern Pro keeps customer data for 7 years.", title="Orion", hop=1,
                         step_id="s1", sub_query="retention")]
    tokens: list[str] = []
    with FaultyServer("sse") as server:
        synth = LLMSynthesizer(OpenAICompatLLM("slow", base_url=server.url, timeout=30.0), ExtractiveSynthesizer())
        started = time.monotonic()
        with question_scope(budget=2.0) as scope:
            answer = synth.answer("How long is data kept?", evidence, on_token=tokens.append)
        took = time.monotonic() - started
        time.sleep(0.6)
        assert server.closed_after and server.closed_after[0] < 2 + SLACK  # the stream's request was cancelled
    assert took < 2 + SLACK
    assert tokens[:2] == ["more ", "more "]  # the deltas arrived as the server sent them
    message = scope.fallbacks[0].message
    assert "stream failed" in message and "model budget" in message
    assert answer.text and "".join(tokens).endswith(answer.text)  # the offline answer follows what had come


@pytest.mark.integration
def test_the_service_stream_ends_in_an_answer_within_the_budget(index_dir, offline_seconds, tmp_path):
    import httpx

    sys.path.insert(0, str(ROOT / "tests" / "service"))
    from service_helpers import model_engine, read_sse, start_service

    with FaultyServer("sse") as model:
        service = start_service(index_dir, tmp_path / "store.db", clearance="restricted", request_timeout=20.0,
                                engine=model_engine("openai:slow", base_url=model.url, timeout=3.0))
        live = next(service)
        try:
            started = time.monotonic()
            with httpx.stream("GET", live.url + "/api/ask/stream", params={"q": QUESTION, "store": "false"},
                              timeout=30) as response:
                events = read_sse(response)
            took = time.monotonic() - started
        finally:
            next(service, None)  # stops the service
    names = [name for name, _ in events]
    assert names[-1] == "answer", events[-1]
    assert took < 3 + SLACK + offline_seconds, f"the stream took {took:.1f} s with a 3 s model budget"
    warnings = " ".join(events[-1][1]["warnings"])
    assert "the question's model budget of 3 s is spent" in warnings and "stream failed" in warnings


@pytest.mark.unit
def test_a_dead_port_is_reported_at_once() -> None:
    llm = OpenAICompatLLM("m", base_url=f"http://127.0.0.1:{free_port()}/v1", retry=RetryPolicy(max_retries=3))
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError, match="cannot reach the LLM server"):
        llm.complete("q", deadline=started + 5)
    assert time.monotonic() - started < SLACK
