"""``.npy`` files opened as plain ndarray views of a memory map.

Indexing an ``np.memmap`` goes through its Python-level ``__getitem__`` and ``__array_finalize__``
(a few microseconds each): the query path's thousands of small slices and gathers per question
would pay that every time. A plain view of the map reads the same pages, and the map stays open
through the view's ``base``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["load_npy"]


def load_npy(path: str | Path, *, mmap: bool = True) -> np.ndarray:
    """The array in ``path``: memory-mapped read-only with ``mmap`` (a plain view), else read whole.
    Raises ``OSError``/``ValueError`` as ``np.load`` does; never unpickles."""
    return np.asarray(np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False))
