"""The backend contract, run on the offline and scripted backends (real servers: see integration files)."""

from __future__ import annotations

from typing import Any

import pytest

from hoprag.llm import LLM, OfflineLLM, ScriptedLLM
from hoprag.llm.testing import LLMConformance

pytestmark = pytest.mark.unit


class TestOfflineConformance(LLMConformance):
    @pytest.fixture
    def llm(self) -> OfflineLLM:
        return OfflineLLM()


class TestScriptedConformance(LLMConformance):
    supports_max_tokens = False  # it replies exactly as scripted

    @pytest.fixture
    def llm(self) -> ScriptedLLM:
        return ScriptedLLM()

    def expect(self, llm: LLM, *replies: Any) -> None:
        assert isinstance(llm, ScriptedLLM)
        llm.enqueue(list(replies))
