"""Where independent work items run: this process (a thread pool) or a Ray cluster.

An executor maps ``work(state, item)`` over ``items`` and yields the results **in the items' order**
as they arrive, so a caller can write each result as soon as it and all before it are done.
``state`` comes from ``setup()``, called once per worker: the local executor calls it once in this
process and shares the state between its threads; the Ray executor sends ``setup`` (pickled) to
each worker actor, which calls it once and keeps the state for every item it is given. ``setup``
and ``work`` must therefore be picklable for Ray (module-level functions, frozen dataclasses).

- ``local`` (default): ``workers`` threads in this process; one worker is a plain loop.
- ``ray``: a Ray instance started on this machine for the call (or the cluster ``RAY_ADDRESS``
  names), one actor per worker; ``ray:ADDRESS`` connects to a running cluster (``ray:auto``, or
  ``HOST:PORT`` of a head started with ``ray start --head``). The address is probed first, so an
  unreachable one is one clear error, not a hang.

Ray is an optional extra: without it, asking for ``ray`` raises :class:`ConfigError` naming
``pip install 'hoprag[ray]'``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hoprag.errors import ConfigError, HopragError

__all__ = [
    "EXECUTOR_KINDS",
    "RAY_INSTALL_FIX",
    "Executor",
    "ExecutorError",
    "LocalExecutor",
    "RayExecutor",
    "parse_executor",
]

EXECUTOR_KINDS = ("local", "ray")
RAY_INSTALL_FIX = "pip install 'hoprag[ray]'"
EXECUTOR_HELP = "local (threads in this process) | ray (a Ray instance on this machine) | ray:ADDRESS (a running cluster)"
#: seconds to wait for a TCP connection to a Ray head before calling it unreachable
PROBE_TIMEOUT = 3.0
#: items queued on each Ray actor at once
PER_WORKER_QUEUE = 3

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")


class ExecutorError(HopragError):
    """An executor could not start, reach its cluster, or run its workers."""


class Executor(Protocol):
    """Maps ``work(state, item)`` over items, results in the items' order."""

    name: str
    workers: int | None

    def map(self, work: Callable[[S, T], R], items: Sequence[T], *, setup: Callable[[], S]) -> Iterator[R]:
        ...


@dataclass(frozen=True)
class LocalExecutor:
    """``workers`` threads in this process (``setup`` runs once, its state is shared)."""

    workers: int | None = 1
    name: str = "local"

    def map(self, work: Callable[[S, T], R], items: Sequence[T], *, setup: Callable[[], S]) -> Iterator[R]:
        if not items:
            return
        state = setup()
        workers = max(1, self.workers or 1)
        if workers == 1:
            for item in items:
                yield work(state, item)
            return
        # a bounded window of submitted items keeps memory flat and results flowing in order
        window = 2 * workers
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hoprag-exec") as pool:
            pending: list[Future] = []
            position = 0
            while position < len(items) or pending:
                while position < len(items) and len(pending) < window:
                    pending.append(pool.submit(work, state, items[position]))
                    position += 1
                yield pending.pop(0).result()


class _Worker:
    """A Ray actor body: builds its state once, then runs work items against it."""

    def __init__(self, setup: Callable[[], Any]) -> None:
        # a failed setup is raised by the first task, where Ray keeps the exception itself
        # (an actor that dies in __init__ reports only its message)
        self.failed: Exception | None = None
        try:
            self.state = setup()
        except Exception as exc:  # noqa: BLE001 - handed to the caller whole, below
            self.failed = exc

    def run(self, work: Callable[[Any, Any], Any], item: Any) -> Any:
        if self.failed is not None:
            raise self.failed
        return work(self.state, item)


