"""Build an engine by name over a loaded index, with offline roles or LLM-backed ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hoprag.acl import Clearance
from hoprag.errors import ConfigError
from hoprag.index.contract import Index
from hoprag.index.entity_graph import EntityGraph
from hoprag.pipeline.engine import Engine, MultiHopConfig, SingleShotConfig, SingleShotEngine
from hoprag.pipeline.multihop import MultiHopEngine

ENGINE_NAMES = ("single", "multihop")
#: whether the multi-hop engine walks the index's entity graph when not told (see README, Graph hop)
GRAPH_DEFAULT = True
OFFLINE = "offline"


def _uses_model(spec: str | None) -> bool:
    return spec is not None and spec.strip().lower() not in ("", OFFLINE)


def _check_model_flags(name: str, llm: str | None, planner_llm: str | None, synth_llm: str | None, rerank: str) -> None:
    """A model the engine would not use is an error, never silently dropped."""
    given = [f"{flag} {spec}" for flag, spec in (("--llm", llm), ("--planner-llm", planner_llm), ("--synth-llm", synth_llm))
             if _uses_model(spec)]
    if name == "single" and (given or rerank == "llm"):
        flags = ", ".join(given + (["--rerank llm"] if rerank == "llm" else []))
        raise ConfigError(
            f"--engine single answers without any model, so {flags} would be ignored; "
            "drop the model flags, or use --engine multihop"
        )
    if rerank == "llm" and not _uses_model(llm):
        raise ConfigError("--rerank llm needs a model for it: add --llm openai:MODEL or --llm llamacpp:PATH.gguf")


def index_graph(index: Index, wanted: bool | None) -> EntityGraph | None:
    """The entity graph the engine walks: the index's, when ``wanted`` (or by default) and present."""
    if wanted is False or (wanted is None and not GRAPH_DEFAULT):
        return None
    graph = index.entity_graph()
    if graph is None and wanted:
        raise ConfigError(
            "--graph needs an index built with its entity graph; rebuild it with `hoprag index CORPUS --out DIR` "
            "(without --no-graph), or pass --no-graph"
        )
    return graph


def make_engine(
    name: str,
    index: Index,
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
    llm_settings: Any = None,
    graph: bool | None = None,
    **options: Any,
) -> Engine:
    """``index`` is any :class:`~hoprag.index.contract.Index` (:func:`hoprag.index.open.open_index`'s).

    ``llm`` is a backend spec (``offline`` | ``openai:MODEL`` | ``llamacpp:PATH.gguf``) for the
    expander, judge and (with ``rerank="llm"``) reranker; ``planner_llm`` and ``synth_llm`` override
    it per role (cheap planning, strong synthesis). ``offline`` everywhere means no model at all.
    ``mode`` is ``bm25`` | ``dense`` | ``hybrid`` (the last two need an index built with ``--dense``);
    ``fusion`` is how ``hybrid`` fuses its two lists: ``rrf`` (default) or ``weighted``.
    ``clearance`` (a level name or a :class:`~hoprag.acl.Clearance`) answers for a caller at that
    level: every retrieval is filtered to documents it may see. ``None`` reads ``HOPRAG_CLEARANCE``
    (and ``HOPRAG_ACL_LEVELS``), as the commands do; unset, it is unrestricted. Levels that do not
    name every acl class of the index are refused (:mod:`hoprag.security.clearance`).
    ``llm_settings`` (:class:`~hoprag.llm.settings.LLMSettings`) sets timeouts, retries, the
    per-question model budget, strict mode and the circuit breaker for every backend;
    ``llm_options`` are extra ``make_llm`` arguments. A model the engine cannot use (any model with
    ``single``, ``rerank="llm"`` without ``llm``) is a ConfigError.
    ``graph`` turns the multi-hop engine's graph hop on (``True``: the index must hold an entity
    graph), off (``False``), or leaves it to ``GRAPH_DEFAULT`` (``None``: on when the index has one).
    """
    _check_model_flags(name, llm, planner_llm, synth_llm, rerank)
    from hoprag.security import clearance as resolver  # looked up per call: one resolver, tests can watch it

    cleared = resolver.caller_clearance(clearance, index=index, names=resolver.LIBRARY)
    if mode == "hybrid":
        retriever = index.retriever(mode, fusion=fusion)
    else:
        retriever = index.retriever(mode) if mode != "bm25" else index.retriever()
    if name == "single" and graph:
        raise ConfigError("--engine single makes one retrieval call and walks no graph, so --graph would be ignored; "
                          "drop --graph, or use --engine multihop")
    if name == "single":
        config = SingleShotConfig(**({"k": k} if k else {}), **options)
        return SingleShotEngine(retriever, index.chunks, index.documents, config, clearance=cleared)
    if name != "multihop":
        raise ConfigError(f"unknown engine '{name}'; valid: {', '.join(ENGINE_NAMES)}")
    if rerank not in ("offline", "llm"):
        raise ConfigError(f"unknown reranker '{rerank}'; valid: offline, llm")
    config = MultiHopConfig(**({"k": k} if k else {}), **options)
    engine = MultiHopEngine(retriever, index.chunks, index.documents, config, on_event=on_event, clearance=cleared,
                            graph=index_graph(index, graph))
    if not any(_uses_model(s) for s in (llm, planner_llm, synth_llm)):
        return engine
    from hoprag.llm.settings import LLMSettings
    from hoprag.pipeline import llm_roles

    settings = llm_settings if llm_settings is not None else LLMSettings()
    extra = llm_options or {}
    main = settings.make(llm, **extra)
    planner = settings.make(planner_llm, **extra) if planner_llm else main
    synth = settings.make(synth_llm, **extra) if synth_llm else main
    guard = engine.llm_guard = settings.guard()
    if planner is not None:
        engine.planner = llm_roles.LLMPlanner(planner, guard=guard)
    if main is not None:
        engine.expander = llm_roles.LLMExpander(main, engine.bridges, guard=guard)
        engine.judge = llm_roles.LLMJudge(main, engine.judge, guard=guard)
        if rerank == "llm":
            engine.reranker = llm_roles.LLMReranker(main, engine.reranker, limit=config.context_k, guard=guard)
    if synth is not None:
        engine.synthesizer = llm_roles.LLMSynthesizer(synth, engine.synthesizer, guard=guard)
    engine.refresh_config_hash()
    return engine
