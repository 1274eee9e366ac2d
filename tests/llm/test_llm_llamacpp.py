"""The in-process llama.cpp backend: conformance on the packaged GGUF model, and its input errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hoprag.errors import InputError
from hoprag.llm import LLM, LLMContextLengthError, LLMDependencyError, LLMTimeoutError, make_llm
from hoprag.llm.llamacpp import LlamaCppLLM
from hoprag.llm.testing import Country, LLMConformance


@pytest.fixture(scope="module")
def local_llm(gguf_path: Path) -> Iterator[LlamaCppLLM]:
    llm = LlamaCppLLM(gguf_path, n_ctx=1024, timeout=120.0)
    yield llm
    llm.close()


@pytest.mark.integration
class TestLlamaCppConformance(LLMConformance):
    @pytest.fixture
    def llm(self, local_llm: LlamaCppLLM) -> LLM:
        return local_llm


@pytest.mark.integration
def test_json_is_valid_on_the_first_attempt(local_llm: LlamaCppLLM) -> None:
    result = local_llm.complete("Name a country and its population in millions.", json_schema=Country, max_tokens=64)
    assert isinstance(result.data, Country) and result.attempts == 1


@pytest.mark.integration
def test_timeout_stops_generation_between_tokens(local_llm: LlamaCppLLM) -> None:
    saved, local_llm.timeout = local_llm.timeout, 0.01
    saved_retry, local_llm.retry = local_llm.retry, local_llm.retry.model_copy(update={"max_retries": 0})
    try:
        with pytest.raises(LLMTimeoutError, match="did not finish within 0.01 s"):
            local_llm.complete("Write a long story about a lighthouse keeper.", max_tokens=64)
    finally:
        local_llm.timeout, local_llm.retry = saved, saved_retry
    # the model is usable again after an interrupted generation
    again = local_llm.complete([{"role": "system", "content": "You answer briefly."},
                                {"role": "user", "content": "Write a short poem about the sea."}], max_tokens=4)
    assert again.usage.completion_tokens > 0


@pytest.mark.integration
def test_make_llm_builds_it_from_a_spec(gguf_path: Path) -> None:
    with make_llm(f"llamacpp:{gguf_path}", n_ctx=512) as llm:
        assert llm.spec == f"llamacpp:{gguf_path}"


@pytest.mark.unit
def test_missing_file_and_wrong_suffix_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="GGUF model file not found"):
        LlamaCppLLM(tmp_path / "absent.gguf")
    other = tmp_path / "model.bin"
    other.write_bytes(b"x")
    with pytest.raises(InputError, match="expected a .gguf path"):
        LlamaCppLLM(other)


@pytest.mark.unit
def test_missing_llama_cpp_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'hoprag\[local\]'") as info:
        LlamaCppLLM(model)
    assert isinstance(info.value, LLMDependencyError)


@pytest.mark.integration
def test_a_prompt_beyond_the_context_is_a_context_error_with_real_token_counts(local_llm: LlamaCppLLM) -> None:
    prompt = " ".join(f"passage {i} says the retention period of plan KP-{i} is {i} years." for i in range(120))
    assert local_llm.context_window == 1024
    assert local_llm.count_tokens(prompt) > 1024  # the model's own tokenizer
    with pytest.raises(LLMContextLengthError) as info:
        local_llm.complete(prompt, max_tokens=8)
    assert info.value.window == 1024 and info.value.attempts == 1 and "--n-ctx" in str(info.value)


@pytest.mark.integration
def test_a_json_request_is_abandoned_at_the_deadline(local_llm: LlamaCppLLM) -> None:
    import time

    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}},
              "required": ["items"]}
    with pytest.raises(LLMTimeoutError, match="did not finish within") as info:
        local_llm.complete("List every country you know with its capital.", json_schema=schema,
                           max_tokens=400, deadline=time.monotonic() + 0.3)
    saved, local_llm.timeout = local_llm.timeout, 0.3
    try:
        with pytest.raises(LLMTimeoutError) as again_info:
            local_llm.complete("List every country you know with its capital.", json_schema=schema, max_tokens=400)
    finally:
        local_llm.timeout = saved
    # a local model is as slow the second time (same seed, same prompt): its timeouts are not retried
    assert info.value.attempts == 1 and again_info.value.attempts == 1 and local_llm.retry.max_retries > 0
    again = local_llm.complete("Name a country and its population in millions.", json_schema=Country, max_tokens=64)
    assert isinstance(again.data, Country)  # the model is usable after an abandoned stream
