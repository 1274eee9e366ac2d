"""``hoprag serve --workers N``: N real worker processes on one port, one store, a clean stop, no orphans.

Which process answered a request is read from ``/proc``: the server side of the client's kept-alive
connection is a socket only the worker that accepted it holds.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from service_helpers import free_port

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; forks workers")]

HOPRAG = Path(sys.executable).with_name("hoprag")
T = TypeVar("T")
QUESTIONS = ["Who approved the travel policy?", "What is the expense limit for meals?",
             "Which team owns the VPN service?", "When was the security review held?"]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                found.append(int(entry.name))
    return sorted(found)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


#: a program that ignores SIGCHLD and then becomes the server (exec keeps the pid and the ignored signal)
IGNORING_SIGCHLD = ("import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
                    "os.execv(sys.argv[1], sys.argv[1:])")


def _start(index: Path, store: Path, *extra: str, launcher: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen([*launcher, str(HOPRAG), "serve", str(index), "--port", str(port), "--store", str(store),
                               "--workers", "2", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while len(_children(server.pid)) < 2 or not _answers(url):
        assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
        time.sleep(0.1)
    return server, url


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/api/whoami", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _owner(server_port: int, client_port: int, workers: list[int]) -> int | None:
    """The worker holding the server side of the connection from ``client_port``."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
        if int(local, 16) == server_port and int(remote, 16) == client_port:
            inode = fields[9]
    for pid in workers:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None


def _stop(server: subprocess.Popen, sig: int, *, group: bool = False) -> tuple[int, str]:
    (os.killpg if group else os.kill)(server.pid, sig)
    _, err = server.communicate(timeout=60)
    return server.returncode, err


def _until(found: Callable[[], T | None], server: subprocess.Popen, what: str, seconds: float = 120) -> T:
    """``found()`` once it is not None, asked every 0.1 s; the test fails with the server's stderr if the
    server ends or ``seconds`` pass (a generous bound: the answer usually comes in under a second)."""
    deadline = time.monotonic() + seconds
    while (value := found()) is None:
        if server.poll() is not None or time.monotonic() > deadline:
            if server.poll() is None:
                code, err = _stop(server, signal.SIGINT, group=True)
            else:
                code, err = server.returncode, server.communicate()[1]
            pytest.fail(f"{what}; server exit {code}, stderr:\n{err}")
        time.sleep(0.1)
    return value


def _whoami_owner(port: int, workers: list[int]) -> int | None:
    """The worker that answered one GET /api/whoami (its connection is kept open until its owner is read)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", "/api/whoami")
        response = connection.getresponse()
        response.read()
        return _owner(port, connection.sock.getsockname()[1], workers) if response.status == 200 else None
    except OSError:
        return None
    finally:
        connection.close()


def test_two_workers_answer_on_one_port_keep_every_answer_and_stop_on_sigterm(enterprise_index: Path,
                                                                                tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    server, url = _start(enterprise_index, store)
    workers = _children(server.pid)
    port = int(url.rsplit(":", 1)[1])

    def ask(n: int) -> tuple[str, int | None]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)  # kept open to read its owner
        try:
            connection.request("POST", "/api/ask", json.dumps({"question": QUESTIONS[n % len(QUESTIONS)], "store": True}),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            body = response.read()
            assert response.status == 200, body
            return json.loads(body)["trace_id"], _owner(port, connection.sock.getsockname()[1], workers)
        finally:
            connection.close()

    # a worker that is still importing (a fresh install compiles its modules on first import) accepts
    # nothing yet, and the other takes every connection: ask in rounds until both have answered
    answered: list[tuple[str, int | None]] = []
    deadline = time.monotonic() + 60
    with ThreadPoolExecutor(12) as pool:
        while True:
            answered += pool.map(ask, range(len(answered), len(answered) + 36))
            if {pid for _, pid in answered} >= set(workers) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    assert len(workers) == 2
    assert {pid for _, pid in answered} == set(workers)  # both processes answered on the one port
    code, err = _stop(server, signal.SIGTERM)
    assert code == 0, err
    assert not [pid for pid in workers if _alive(pid)]  # no orphan
    assert err.count("hoprag serving") == 1 and "2 worker processes" in " ".join(err.split())
    with sqlite3.connect(store) as db:  # every answer of both writers is in the one store
        stored = {row[0] for row in db.execute("SELECT case_id FROM traces")}
        runs = dict(db.execute("SELECT run_id, status FROM runs").fetchall())
    assert stored == {trace_id for trace_id, _ in answered}
    assert set(runs.values()) == {"complete"}


def test_a_dead_worker_is_said_and_replaced_and_ctrl_c_stops_them_all(enterprise_index: Path, tmp_path: Path) -> None:
    # started by a program that ignores SIGCHLD (some process supervisors do): the server must still see deaths
    server, url = _start(enterprise_index, tmp_path / "store.db", launcher=(sys.executable, "-c", IGNORING_SIGCHLD))
    port = int(url.rsplit(":", 1)[1])
    first = _children(server.pid)
    os.kill(first[0], signal.SIGKILL)

    # one look at the children decides: between reaping the dead worker and forking its replacement the
    # parent has one child, so "the dead one is gone" in one look and "two children" in another prove nothing
    def replaced() -> list[int] | None:
        now = _children(server.pid)
        return now if len(now) == 2 and first[0] not in now else None

    workers = _until(replaced, server, f"no replacement for worker {first[0]} among the children of {first}")
    assert first[1] in workers  # the other worker was left alone
    replacement = next(pid for pid in workers if pid not in first)

    # the replacement serves: asked in rounds on the one port until it has answered (it may still be starting)
    def answered_by_replacement() -> bool | None:
        with ThreadPoolExecutor(8) as pool:
            owners = set(pool.map(lambda _: _whoami_owner(port, workers), range(8)))
        return True if replacement in owners else None

    _until(answered_by_replacement, server, f"the replacement worker {replacement} never answered")
    code, err = _stop(server, signal.SIGINT, group=True)  # what Ctrl-C in a terminal sends
    assert code == 0, err
    assert not [pid for pid in workers if _alive(pid)]
    said = " ".join(err.split())
    assert f"worker process {first[0]} was killed by SIGKILL; starting another (2 of 2)" in said


#: the parent's supervision with stand-in workers: the first dies at once, the others wait to be stopped;
#: SIGTERM lands while the dead one is being said, before its replacement is forked
STOP_WHILE_REPLACING = """
import os, signal, socket, sys, types
from hoprag.service.processes import serve_processes

