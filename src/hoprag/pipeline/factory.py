"""Build an engine by name over a loaded index, with offline roles or LLM-backed ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hoprag.acl import Clearance, resolve_clearance
from hoprag.errors import ConfigError
from hoprag.pipeline.engine import Engine, MultiHopConfig, SingleShotConfig, SingleShotEngine
from hoprag.pipeline.multihop import MultiHopEngine

ENGINE_NAMES = ("single", "multihop")
OFFLINE = "offline"


def _backend(spec: str | None, **llm_options: Any):
    if spec is None or spec == OFFLINE:
        return None
    from hoprag.llm.registry import make_llm

    return make_llm(spec, **llm_options)


def make_engine(
    name: str,
    index: Any,
    *,
    k: int | None = None,
    mode: str = "bm25",
    fusion: str = "rrf",
    llm: str | None = None,
    planner_llm: str | None = None,
    synth_llm: str | None = None,
    rerank: str = "offline",
    on_event: Callable[[str, int, str], None] | None = None,
    llm_options: dict[str, Any] | None = None,
    clearance: str | Clearance | None = None,
    **options: Any,
) -> Engine:
    """``index`` is a loaded index (``.retriever(mode)``, ``.chunks``, ``.documents``).

    ``llm`` is a backend spec (``offline`` | ``openai:MODEL`` | ``llamacpp:PATH.gguf``) for the
    expander, judge and (with ``rerank="llm"``) reranker; ``planner_llm`` and ``synth_llm`` override
    it per role (cheap planning, strong synthesis). ``offline`` everywhere means no model at all.
    ``mode`` is ``bm25`` | ``dense`` | ``hybrid`` (the last two need an index built with ``--dense``);
    ``fusion`` is how ``hybrid`` fuses its two lists: ``rrf`` (default) or ``weighted``.
    ``clearance`` (a level name or a :class:`~hoprag.acl.Clearance`) answers for a caller at that
    level: every retrieval is filtered to documents it may see; ``None`` is unrestricted.
    """
    cleared = resolve_clearance(clearance)
    if mode == "hybrid":
        retriever = index.retriever(mode, fusion=fusion)
    else:
        retriever = index.retriever(mode) if mode != "bm25" else index.retriever()
    if name == "single":
        config = SingleShotConfig(**({"k": k} if k else {}), **options)
        return SingleShotEngine(retriever, index.chunks, index.documents, config, clearance=cleared)
    if name != "multihop":
        raise ConfigError(f"unknown engine '{name}'; valid: {', '.join(ENGINE_NAMES)}")
    if rerank not in ("offline", "llm"):
        raise ConfigError(f"unknown reranker '{rerank}'; valid: offline, llm")
    config = MultiHopConfig(**({"k": k} if k else {}), **options)
    engine = MultiHopEngine(retriever, index.chunks, index.documents, config, on_event=on_event, clearance=cleared)
    llm_options = llm_options or {}
    main = _backend(llm, **llm_options)
    planner = _backend(planner_llm, **llm_options) if planner_llm else main
    synth = _backend(synth_llm, **llm_options) if synth_llm else main
    if main is None and planner is None and synth is None:
        return engine
    from hoprag.pipeline import llm_roles

    if planner is not None:
        engine.planner = llm_roles.LLMPlanner(planner)
    if main is not None:
        engine.expander = llm_roles.LLMExpander(main, engine.bridges)
        engine.judge = llm_roles.LLMJudge(main, engine.judge)
        if rerank == "llm":
            engine.reranker = llm_roles.LLMReranker(main, engine.reranker, limit=config.context_k)
    if synth is not None:
        engine.synthesizer = llm_roles.LLMSynthesizer(synth, engine.synthesizer)
    engine.refresh_config_hash()
    return engine