@dataclass(frozen=True)
class RayExecutor:
    """One Ray actor per worker (default: one per CPU of the cluster, at most one per item); items
    go to the actors in turn."""

    address: str | None = None
    workers: int | None = None
    name: str = "ray"

    @property
    def label(self) -> str:
        return f"ray:{self.address}" if self.address else "ray"

    def map(self, work: Callable[[S, T], R], items: Sequence[T], *, setup: Callable[[], S]) -> Iterator[R]:
        if not items:
            return
        ray = import_ray()
        started = self._connect(ray)
        actors: list[Any] = []
        try:
            count = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            actor_class = ray.remote(num_cpus=1)(_Worker)
            actors = [actor_class.remote(setup) for _ in range(max(1, min(count, len(items))))]
            yield from _ordered_results(ray, actors, work, items)
        except ray.exceptions.RayError as exc:
            raise _worker_error(exc) from None
        finally:
            for actor in actors:
                ray.kill(actor)
            if started:
                ray.shutdown()

    def _connect(self, ray: Any) -> bool:
        """Connect to (or start) Ray; True when this call started it and must shut it down."""
        if ray.is_initialized():
            return False
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        if address and address != "auto":
            _probe(address)
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        if address is None:
            options["num_cpus"] = self.workers or os.cpu_count() or 1
        try:
            with _native_stderr_quiet():  # Ray's C++ client logs every failed retry to fd 2
                ray.init(address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            reason = str(exc).split(". ")[0].rstrip(".")  # Ray's own advice names flags of its CLI
            raise ExecutorError(
                f"cannot connect to the Ray cluster at {address or 'this machine'}: {reason}. Fix: start one with "
                "`ray start --head` and pass --executor ray:HOST:PORT (the address it prints), or --executor ray "
                "to start one on this machine"
            ) from None
        return True


@contextlib.contextmanager
def _native_stderr_quiet() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the block (what native code writes there is dropped);
    Python's own ``sys.stderr`` writes are flushed first, and the descriptor is restored after."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real descriptor 2 (an embedded or captured stderr)
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _ordered_results(ray: Any, actors: list[Any], work: Callable[[Any, Any], Any], items: Sequence[Any]) -> Iterator[Any]:
    """Keep every actor's queue a few items deep (an actor never waits for the results before its
    own to be collected), and hand the results back in the items' order."""
    window = PER_WORKER_QUEUE * len(actors)
    pending: deque[Any] = deque()
    position = 0
    while position < len(items) or pending:
        while position < len(items) and len(pending) < window:
            pending.append(actors[position % len(actors)].run.remote(work, items[position]))
            position += 1
        yield ray.get(pending.popleft())


def _probe(address: str) -> None:
    """Refuse an address no Ray head listens on (``ray.init`` would retry for minutes)."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(f"--executor ray:{address} is not a Ray address; give ray:HOST:PORT (e.g. "
                          "ray:127.0.0.1:6379, what `ray start --head` prints), ray:auto, or plain ray")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT):
            pass
    except OSError as exc:
        raise ExecutorError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}). Fix: start its head with "
            "`ray start --head` on that machine, check the host and port it prints, or pass --executor ray to "
            "start Ray on this machine"
        ) from None


def _worker_error(exc: BaseException) -> HopragError:
    """A Ray worker's failure as a hoprag error: a HopragError raised inside it is passed on as is."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, HopragError):
        return cause
    what = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc).splitlines()[0]
    return ExecutorError(f"a Ray worker failed ({what}). Fix: check that every node of the cluster has this "
                         "hoprag installed and (for run, ablate and index) can read the index path, or run with "
                         "--executor local")


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--executor ray needs the 'ray' package. Fix: {RAY_INSTALL_FIX}") from None
    return ray


def parse_executor(value: str, *, workers: int | None = None) -> LocalExecutor | RayExecutor:
    """``local`` | ``ray`` | ``ray:ADDRESS`` as an executor; ``workers`` None means the default
    (local: 1, today's one-at-a-time loop; ray: one per CPU of the cluster)."""
    text = (value or "").strip()
    kind, _, address = text.partition(":")
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if kind == "local" and not address:
        return LocalExecutor(workers=workers or 1)
    if kind == "ray":
        if _ and not address.strip():
            raise ConfigError("--executor ray: needs an address after the colon, e.g. ray:127.0.0.1:6379 or ray:auto")
        import_ray()
        return RayExecutor(address=address.strip() or None, workers=workers)
    raise ConfigError(f"unknown executor '{value}'; valid: local, ray, ray:ADDRESS (e.g. ray:127.0.0.1:6379)")
