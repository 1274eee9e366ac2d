"""The one output path guard: every file hoprag writes for a user goes through here.

Three promises, kept in one place so that no command can forget them:

* **An output never replaces an input.** While a command runs, :func:`guarding` holds the files it
  reads; an output that is one of them (the same resolved path, or the same file through a link) is
  refused before anything is written. In-place rewrites a command documents (``hoprag traces redact
  T --out T``) are declared by the command, never assumed.
* **A file of another kind is never replaced without ``--force``.** An existing, non-empty output
  must look like what the command writes (:mod:`hoprag.io.kinds`): a report over a report, traces
  over traces. A cases file named as ``--json`` is refused, naming what it looks like.
* **Writes are atomic.** Text goes to a temporary file beside the target, is flushed to disk and
  renamed over it: a reader sees the old file or the new one, never half of one, and a write that
  fails (full disk, Ctrl-C) leaves the old file as it was. Appending writers (a run's traces) get the
  same checks through :func:`open_for_append`.

The CLI enters :func:`guarding` for every command from one table of each command's inputs and
outputs (:mod:`hoprag.cli_io`); library callers may enter it themselves, and without it the kind
check and atomic write still hold.
"""

from __future__ import annotations

import contextvars
import json
import os
import stat
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from hoprag.errors import InputError
from hoprag.io.kinds import ANY_JSONL, HEAD_BYTES, OutputKind, describe

__all__ = [
    "Guard",
    "atomic_writer",
    "check_not_input",
    "check_output",
    "check_output_dir",
    "current_guard",
    "guarding",
    "open_for_append",
    "write_bytes",
    "write_records",
    "write_text",
]


@dataclass(frozen=True)
class _Input:
    path: Path  # as the user gave it
    resolved: Path
    identity: tuple[int, int] | None  # (device, inode) of an existing file


@dataclass(frozen=True)
class Guard:
    """The files one command reads, and what it may replace."""

    inputs: tuple[_Input, ...] = ()
    force: bool = False
    #: inputs the command rewrites in place on purpose (by identity)
    in_place: frozenset[tuple[int, int]] = frozenset()
    #: how the user turns off the kind check (the flag exists on every command that writes)
    force_flag: str = "--force"

    def clashing_input(self, path: Path) -> _Input | None:
        """The input ``path`` would overwrite, if any (same resolved path or same file)."""
        resolved, identity = _resolve(path), _identity(path)
        for item in self.inputs:
            if identity is not None and identity in self.in_place:
                continue
            if item.resolved == resolved or (identity is not None and identity == item.identity):
                return item
        return None

    def inputs_inside(self, directory: Path) -> list[_Input]:
        """Inputs that live inside ``directory`` (replaced with it when a command replaces the folder)."""
        root = _resolve(directory)
        return [item for item in self.inputs if item.resolved == root or root in item.resolved.parents]


_current: contextvars.ContextVar[Guard | None] = contextvars.ContextVar("hoprag_output_guard", default=None)


def current_guard() -> Guard:
    """The guard of the command running in this context (an empty one outside any command)."""
    return _current.get() or Guard()