def worker(state, sock, parent):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL))
        os._exit(3)
    except FileExistsError:
        signal.pause()

def say(text):
    print(text, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

sys.modules["hoprag.service.processes"]._worker = worker
store = types.SimpleNamespace(pause_writing=lambda: None, finish_runs=lambda: None)
serve_processes(types.SimpleNamespace(store=store, index=types.SimpleNamespace(close=lambda: None)),
                socket.socket(), 2, say)
print("stopped", flush=True)
"""


def test_a_stop_while_a_worker_is_replaced_stops_the_replacement_too(tmp_path: Path) -> None:
    run = subprocess.Popen([sys.executable, "-c", STOP_WHILE_REPLACING, str(tmp_path / "first-died")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = run.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        pytest.fail(f"the parent still waits 30 s after SIGTERM: {run.communicate()}")
    said = out.splitlines()
    assert run.returncode == 0, err
    assert len(said) == 2 and said[0].endswith("exited with status 3; starting another (2 of 2)"), out
    assert said[1] == "stopped"  # serve_processes returned: every worker, the replacement's slot too, is reaped


def test_a_killed_server_takes_its_workers_with_it(enterprise_index: Path, tmp_path: Path) -> None:
    server, _ = _start(enterprise_index, tmp_path / "store.db")
    workers = _children(server.pid)
    server.kill()
    server.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while [pid for pid in workers if _alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)]


@pytest.mark.parametrize("value", ["0", "abc", "-2"])
def test_a_bad_workers_value_is_one_message(enterprise_index: Path, tmp_path: Path, value: str) -> None:
    done = subprocess.run([str(HOPRAG), "serve", str(enterprise_index), "--store", str(tmp_path / "s.db"),
                           "--port", str(free_port()), f"--workers={value}"], capture_output=True, text=True, timeout=60)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stderr
    assert f"--workers takes a number of processes from 1 to 256, or auto" in said and repr(value) in said
    assert "Fix: pass --workers" in said and "Traceback" not in said and "serving" not in said


def test_the_last_releases_workers_count_is_read_as_threads(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from hoprag.commands import serve

    monkeypatch.setattr("hoprag.cpus.available_cores", lambda: 2)
    assert serve._processes_and_threads("16", None) == (1, 16)  # the last release's --workers 16: 16 threads
    said = " ".join(capsys.readouterr().err.split())
    assert "--workers now counts processes" in said and "--threads 16" in said
    assert serve._processes_and_threads("2", None) == (2, serve.DEFAULT_THREADS)
    assert serve._processes_and_threads("auto", 4) == (2, 4)
    assert serve._processes_and_threads("3", 8) == (3, 8)  # with --threads, a count is processes as asked


def _write_answers(store_url: str, prefix: str, count: int, start: object) -> None:
    """One worker's writes: ``count`` answers queued as fast as they come, then the store closed."""
    from hoprag.records import Trace
    from hoprag.service.records import ServiceStore
    from hoprag.store import RunStore

    store = ServiceStore(RunStore(store_url), trace_run="serve-two", feedback_run="feedback-two")
    start.wait()
    for n in range(count):
        store.add_trace(Trace(run_id="serve-two", case_id=f"{prefix}-{n}", question=f"question {n}?"), citations_shown=1)
        if n % 25 == 0:
            time.sleep(0.01)  # several batches, interleaved with the other process's
    store.close()


def test_two_processes_writing_one_sqlite_store_lose_nothing(tmp_path: Path) -> None:
    import multiprocessing

    from hoprag.store import RunStore

    url = str(tmp_path / "store.db")
    RunStore(url).close()  # created (and put in WAL mode) once, as the server's parent does
    context = multiprocessing.get_context("fork")
    start = context.Event()
    writers = [context.Process(target=_write_answers, args=(url, name, 200, start)) for name in ("a", "b")]
    for w in writers:
        w.start()
    start.set()
    for w in writers:
        w.join(timeout=60)
    assert [w.exitcode for w in writers] == [0, 0]
    with sqlite3.connect(tmp_path / "store.db") as db:
        stored = [row[0] for row in db.execute("SELECT case_id FROM traces")]
        views = db.execute("SELECT count(*) FROM feedback WHERE kind = 'view'").fetchone()[0]
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert sorted(stored) == sorted(f"{p}-{n}" for p in ("a", "b") for n in range(200))  # each once, none lost
    assert views == 400 and mode == "wal"
