"""Open an index wherever it lives: a directory ``hoprag index --out`` wrote, or a PostgreSQL URL.

Every command that takes an index passes the user's argument here unchanged, so
``postgresql://USER@HOST/DB?index=NAME`` works wherever an index directory does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hoprag.index.pg_schema import is_pg_url

__all__ = ["is_pg_url", "open_index"]


def open_index(target: str | os.PathLike[str], *, mmap: bool = False) -> Any:
    """A :class:`~hoprag.index.store.LoadedIndex` for a directory, a
    :class:`~hoprag.index.pg_store.PgIndex` for a ``postgresql://`` (or ``postgres://``) URL."""
    if isinstance(target, str) and is_pg_url(target):
        from hoprag.index.pg_store import open_pg_index

        return open_pg_index(target)
    from hoprag.index.store import load_index

    return load_index(Path(target), mmap=mmap)
