"""The entity graph's sparse matrices as plain CSR index arrays, written as ``.npy`` files and
memory-mapped at load, so opening a graph costs what its headers do and the graph hop reads only the
rows it walks (no scipy, nothing per process that grows with the corpus).

Graph format 2 (:data:`GRAPH_FORMAT`) writes, per matrix ``NAME``, ``NAME.indptr.npy``,
``NAME.indices.npy`` and, when its values are not all 1, ``NAME.data.npy``:

- ``entity_chunk`` (entities × chunks, values 1) and its transpose ``chunk_entity`` (chunks ×
  entities: the entities each chunk mentions), both written at build time so no process transposes;
- ``chunk_chunk`` (chunks × chunks, symmetric, float32 link weights).

Format 1 (scipy ``.npz`` files) is refused with the rebuild command.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.errors import IndexLoadError
from hoprag.index.npy_map import all_finite, load_npy

__all__ = ["GRAPH_FORMAT", "ChunkIdsByPosition", "CsrArrays", "StoredChunkIds"]

GRAPH_FORMAT = 2


@dataclass(frozen=True)
class CsrArrays:
    """A CSR matrix as its index arrays; ``data`` ``None`` means every stored value is 1."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1]) if len(self.indptr) else 0

    def row(self, i: int) -> np.ndarray:
        """Column indices of row ``i`` (ascending)."""
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    def row_values(self, i: int) -> np.ndarray:
        """Values of row ``i``, aligned with :meth:`row`."""
        start, end = self.indptr[i], self.indptr[i + 1]
        if self.data is None:
            return np.ones(int(end - start), dtype=np.float64)
        return np.asarray(self.data[start:end], dtype=np.float64)

    def row_lengths(self, rows: np.ndarray) -> np.ndarray:
        """Stored entries per row, for an array of rows."""
        rows = np.asarray(rows, dtype=np.int64)
        return (self.indptr[rows + 1] - self.indptr[rows]).astype(np.int64)

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every stored entry of ``rows``: (index into ``rows``, entry position), row after row."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = np.asarray(self.indptr[rows], dtype=np.int64)
        lengths = np.asarray(self.indptr[rows + 1], dtype=np.int64) - starts
        owner = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
        first = np.cumsum(lengths) - lengths
        return owner, np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - first, lengths)

    @classmethod
    def from_scipy(cls, matrix: Any, *, ones: bool = False) -> CsrArrays:
        """From a scipy CSR matrix (sorted indices); ``ones``: its values are all 1 and are not kept."""
        matrix.sort_indices()
        data = None if ones else np.asarray(matrix.data)
        return cls(np.asarray(matrix.indptr), np.asarray(matrix.indices), data, tuple(matrix.shape))

    def to_scipy(self) -> Any:
        from scipy import sparse

        data = np.ones(self.nnz, dtype=np.float32) if self.data is None else np.asarray(self.data)
        return sparse.csr_matrix((data, np.asarray(self.indices), np.asarray(self.indptr)), shape=self.shape)

    def save(self, directory: Path, name: str) -> None:
        np.save(directory / f"{name}.indptr.npy", np.asarray(self.indptr))
        np.save(directory / f"{name}.indices.npy", np.asarray(self.indices))
        if self.data is not None:
            np.save(directory / f"{name}.data.npy", np.asarray(self.data))

    @classmethod
    def load(cls, directory: Path, name: str, columns: int, *, ones: bool) -> CsrArrays:
        """Memory-map one matrix written by :meth:`save`; ``ValueError`` when its arrays disagree or
        hold what no walk can use (see :func:`check_csr`)."""
        indptr = load_npy(directory / f"{name}.indptr.npy")
        indices = load_npy(directory / f"{name}.indices.npy")
        data = None if ones else load_npy(directory / f"{name}.data.npy")
        check_csr(name, indptr, indices, data, columns)
        return cls(indptr, indices, data, (len(indptr) - 1, columns))

    @staticmethod
    def present(directory: Path, name: str) -> bool:
        return (directory / f"{name}.indptr.npy").is_file()


def check_csr(name: str, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, columns: int) -> None:
    """Raise ``ValueError`` unless the arrays are one CSR matrix of ``columns`` columns: whole-number
    offsets from 0 that never decrease and end at the entry count, column indices in ``[0, columns)``,
    finite values. Checked once at load (a few passes over the arrays: 1.2 ms for 2M entries over 100k
    chunks), so a damaged file is the rebuild message there, not an ``IndexError`` in a walk."""
    if indptr.ndim != 1 or not len(indptr) or indptr.dtype.kind not in "iu" or indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise ValueError(f"{name}: indptr and indices are not one-dimensional whole-number arrays")
    if int(indptr[0]) != 0 or int(indptr[-1]) != len(indices) or (data is not None and len(data) != len(indices)):
        raise ValueError(f"{name}: indptr, indices and data do not fit together")
    if len(indptr) > 1 and bool((indptr[1:] < indptr[:-1]).any()):
        raise ValueError(f"{name}: indptr decreases")
    if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= columns):
        raise ValueError(f"{name}: a column index lies outside 0..{columns - 1}")
    if data is not None and (data.ndim != 1 or data.dtype.kind != "f" or not all_finite(data)):
        raise ValueError(f"{name}: the values are not finite numbers")


class StoredChunkIds(Sequence[str]):
    """The column order as stored in ``chunk_ids.json``, read on first use."""

    def __init__(self, path: Path, count: int, fix: str) -> None:
        self.path, self.count, self.fix = path, count, fix
        self._ids: tuple[str, ...] | None = None

    def _all(self) -> tuple[str, ...]:
        if self._ids is None:
            try:
                self._ids = tuple(str(c) for c in json.loads(self.path.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise IndexLoadError(f"{self.path}: entity graph unreadable ({exc}). Fix: {self.fix}") from None
        return self._ids

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, pos: Any) -> Any:
        return self._all()[pos]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())


class ChunkIdsByPosition(Sequence[str]):
    """The column order read through the index's chunk positions (graph columns are index positions)."""

    def __init__(self, chunk_id: Callable[[int], str], count: int) -> None:
        self.chunk_id, self.count = chunk_id, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, pos: Any) -> Any:
        if isinstance(pos, slice):
            return [self.chunk_id(i) for i in range(*pos.indices(self.count))]
        pos = int(pos)
        if pos < 0:
            pos += self.count
        if not 0 <= pos < self.count:
            raise IndexError(pos)
        return self.chunk_id(pos)
