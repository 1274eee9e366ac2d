"""The engine option group of ``ask``, ``run``, ``ablate`` and ``serve``: each flag defined once, one spec out.

:func:`engine_options` decorates a command that takes ``spec`` (an
:class:`~hoprag.pipeline.spec.EngineSpec`): the command gets the engine flags it names and
``--engine-config FILE`` (YAML or JSON, every setting of the spec), and receives the spec
:func:`engine_spec` makes of them. A flag typed on the command line overrides the file; a value
from the environment (``HOPRAG_LLM``, ``HOPRAG_BASE_URL``) or a flag's default applies only to what
the file leaves out. The model flags are checked as before (:mod:`hoprag.cli_llm`): a flag no
chosen backend can use is refused.

Nothing here imports pydantic or the engine layer until a command runs (the CLI starts fast).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from hoprag.cli_llm import (
    API_KEY_OPT,
    BASE_URL_OPT,
    JUDGE_OPT,
    LLM_BUDGET_OPT,
    LLM_OPT,
    LLM_RETRIES_OPT,
    LLM_TIMEOUT_OPT,
    N_CTX_OPT,
    PLANNER_OPT,
    STRICT_LLM_OPT,
    SYNTH_OPT,
)

if TYPE_CHECKING:
    from hoprag.pipeline.spec import EngineSpec

__all__ = ["ENGINE_FLAGS", "engine_options", "engine_spec"]

ENGINE_CONFIG_OPT = typer.Option(
    None, "--engine-config", metavar="FILE",
    help="YAML or JSON engine config: every engine setting, the multi-hop knobs included "
    "(hoprag.pipeline.spec.EngineSpec); flags given here override it",
)

#: every engine flag: parameter name → (annotation, option); a command takes the ones it names
ENGINE_FLAGS: dict[str, tuple[Any, Any]] = {
    "engine": (str, typer.Option("multihop", "--engine", help="single or multihop")),
    "k": (Optional[int], typer.Option(None, "--k", min=1, max=1_000, help="hits per retrieval call (default: the engine's)")),
    "mode": (str, typer.Option(
        "bm25", "--mode", help="retrieval: bm25 | dense | hybrid (dense needs `hoprag index --dense`)")),
    "fusion": (str, typer.Option(
        "rrf", "--fusion", help="hybrid fusion: rrf (reciprocal rank) | weighted (min-max scores)")),
    "dense_lookups": (str, typer.Option(
        "all", "--dense-lookups",
        help="with --mode dense/hybrid: all lookups, or bridges (dependent lookups only; first lookups BM25)")),
    "llm": (str, LLM_OPT),
    "planner_llm": (Optional[str], PLANNER_OPT),
    "synth_llm": (Optional[str], SYNTH_OPT),
    "judge_llm": (Optional[str], JUDGE_OPT),
    "base_url": (Optional[str], BASE_URL_OPT),
    "api_key": (Optional[str], API_KEY_OPT),
    "llm_timeout": (float, LLM_TIMEOUT_OPT),
    "llm_retries": (int, LLM_RETRIES_OPT),
    "n_ctx": (Optional[int], N_CTX_OPT),
    "llm_budget": (float, LLM_BUDGET_OPT),
    "strict_llm": (bool, STRICT_LLM_OPT),
    "rerank": (str, typer.Option("offline", "--rerank", help="reranker: offline (chain-aware) | llm")),
    "graph": (Optional[bool], typer.Option(
        None, "--graph/--no-graph",
        help="walk the index's entity graph between hops (personalised PageRank); default: on when the index has one",
    )),
    "engine_config": (Optional[Path], ENGINE_CONFIG_OPT),
}

# flag → the spec's field it sets (model settings live in the spec's llm_settings section)
_TOP = ("engine", "k", "mode", "fusion", "dense_lookups", "llm", "planner_llm", "synth_llm", "judge_llm", "rerank", "graph")
_SETTINGS = {"base_url": "base_url", "api_key": "api_key", "llm_timeout": "timeout", "llm_retries": "retries",
             "n_ctx": "n_ctx", "llm_budget": "budget", "strict_llm": "strict"}
_CHOICES = {"engine": ("ENGINE_NAMES", "engine"), "mode": ("MODES", "mode"), "fusion": ("FUSIONS", "fusion"),
            "dense_lookups": ("DENSE_LOOKUPS", "dense lookups"), "rerank": ("RERANKERS", "reranker")}


def _typed(ctx: Any, name: str) -> bool:
    """True when the user typed the flag (not a default, not an environment variable)."""
    if ctx is None:
        return True
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def engine_spec(ctx: Any, flags: Mapping[str, Any]) -> EngineSpec:
    """The spec ``--engine-config`` and the engine ``flags`` (parameter name → value) describe."""
    from hoprag.cli_llm import llm_settings, model_specs
    from hoprag.validation_messages import check_choice
    from hoprag.pipeline import spec as specs
    from hoprag.pipeline.spec import EngineSpec

    path = flags.get("engine_config")
    base = EngineSpec.from_file(path) if path is not None else EngineSpec()
    in_file = base.model_fields_set if path is not None else set()
    in_file_settings = base.llm_settings.model_fields_set if path is not None else set()

    def wins(name: str, field: str, file_fields: set[str]) -> bool:
        return name in flags and (_typed(ctx, name) or field not in file_fields)

    top: dict[str, Any] = dict(base)
    for name in _TOP:
        if wins(name, name, in_file):
            value = flags[name]
            if name in _CHOICES and value is not None:
                listed, what = _CHOICES[name]
                check_choice(value, getattr(specs, listed), what)
            top[name] = value
    models = {"llm": top["llm"], "planner_llm": top["planner_llm"], "synth_llm": top["synth_llm"],
              "judge_llm": top["judge_llm"]}
    if "llm" not in in_file:  # a model named only by HOPRAG_LLM is dropped for --engine single, with a note
        models = model_specs(ctx if "llm" in flags else None, top["engine"], models)
    top.update(models)
    settings = {key: getattr(base.llm_settings, field) for key, field in _SETTINGS.items()}
    settings.update({key: flags[key] for key, field in _SETTINGS.items() if wins(key, field, in_file_settings)})
    # only the model flags this command has are checked against the backends (the file's are taken as given)
    checked = _FlagSources(ctx, present=set(flags)) if ctx is not None else None
    top["llm_settings"] = llm_settings(checked, list(models.values()), **settings, base=base.llm_settings)
    return EngineSpec.parse(top, source=str(path) if path is not None else None)


class _FlagSources:
    """The command's context as :func:`hoprag.cli_llm.llm_settings` reads it, for flags the command has."""

    def __init__(self, ctx: Any, present: set[str]) -> None:
        self.ctx = ctx
        self.present = present

    def get_parameter_source(self, name: str) -> Any:
        return self.ctx.get_parameter_source(name) if name in self.present else None


