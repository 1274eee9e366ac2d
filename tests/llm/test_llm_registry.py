"""make_llm: spec strings to backends, and errors that list the valid forms."""

from __future__ import annotations

import pytest

from hoprag.errors import ConfigError
from hoprag.llm import MissingAPIKeyError, OfflineLLM, RetryPolicy, make_llm
from hoprag.llm.openai_compat import OpenAICompatLLM

pytestmark = pytest.mark.unit


def test_offline_is_the_default_form() -> None:
    llm = make_llm("offline", timeout=5.0, retry=RetryPolicy(max_retries=1), delay=0.0)
    assert isinstance(llm, OfflineLLM)
    assert (llm.spec, llm.timeout, llm.retry.max_retries) == ("offline", 5.0, 1)


def test_openai_form_with_a_local_base_url_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HOPRAG_API_KEY", "OPENAI_API_KEY", "HOPRAG_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with make_llm("openai:qwen2.5", base_url="http://127.0.0.1:8080") as llm:
        assert isinstance(llm, OpenAICompatLLM)
        assert (llm.model, llm.base_url, llm.spec) == ("qwen2.5", "http://127.0.0.1:8080/v1", "openai:qwen2.5")


def test_openai_dot_com_without_a_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HOPRAG_API_KEY", "OPENAI_API_KEY", "HOPRAG_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingAPIKeyError, match="set HOPRAG_API_KEY"):
        make_llm("openai:gpt-4o-mini")


def test_base_url_and_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOPRAG_BASE_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.delenv("HOPRAG_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with make_llm("openai:llama3") as llm:
        assert llm.base_url == "http://127.0.0.1:11434/v1"
        assert llm._client.headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("", "it is empty"),
        ("gpt4", "unknown backend 'gpt4'"),
        ("anthropic:claude", "unknown backend 'anthropic'"),
        ("openai:", "openai needs a model name"),
        ("llamacpp:", "llamacpp needs the path of a .gguf file"),
    ],
)
def test_invalid_specs_list_the_valid_forms(spec: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why) as info:
        make_llm(spec)
    assert "valid forms: offline, openai:MODEL, llamacpp:PATH.gguf" in str(info.value)


def test_base_url_with_a_non_openai_backend_is_refused() -> None:
    with pytest.raises(ConfigError, match="apply only to openai"):
        make_llm("offline", base_url="http://127.0.0.1:8080")


def test_base_url_must_be_http() -> None:
    with pytest.raises(ConfigError, match="not an http"):
        make_llm("openai:m", base_url="127.0.0.1:8080")
