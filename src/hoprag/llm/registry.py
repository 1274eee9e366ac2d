"""Build an LLM from a spec string, as ``--llm`` / ``--planner-llm`` / ``--synth-llm`` take it."""

from __future__ import annotations

from typing import Any

from hoprag.errors import ConfigError
from hoprag.llm.base import DEFAULT_TIMEOUT, LLM, RetryPolicy
from hoprag.llm.pricing import PriceTable

SPEC_FORMS = ("offline", "openai:MODEL", "llamacpp:PATH.gguf")


def _invalid(spec: str, why: str) -> ConfigError:
    return ConfigError(
        f"invalid LLM spec {spec!r}: {why}; valid forms: {', '.join(SPEC_FORMS)}"
        " (e.g. --llm openai:gpt-4o-mini --base-url http://127.0.0.1:8080/v1)"
    )


def make_llm(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    retry: RetryPolicy | None = None,
    prices: PriceTable | None = None,
    **options: Any,
) -> LLM:
    """``offline`` | ``openai:MODEL`` | ``llamacpp:PATH.gguf`` -> a ready backend.

    ``base_url``/``api_key`` apply to ``openai`` only; ``options`` go to the backend's constructor
    (e.g. ``json_mode=`` for openai, ``n_ctx=`` for llamacpp, ``delay=`` for offline).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _invalid(str(spec), "it is empty")
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    kind = kind.lower()
    common: dict[str, Any] = {"timeout": timeout, "retry": retry, "prices": prices}
    if (base_url or api_key) and kind != "openai":
        raise _invalid(spec, "--base-url and --api-key apply only to openai:MODEL")
    if kind == "offline":
        from hoprag.llm.offline import OfflineLLM

        return OfflineLLM(rest or "rules", **common, **options)
    if kind == "openai":
        if not rest:
            raise _invalid(spec, "openai needs a model name after the colon")
        from hoprag.llm.openai_compat import OpenAICompatLLM

        return OpenAICompatLLM(rest, base_url=base_url, api_key=api_key, **common, **options)
    if kind == "llamacpp":
        if not rest:
            raise _invalid(spec, "llamacpp needs the path of a .gguf file after the colon")
        from hoprag.llm.llamacpp import LlamaCppLLM

        return LlamaCppLLM(rest, **common, **options)
    raise _invalid(spec, f"unknown backend {kind!r}")
