"""A real index over the HotpotQA dev slice (5 questions, 50 Wikipedia paragraphs), built once."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.index.store import build_index, load_index

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="session")
def hotpot_slice():
    return import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"])


@pytest.fixture(scope="session")
def hotpot_index(hotpot_slice, tmp_path_factory):
    out = tmp_path_factory.mktemp("hotpot-index")
    build_index(hotpot_slice.documents, out)
    return load_index(out)
