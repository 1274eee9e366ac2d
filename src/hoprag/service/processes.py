"""Several processes answering on one port: ``hoprag serve --workers N``.

The parent does what a one-process start does (loads the index, checks the tokens, the clearance
rule and the store, says it all once), binds the listening socket, says it is serving, and forks N
worker processes. Each worker runs uvicorn on that one socket (the kernel hands every new
connection to one of them) with its own answering threads and its own connection to the run store.
The index's arrays are memory-mapped before the fork, so every worker reads the same pages of the
OS's page cache. The Host allow-list, the token table and the clearance rule are the parent's
objects, inherited unchanged. The run store takes one writer at a time across processes (SQLite:
WAL, a busy timeout and ``BEGIN IMMEDIATE``, :mod:`hoprag.store.connection`; PostgreSQL: its own
locking), and each worker batches its answers into one transaction.

The parent only supervises. A worker that ends while the server runs is said on stderr with its exit
status, and another is started in its place; workers that keep dying at start stop the server with
the reason, never leaving it at part of its capacity without a word. The parent learns of a death
from ``waitpid``, so it sets SIGCHLD to its default while it supervises: a SIGCHLD ignored by the
program that started the server is inherited, and with it the kernel reaps dead workers itself and
``waitpid`` never reports one (none would be replaced, nothing said). SIGTERM or Ctrl-C stops every
worker (each finishes the requests in hand and writes its queued answers), then the parent marks its
runs complete; the stop signals wait while a worker is being forked, so none started at that moment
misses the stop (the parent would wait for it forever) or runs the parent's handler in its place. A
worker whose parent is killed outright gets SIGTERM from the kernel (Linux ``PR_SET_PDEATHSIG``), so
no worker outlives its server.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hoprag.errors import ConfigError
from hoprag.service.state import ServiceState

__all__ = ["QUICK_DEATH_S", "parse_workers", "serve_processes"]

#: a worker that ends this soon after its start died starting; three in a row stop the server
QUICK_DEATH_S = 5.0
_QUICK_DEATHS_TO_STOP = 3
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
#: the most worker processes one server starts
MAX_WORKERS = 256


def parse_workers(text: str, cores: int) -> int:
    """The number of worker processes ``--workers`` asks for: a whole number, or ``auto`` (``cores``; 1
    where processes cannot be forked)."""
    value = text.strip().lower()
    forks = hasattr(os, "fork")
    if value == "auto":
        return cores if forks else 1
    if value.isdigit() and 1 <= int(value) <= MAX_WORKERS:
        if int(value) > 1 and not forks:
            raise ConfigError("--workers above 1 forks worker processes, which this system cannot (Windows). "
                              "Fix: pass --workers 1, or run the server on Linux or macOS")
        return int(value)
    raise ConfigError(f"--workers takes a number of processes from 1 to {MAX_WORKERS}, or auto (one per usable "
                      f"CPU: {cores} here), not {text!r}. Fix: pass --workers {cores} or --workers auto")


def serve_processes(state: ServiceState, sock: socket.socket, workers: int, say: Callable[[str], None]) -> None:
    """Run ``workers`` forked uvicorn workers on ``sock`` until SIGTERM or Ctrl-C; said through ``say``."""
    state.store.pause_writing()  # no thread and no store connection may cross the fork
    state.index.close()  # nor a PostgreSQL index's idle connections: each worker connects anew (a local index
    # keeps its memory maps and read-only, immutable corpus file, which need no lock and no connection state)
    if threading.active_count() > 1:  # a forked thread's locks would stay held in the child
        names = ", ".join(sorted(t.name for t in threading.enumerate() if t is not threading.current_thread()))
        raise ConfigError(f"cannot start worker processes while threads run in the server ({names}). "
                          "Fix: pass --workers 1")
    import gc

    gc.freeze()  # the loaded objects leave the collector's reach: a worker's collections never touch (copy) their pages
    children: dict[int, float] = {}  # pid -> when it started
    stopping = False
    parent = os.getpid()

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            _signal(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in _STOP_SIGNALS}
    # inherited SIG_IGN would have the kernel reap the workers: waitpid below would never see one die
    previous[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, signal.SIG_DFL)

    def start() -> None:
        # blocked until the new worker is in ``children`` (parent) or has its own handlers (child): a stop
        # signal in between would miss it, or run ``stop`` in the child with the parent's list of workers
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            if stopping:
                return
            pid = os.fork()
            if pid == 0:
                _worker(state, sock, parent)  # never returns
            children[pid] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)

    quick_deaths = 0
    try:
        for _ in range(workers):
            start()
        while children:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            started = children.pop(pid, None)
            if started is None or stopping:
                continue
            quick_deaths = quick_deaths + 1 if time.monotonic() - started < QUICK_DEATH_S else 0
            how = _ended(status)
            if quick_deaths >= _QUICK_DEATHS_TO_STOP:
                stop(signal.SIGTERM, None)
                _reap(children)
                raise ConfigError(f"worker process {pid} {how}, the {quick_deaths}th to die within "
                                  f"{QUICK_DEATH_S:g} s of its start: the server stopped. Fix: see the messages "
                                  "above; start with --workers 1 to see the error in one process")
            say(f"worker process {pid} {how}; starting another ({len(children) + 1} of {workers})")
            start()
    finally:
        stopping = True
        for pid in list(children):
            _signal(pid, signal.SIGTERM)
        _reap(children)
        for sig, handler in previous.items():
            if handler is not None:  # None: set outside Python, which cannot be put back
                signal.signal(sig, handler)
        sock.close()
        _finish_runs(state)


def _ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(children: dict[int, float]) -> None:
    """Wait for every worker; one still running after 30 s (stuck in a request) is killed."""
    deadline = time.monotonic() + 30.0
    while children:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid:
            children.pop(pid, None)
            continue
        if time.monotonic() > deadline:
            for late in list(children):
                _signal(late, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.05)


def _finish_runs(state: ServiceState) -> None:
    """Mark the runs this server (the parent) created complete, as a one-process server does when it stops."""
    try:
        state.store.finish_runs()
    except Exception as exc:  # noqa: BLE001 - the workers have stopped; a store error is said, not raised
        print(f"note: the serve runs could not be marked complete: {str(exc).splitlines()[0][:200]}", file=sys.stderr)


def _die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGTERM when the parent dies (Linux); a parent gone already ends this worker."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(0)


def _worker(state: ServiceState, sock: socket.socket, parent: int) -> None:
    """One worker process: its own store connection and answering threads, uvicorn on ``sock``."""
    code = 0
    try:
        # until uvicorn takes them (and when it hands them back and raises them again): end at once
        for sig in _STOP_SIGNALS:
            signal.signal(sig, lambda *_: os._exit(0))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # blocked by the parent across the fork
        _die_with_parent(parent)
        import uvicorn

        from hoprag.service.app import create_app
        from hoprag.service.guard import server_options

        state = replace(state, store=state.store.reopened(), executor=state.fresh_executor())
        app = create_app(state.config, state)
        server = uvicorn.Server(uvicorn.Config(app, lifespan="on", **server_options()))
        server.run(sockets=[sock])
    except BaseException as exc:  # noqa: BLE001 - said on stderr; the parent reports the exit
        print(f"worker process {os.getpid()}: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}",
              file=sys.stderr)
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code)
