"""A full disk is one message, whoever met it: Python's write, SQLite, numpy or a library error that wraps them.

``run`` met a full disk as ``OSError(ENOSPC)`` and said "No space left on device"; ``index`` met it
inside SQLite (``sqlite3.OperationalError: database or disk is full``) and said it "failed
unexpectedly". :func:`disk_full` finds the full disk anywhere in an exception's chain (its
``__cause__`` and ``__context__``, so an error re-raised ``from None`` still counts) and
:func:`disk_full_message` says it once, with the file where known and the fix. The CLI's error
boundary asks it before any other way of reporting an error.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["disk_full", "disk_full_message"]

#: no space, or the user's quota spent: the same remedy
_FULL = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if e is not None)
# how the wrapping libraries say it (SQLite: SQLITE_FULL; PostgreSQL: SQLSTATE 53100 disk_full)
_WORDS = ("database or disk is full", "no space left on device", "disk quota exceeded", "could not extend file")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or any(item is s for s in seen) or len(seen) > 20:
            continue
        seen.append(item)
        todo.extend((item.__cause__, item.__context__))
    return seen


def disk_full(exc: BaseException) -> BaseException | None:
    """The error in ``exc``'s chain that says the disk (or the quota) is full, or ``None``."""
    for item in _chain(exc):
        if isinstance(item, OSError) and item.errno in _FULL:
            return item
        if type(item).__name__ == "DiskFull" or getattr(item, "sqlstate", None) == "53100":  # psycopg
            return item
        if type(item).__module__ in ("sqlite3", "_sqlite3") or isinstance(item, (OSError, ValueError)):
            text = str(item).lower()
            if any(words in text for words in _WORDS):
                return item
    return None


def disk_full_message(exc: BaseException, *, out_flag: str | None = "--out") -> str:
    """One line for a full disk: what and where, then the fix (free space, or ``out_flag`` elsewhere)."""
    found = disk_full(exc) or exc
    filename = getattr(found, "filename", None)
    where = f" while writing {filename}" if filename else ""
    quota = isinstance(found, OSError) and found.errno == getattr(errno, "EDQUOT", -1)
    what = "your disk quota is used up" if quota else "the disk is full (no space left on device)"
    folder = Path(os.fspath(filename)).parent if filename else None
    free = f"free space on the disk holding {folder} (df -h {folder})" if folder else "free space on the disk (df -h)"
    elsewhere = f", or pass {out_flag} on a disk with room" if out_flag else ""
    return f"{what}{where}. Fix: {free} and run the command again{elsewhere}"