def _resolve(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _as_input(path: str | os.PathLike[str]) -> _Input:
    path = Path(path)
    return _Input(path, _resolve(path), _identity(path))


@contextmanager
def guarding(
    inputs: Iterable[str | os.PathLike[str]],
    *,
    force: bool = False,
    in_place: Iterable[str | os.PathLike[str]] = (),
    force_flag: str = "--force",
) -> Iterator[Guard]:
    """Within this block, outputs are checked against ``inputs`` (files or folders the command reads)."""
    identities = frozenset(i for i in (_identity(Path(p)) for p in in_place) if i is not None)
    guard = Guard(tuple(_as_input(p) for p in inputs), force, identities, force_flag)
    token = _current.set(guard)
    try:
        yield guard
    finally:
        _current.reset(token)


def _same_input_error(path: Path, item: _Input, what: str) -> InputError:
    same = "the same file as" if item.resolved != _resolve(path) else "the same path as"
    return InputError(
        f"{what} is {same} the input {item.path}: writing it would replace the input", source=str(path),
        fix=f"pass another path to {what}" if what.startswith("--") else "write the output to another path",
    )


def _head(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return handle.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _is_special(mode: int) -> bool:
    """Character devices and FIFOs (``/dev/null``, ``/dev/stdout``, a pipe) are written in place."""
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def check_not_input(path: str | os.PathLike[str], *, what: str = "the output") -> Path:
    """Refuse ``path`` as an output if it is one of the running command's inputs."""
    path = Path(path)
    clash = current_guard().clashing_input(path)
    if clash is not None:
        raise _same_input_error(path, clash, what)
    return path


def check_output(path: str | os.PathLike[str], kind: OutputKind, *, what: str = "the output") -> Path:
    """Refuse ``path`` as an output of ``kind`` if writing it could lose something; return it as a Path.

    ``what`` names the output in messages (the flag, e.g. ``--json``).
    """
    path = check_not_input(path, what=what)
    guard = current_guard()
    try:
        info = path.stat()
    except FileNotFoundError:
        return path
    except NotADirectoryError:
        raise InputError(f"{what} cannot be written: a part of its folder path is a file", source=str(path),
                         fix="check the path") from None
    except OSError as exc:
        raise InputError(f"{what} cannot be checked ({exc.strerror or exc})", source=str(path),
                         fix="check the path and its permissions") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{what} is a directory, and this output is a file", source=str(path),
                         fix=f"pass a file path to {what} (e.g. {path / 'out'})")
    if _is_special(info.st_mode):
        return path
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{what} is not a regular file (a socket or block device)", source=str(path),
                         fix=f"pass a regular file path to {what}")
    if info.st_size == 0 or guard.force:
        return path
    head = _head(path)
    if not kind.matches(head):
        raise InputError(
            f"{what} exists and holds {describe(head)}, not a {kind.name}: replacing it would lose it",
            source=str(path),
            fix=(f"pass another path to {what}" if what.startswith("-") else "write to another path")
            + f", or add {guard.force_flag} to replace it",
        )
    return path


def check_output_dir(
    path: str | os.PathLike[str], *, what: str = "--out", replaces_whole: bool = False
) -> Path:
    """Refuse ``path`` as an output folder that is a file, or that is (or, when the command replaces the
    whole folder, holds) one of the command's inputs."""
    path = Path(path)
    guard = current_guard()
    clash = guard.clashing_input(path)
    if clash is None and replaces_whole:
        inside = guard.inputs_inside(path)
        clash = inside[0] if inside else None
    if clash is not None:
        raise InputError(
            f"{what} is or holds the input {clash.path}: writing there would replace it", source=str(path),
            fix=f"pass another directory to {what}",
        )
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} is an existing file, and this output is a directory", source=str(path),
                         fix=f"pass a directory path to {what} (a new one is created)")
    return path


@contextmanager
def atomic_writer(
    path: str | os.PathLike[str], kind: OutputKind, *, what: str = "the output", binary: bool = False
) -> Iterator[IO[Any]]:
    """A handle on a temporary file that replaces ``path`` when the block ends without an exception."""
    path = check_output(path, kind, what=what)
    try:
        special = _is_special(path.stat().st_mode)
    except OSError:
        special = False
    if special:  # a device or pipe: nothing to replace, nothing a rename could protect
        with path.open("wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            yield handle
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with tmp.open("wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _keep_mode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _keep_mode(path: Path, tmp: Path) -> None:
    """A replaced file keeps its permissions (a report shared with a group stays shared)."""
    try:
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
    except OSError:
        pass


def write_text(path: str | os.PathLike[str], text: str, kind: OutputKind, *, what: str = "the output") -> Path:
    """Write ``text`` to ``path`` atomically, after the guard's checks."""
    with atomic_writer(path, kind, what=what) as handle:
        handle.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike[str], data: bytes, kind: OutputKind, *, what: str = "the output") -> Path:
    with atomic_writer(path, kind, what=what, binary=True) as handle:
        handle.write(data)
    return Path(path)


def write_records(path: str | os.PathLike[str], records: Iterable[Any], *, kind: OutputKind = ANY_JSONL,
                  what: str = "the output") -> int:
    """Write records (anything with ``to_dict``) as JSONL, atomically after the guard's checks; returns
    the count written. Numbers are never written as NaN or Infinity (:mod:`hoprag.finite_numbers`).
    Traces have their own writer, with the run header: :func:`hoprag.io.traces.write_traces`."""
    count = 0
    with atomic_writer(path, kind, what=what) as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), ensure_ascii=False, allow_nan=False) + "\n")
            count += 1
    return count


def open_for_append(path: str | os.PathLike[str], kind: OutputKind | None, *, what: str = "the output") -> IO[str]:
    """``path`` opened for appending (created if missing), after the guard's checks.

    ``kind=None`` for a writer that checked the file's kind once already (a run appends trace after
    trace to the file it checked when it started): the input rule is still checked on every open.
    """
    path = check_not_input(path, what=what) if kind is None else check_output(path, kind, what=what)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("a", encoding="utf-8")
