"""Fixtures for the LLM layer: a scripted fake and a loopback HTTP stub.

The real llama.cpp server (``llama_server``) and its model (``gguf_path``) are session fixtures of
``tests/conftest.py``, shared with the service tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_stub import StubServer

from hoprag.llm import OfflineLLM, ScriptedLLM


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
