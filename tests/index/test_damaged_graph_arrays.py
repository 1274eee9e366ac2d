"""A damaged graph, BM25 or vector file is the rebuild message when it is opened, never an
IndexError mid-walk or a search that silently finds nothing (the graph arrays get the BM25 matrix's
load-time check: hoprag.index.graph_arrays.check_csr)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hoprag.errors import IndexLoadError
from hoprag.index.graph_arrays import check_csr
from hoprag.index.npy_map import all_finite
from hoprag.index.store import build_index, load_index
from hoprag.ingest.loaders import load_corpora

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data" / "enterprise" / "corpus.jsonl"
REBUILD = r"Fix: rebuild the index: `hoprag index CORPUS --out DIR`"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("graph") / "index"
    build_index(load_corpora([DATA]), out)
    assert load_index(out).graph.links.nnz > 0  # the fixture has chunk links to damage
    return out


def _damaged(built: Path, tmp_path: Path, file: str, change) -> Path:
    copy = tmp_path / "index"
    shutil.copytree(built, copy)
    path = copy / "graph" / file
    change(path)
    return copy


def _rewrite(transform):
    return lambda path: np.save(path, transform(np.load(path)))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _set_first(value):
    def change(array: np.ndarray) -> np.ndarray:
        array = array.copy()
        array[1] = value
        return array
    return change


@pytest.mark.parametrize(("file", "change", "reason"), [
    ("chunk_chunk.indices.npy", _rewrite(lambda a: a + 10**6), "column index lies outside"),
    ("chunk_chunk.indices.npy", _rewrite(lambda a: -a - 1), "column index lies outside"),
    ("chunk_chunk.indices.npy", _rewrite(lambda a: a.astype(np.float64)), "whole-number arrays"),
    ("chunk_chunk.indices.npy", _truncate, "greater than file size"),
    ("chunk_chunk.indptr.npy", _rewrite(_set_first(10**6)), "do not fit together|decreases"),
    ("chunk_chunk.data.npy", _rewrite(lambda a: np.full_like(a, np.nan)), "not finite"),
    ("entity_chunk.indices.npy", _rewrite(lambda a: a + 10**6), "column index lies outside"),
    ("chunk_entity.indices.npy", _rewrite(lambda a: a.astype(np.float32)), "whole-number arrays"),
])
def test_damaged_graph_arrays_are_the_rebuild_message_at_first_use(built: Path, tmp_path: Path, file: str, change,
                                                                   reason: str) -> None:
    index = load_index(_damaged(built, tmp_path, file, change))  # the graph is opened on first use
    with pytest.raises(IndexLoadError, match=f"entity graph unreadable.*({reason}).*{REBUILD}"):
        index.graph  # noqa: B018


def test_nan_bm25_scores_are_refused_at_load(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "index"
    shutil.copytree(built, copy)
    path = copy / "bm25" / "data.csc.index.npy"
    np.save(path, np.full_like(np.load(path), np.nan))
    with pytest.raises(IndexLoadError, match=r"not finite.*Fix: run `hoprag index"):
        load_index(copy)


@pytest.mark.unit
def test_check_csr_by_hand() -> None:
    # rows [0: cols 0, 2], [1: none], [2: col 1]: a valid 3 x 3 matrix
    indptr, indices, data = np.array([0, 2, 2, 3]), np.array([0, 2, 1], dtype=np.int32), np.array([0.5, 1.0, 2.0], dtype=np.float32)
    check_csr("m", indptr, indices, data, 3)
    check_csr("m", indptr, indices, None, 3)
    for bad in ([1, 2, 2, 3], [0, 2, 1, 3], [0, 2, 2, 4]):
        with pytest.raises(ValueError):
            check_csr("m", np.array(bad), indices, data, 3)
    with pytest.raises(ValueError, match="outside 0..1"):
        check_csr("m", indptr, indices, data, 2)
    with pytest.raises(ValueError, match="not finite"):
        check_csr("m", indptr, indices, np.array([0.5, np.inf, 2.0], dtype=np.float32), 3)


@pytest.mark.unit
def test_all_finite_looks_at_every_block() -> None:
    values = np.ones((10, 7), dtype=np.float32)
    assert all_finite(values, block=3)
    values[9, 6] = np.nan
    assert not all_finite(values, block=3)
    assert all_finite(np.zeros(0, dtype=np.float32))
