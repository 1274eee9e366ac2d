"""CPU-bound work spread over forked copies of this process (scoring an evaluation).

Threads do not spread Python code over cores, and a process pool that pickles its inputs spends
what it saves: 10,000 cases and their traces are hundreds of thousands of small records. A fork
shares them instead. :class:`ProcessExecutor` has the :class:`hoprag.executors.Executor` interface:
``setup()`` runs once, here, before the fork; worker ``w`` of ``n`` takes the items at positions
``w, w + n, w + 2n, ...`` and sends each result back pickled over a pipe, and the results are handed
out in the items' order as they arrive.

Nothing is lost or changed by the fork: an item whose worker failed on it (any exception) or died
(killed, out of memory) is computed again here, so its result, or the error it raises, is exactly
the in-process one; the workers are killed and reaped however the caller stops reading. The work
runs in this process instead when there is one worker or one item, when this platform has no
``fork`` (or is not Linux: macOS frameworks are not fork-safe), or when other threads are running
(a fork copies only the calling thread, so a lock another thread holds would stay held).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

from hoprag.cpus import available_cores

__all__ = ["ProcessExecutor", "can_fork", "fork_supported"]

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

_HEADER = 8  # bytes of the length before each pickled result
_FAILED = object()


def fork_supported() -> bool:
    """Whether this platform forks safely enough for hoprag: Linux."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def can_fork() -> bool:
    """Whether work may be forked now: a supported platform, and no other thread running in this process."""
    return fork_supported() and threading.active_count() == 1


@dataclass(frozen=True)
class ProcessExecutor:
    """``workers`` forked processes (default: one per usable CPU, at most one per item)."""

    workers: int | None = None
    name: str = "local"

    def map(self, work: Callable[[S, T], R], items: Sequence[T], *, setup: Callable[[], S]) -> Iterator[R]:
        if not items:
            return
        state = setup()
        workers = min(self.workers or available_cores(), len(items))
        if workers <= 1 or not can_fork():
            for item in items:
                yield work(state, item)
            return
        yield from _forked(work, state, items, workers)


class _Worker:
    """The parent's end of one forked worker: its pid and the pipe its results come through."""

    def __init__(self, pid: int, results: BinaryIO) -> None:
        self.pid = pid
        self.results = results
        self.alive = True

    def receive(self) -> Any:
        """The next result, or ``_FAILED`` (the worker failed on that item, or is gone)."""
        if not self.alive:
            return _FAILED
        header = self.results.read(_HEADER)
        body = self.results.read(int.from_bytes(header, "little")) if len(header) == _HEADER else b""
        if len(header) < _HEADER or len(body) < int.from_bytes(header, "little"):
            self.alive = False  # ended early: every item it still owed is computed by the parent
            return _FAILED
        ok, value = pickle.loads(body)
        return value if ok else _FAILED

    def stop(self) -> None:
        self.results.close()
        try:
            os.kill(self.pid, signal.SIGKILL)  # a finished worker is a zombie until reaped: harmless
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _forked(work: Callable[[S, T], R], state: S, items: Sequence[T], count: int) -> Iterator[R]:
    for stream in (sys.stdout, sys.stderr):  # a buffered line would otherwise be written by every copy
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    workers: list[_Worker] = []
    try:
        for index in range(count):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: never returns
                os.close(read_end)
                _serve(work, state, items, index, count, write_end)
            os.close(write_end)
            workers.append(_Worker(pid, os.fdopen(read_end, "rb")))
        for position, item in enumerate(items):
            result = workers[position % count].receive()
            yield work(state, item) if result is _FAILED else result
    finally:
        for worker in workers:
            worker.stop()


def _serve(work: Callable[[S, T], R], state: S, items: Sequence[T], index: int, count: int, fd: int) -> None:
    """A forked worker's whole life: its share of the items, each result written as it is done."""
    code = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for position in range(index, len(items), count):
                try:
                    payload = pickle.dumps((True, work(state, items[position])), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # noqa: BLE001 - the parent computes this item again and gets the error itself
                    payload = pickle.dumps((False, None))
                out.write(len(payload).to_bytes(_HEADER, "little"))
                out.write(payload)
                out.flush()
    except BaseException:  # noqa: BLE001 - an interrupt or a closed pipe: the parent is stopping
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no second flush of the parent's buffers