def engine_options(
    only: Sequence[str] | None = None, *, options: Mapping[str, Any] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the engine flags (``only`` those named; ``--engine-config`` always) and call it
    with ``spec=`` the :class:`~hoprag.pipeline.spec.EngineSpec` they describe.

    ``options`` replaces a flag's option for this command (another default or help), never its name.
    """
    names = [n for n in ENGINE_FLAGS if only is None or n in only or n == "engine_config"]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "spec"]
        clash = [n for n in names if n in signature.parameters]
        if "spec" not in signature.parameters or clash:
            raise TypeError(f"{command.__name__}: takes spec= and none of the engine flags ({clash})")
        wants_ctx = "ctx" in signature.parameters

        @functools.wraps(command)
        def with_spec(*args: Any, **kwargs: Any) -> Any:
            ctx = kwargs.get("ctx") if wants_ctx else kwargs.pop("ctx", None)
            flags = {name: kwargs.pop(name) for name in names if name in kwargs}
            return command(*args, **kwargs, spec=engine_spec(ctx, flags))

        # every parameter of a command has a default (typer's Argument or Option) but ctx, which goes first
        context = [] if wants_ctx else [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                          annotation=typer.Context)]
        added = []
        for name in names:
            annotation, option = ENGINE_FLAGS[name]
            added.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation,
                                           default=(options or {}).get(name, option)))
        params = context + own + added
        with_spec.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        with_spec.__annotations__ = {p.name: p.annotation for p in params
                                     if p.annotation is not inspect.Parameter.empty}
        del with_spec.__wrapped__  # typer reads the signature above, not the command's own
        return with_spec

    return decorate
