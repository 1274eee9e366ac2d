"""An exclusive lock on a file being written, so two processes never append to it at once.

The lock is ``flock`` on ``<file>.lock`` beside it, which holds the writer's PID. The kernel drops a
``flock`` when its process dies, so a lock file left by a killed run never blocks the next one. On
systems without ``fcntl`` (Windows) the lock is a no-op.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hoprag.errors import HopragError, InputError

__all__ = ["FileLockedError", "exclusive_lock", "lock_path"]


class FileLockedError(HopragError):
    """Another process holds the lock on a file this one is about to write."""

    def __init__(self, message: str, *, pid: int | None) -> None:
        self.pid = pid
        super().__init__(message)


def lock_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".lock")


@contextmanager
def exclusive_lock(path: str | Path, *, fix: str) -> Iterator[Path]:
    """Hold ``<path>.lock`` for the ``with`` block; if another live process holds it, raise
    :class:`FileLockedError` naming its PID and ``fix``."""
    try:
        import fcntl
    except ImportError:  # no flock on this platform: no lock
        yield lock_path(path)
        return
    target = lock_path(path)
    while True:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(f"cannot create the lock file {target.name} beside it ({exc.strerror or exc})",
                             source=str(path), fix="write to a folder you can create files in") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            holder = f"PID {pid}" if pid else "another process"
            raise FileLockedError(
                f"{path} is being written by another run ({holder}, lock {target}); a second writer would "
                f"append duplicate traces. Fix: {fix}",
                pid=pid,
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # The holder before us may have removed the file between our open and our flock: then we
        # locked an unlinked file, and must lock the one now at the path instead.
        try:
            same = os.fstat(fd).st_ino == os.stat(target).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield target
    finally:
        try:
            target.unlink()
        except FileNotFoundError:
            pass
        os.close(fd)  # closing releases the flock


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
