"""Session fixtures: the HotpotQA slice and one traced run of each real framework's pipeline over it
(``pip install 'hoprag[interop]'``; skipped without the frameworks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the pipelines and components beside this file

from pipelines import hotpot_slice, run_haystack, run_llamaindex  # noqa: E402


@pytest.fixture(scope="session")
def slice_files(tmp_path_factory: pytest.TempPathFactory):
    """(import result, cases.jsonl, corpus.jsonl) of the bundled HotpotQA dev slice."""
    return hotpot_slice(tmp_path_factory.mktemp("hotpot"))


@pytest.fixture(scope="session")
def llamaindex_run(slice_files, tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("openinference.instrumentation.llama_index")
    result, _, _ = slice_files
    return run_llamaindex(result.cases, result.documents, tmp_path_factory.mktemp("li") / "llamaindex.jsonl")


@pytest.fixture(scope="session")
def haystack_run(slice_files, tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("haystack")
    pytest.importorskip("openinference.instrumentation.haystack")
    result, _, _ = slice_files
    return run_haystack(result.cases, result.documents, tmp_path_factory.mktemp("hs") / "haystack.jsonl")
