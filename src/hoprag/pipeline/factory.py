"""Build the engine an :class:`~hoprag.pipeline.spec.EngineSpec` describes over an index, with offline roles or LLM-backed ones."""

from __future__ import annotations

from typing import Any

from hoprag.security.acl import Clearance
from hoprag.errors import ConfigError
from hoprag.index.base import Retriever
from hoprag.index.contract import Index
from hoprag.index.entity_graph import EntityGraph
from hoprag.pipeline.engine import Engine, SingleShotConfig, SingleShotEngine
from hoprag.pipeline.events import OnEvent
from hoprag.pipeline.multihop import MultiHopEngine
from hoprag.pipeline.spec import ENGINE_NAMES, EngineSpec

#: whether the multi-hop engine walks the index's entity graph when not told (see README, Graph hop)
GRAPH_DEFAULT = True
OFFLINE = "offline"


def _uses_model(spec: str | None) -> bool:
    return spec is not None and spec.strip().lower() not in ("", OFFLINE)


def _check_model_flags(name: str, models: dict[str, str | None], rerank: str) -> None:
    """A model the engine would not use is an error, never silently dropped."""
    given = [f"--{role.replace('_', '-')} {spec}" for role, spec in models.items() if _uses_model(spec)]
    if name == "single" and (given or rerank == "llm"):
        flags = ", ".join(given + (["--rerank llm"] if rerank == "llm" else []))
        raise ConfigError(
            f"--engine single answers without any model, so {flags} would be ignored; "
            "drop the model flags, or use --engine multihop"
        )
    if rerank == "llm" and not _uses_model(models["llm"]):
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


def spec_retriever(spec: EngineSpec, index: Index) -> Retriever:
    """The retriever of ``spec``'s mode (and fusion, for ``hybrid``) over ``index``."""
    if spec.mode == "hybrid":
        return index.retriever(spec.mode, fusion=spec.fusion)
    return index.retriever(spec.mode) if spec.mode != "bm25" else index.retriever()


def make_engine(
    spec: EngineSpec | str,
    index: Index,
    *,
    clearance: str | Clearance | None = None,
    on_event: OnEvent | None = None,
    llm_options: dict[str, Any] | None = None,
    **options: Any,
) -> Engine:
    """The engine ``spec`` describes (:class:`~hoprag.pipeline.spec.EngineSpec`) over ``index``.

    ``index`` is any :class:`~hoprag.index.contract.Index` (:func:`hoprag.index.open.open_index`'s).
    ``clearance`` (a level name or a :class:`~hoprag.security.acl.Clearance`; not part of the spec: it is the
    caller's) answers for a caller at that level: every retrieval is filtered to documents it may
    see. ``None`` reads ``HOPRAG_CLEARANCE`` (and ``HOPRAG_ACL_LEVELS``), as the commands do; unset,
    it is unrestricted. Levels that do not name every acl class of the index are refused
    (:mod:`hoprag.security.clearance`). ``on_event`` hears every question the multi-hop engine
    answers (typed events, :mod:`hoprag.pipeline.events`; ``answer(on_event=...)`` hears one); ``llm_options`` are extra ``make_llm`` arguments.

    ``spec`` may also be an engine name with the spec's settings as flat keywords
    (``make_engine("multihop", index, k=5, max_hops=2)``, :meth:`EngineSpec.from_options`).
    A model the engine cannot use (any model with ``single``, ``rerank="llm"`` without ``llm``) is a
    ConfigError; so is ``graph=True`` over an index without an entity graph.
    """
    if isinstance(spec, str):
        if spec not in ENGINE_NAMES:
            raise ConfigError(f"unknown engine '{spec}'; valid: {', '.join(ENGINE_NAMES)}")
        spec = EngineSpec.from_options(spec, **options)
    elif options:
        raise TypeError(f"make_engine takes a spec or a name with keywords, not both ({', '.join(options)})")
    models = {"llm": spec.llm, "planner_llm": spec.planner_llm, "synth_llm": spec.synth_llm,
              "judge_llm": spec.judge_llm}
    _check_model_flags(spec.engine, models, spec.rerank)
    from hoprag.security import clearance as resolver  # looked up per call: one resolver, tests can watch it

    cleared = resolver.caller_clearance(clearance, index=index, names=resolver.LIBRARY)
    retriever = spec_retriever(spec, index)
    if spec.engine == "single" and spec.graph:
        raise ConfigError("--engine single makes one retrieval call and walks no graph, so --graph would be ignored; "
                          "drop --graph, or use --engine multihop")
    if spec.engine == "single":
        config = SingleShotConfig(**({"k": spec.k} if spec.k else {}))
        return SingleShotEngine(retriever, index.chunks, index.documents, config, clearance=cleared)
    config = spec.multihop_config()
    # bridges only: the question's own lookups stay BM25, the dependent ones take the spec's mode
    first, bridge = (index.retriever(), retriever) if spec.dense_lookups == "bridges" else (retriever, None)
    engine = MultiHopEngine(first, index.chunks, index.documents, config, on_event=on_event, clearance=cleared,
                            graph=index_graph(index, spec.graph), bridge_retriever=bridge)
    if not spec.uses_models():
        return engine
    from hoprag.pipeline import llm_roles

    settings = spec.llm_settings
    extra = llm_options or {}
    main = settings.make(spec.llm, **extra)
    planner = settings.make(spec.planner_llm, **extra) if spec.planner_llm else main
    synth = settings.make(spec.synth_llm, **extra) if spec.synth_llm else main
    judge = settings.make(spec.judge_llm, **extra) if spec.judge_llm else main
    guard = engine.llm_guard = settings.guard()
    if planner is not None:
        engine.planner = llm_roles.LLMPlanner(planner, guard=guard)
    if main is not None:
        engine.expander = llm_roles.LLMExpander(main, engine.bridges, guard=guard)
        if spec.rerank == "llm":
            engine.reranker = llm_roles.LLMReranker(main, engine.reranker, limit=config.context_k, guard=guard)
    if judge is not None:
        engine.judge = llm_roles.LLMJudge(judge, engine.judge, guard=guard)
    if synth is not None:
        engine.synthesizer = llm_roles.LLMSynthesizer(synth, engine.synthesizer, guard=guard)
    engine.refresh_config_hash()
    return engine
