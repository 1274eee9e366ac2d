"""Open an index wherever it lives: a directory ``hoprag index --out`` wrote, or a PostgreSQL URL.

Every command, the library's ablations, pools, demo and gates, and the service pass the user's
argument here unchanged, so ``postgresql://USER@HOST/DB?index=NAME`` works wherever an index
directory does. What they get back is an :class:`~hoprag.index.contract.Index`.
"""

from __future__ import annotations

import os
from pathlib import Path

from hoprag.index.contract import Index
from hoprag.index.pg_schema import is_pg_url

__all__ = ["Index", "index_location", "is_pg_url", "open_index"]


def open_index(target: str | os.PathLike[str], *, mmap: bool = True) -> Index:
    """A :class:`~hoprag.index.store.LoadedIndex` for a directory (its arrays memory-mapped unless
    ``mmap=False``), a :class:`~hoprag.index.pg_store.PgIndex` for a ``postgresql://`` (or
    ``postgres://``) URL. Problems raise :class:`~hoprag.errors.IndexLoadError` with the fix."""
    if isinstance(target, str) and is_pg_url(target):
        from hoprag.index.pg_store import open_pg_index

        return open_pg_index(target)
    from hoprag.index.store import load_index

    return load_index(Path(target), mmap=mmap)


def index_location(target: str | os.PathLike[str]) -> str:
    """``target`` as another process (a Ray worker, started elsewhere) opens the same index with
    :func:`open_index`: a URL unchanged, a directory made absolute."""
    text = os.fspath(target)
    return text if is_pg_url(text) else str(Path(text).resolve())
