"""One typed description of an engine: :class:`EngineSpec`, and the one list of engine names, modes and fusions.

An ``EngineSpec`` says everything that decides how questions are answered: the engine kind, the
retrieval mode and fusion, hits per retrieval call, the graph hop, the model of every role and the
settings they share (:class:`~hoprag.llm.settings.LLMSettings`), the reranker, and every knob of
the multi-hop engine (:class:`~hoprag.pipeline.engine.MultiHopConfig`, the ``multihop`` section).
:func:`hoprag.pipeline.factory.make_engine` builds an engine from it; ``ask``, ``run``, ``ablate``
and ``serve`` make one from their flags and ``--engine-config FILE`` (:mod:`hoprag.cli_engine`);
Ray workers (:mod:`hoprag.pipeline.engine_recipe`), ablations and the service carry it.

The caller's clearance is not part of a spec: it belongs to who asks, not to the engine, and is
given to ``make_engine`` beside it. Nor is an API key written to a file: :meth:`EngineSpec.to_dict`
leaves it out and :meth:`EngineSpec.from_file` refuses one.

A spec equal to the defaults builds exactly the engine of ``make_engine(name, index)``, so the
config hash its traces carry is the one they carried before specs existed (the hash is computed
from the built engine's config and roles, :func:`hoprag.pipeline.engine.config_hash`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from hoprag.errors import InputError
from hoprag.index.hybrid import FUSIONS
from hoprag.index.store import MODES
from hoprag.llm.settings import LLMSettings
from hoprag.pipeline.engine import MultiHopConfig

__all__ = ["DENSE_LOOKUPS", "ENGINE_NAMES", "FUSIONS", "MODES", "RERANKERS", "EngineSpec", "MULTIHOP_KNOBS"]

#: the engines :func:`~hoprag.pipeline.factory.make_engine` builds
ENGINE_NAMES: tuple[str, ...] = ("single", "multihop")
# MODES (retrieval modes; dense and hybrid need an index built with --dense) and FUSIONS (how hybrid
# fuses its two ranked lists) are the index's own words, defined where the retrievers are and re-exported
# here; the Literal types of EngineSpec below spell them again (a test keeps them equal)
#: which lookups of the multi-hop engine use a dense or hybrid mode
DENSE_LOOKUPS: tuple[str, ...] = ("all", "bridges")
#: rerankers of the multi-hop engine
RERANKERS: tuple[str, ...] = ("offline", "llm")
#: the multi-hop engine's knobs a spec sets in its ``multihop`` section (``k`` is the spec's own)
MULTIHOP_KNOBS: tuple[str, ...] = tuple(name for name in MultiHopConfig.model_fields if name != "k")

_FILE_FIX = "correct the engine config file (its settings: hoprag.pipeline.spec.EngineSpec, README 'Engine configuration')"
_FIXES = {
    "multihop": "give k at the top level of the spec, and the multihop section only with engine: multihop",
    "llm_settings.api_key": "pass --api-key or set HOPRAG_API_KEY; a key is never kept in an engine config file",
}


class EngineSpec(BaseModel):
    """Everything that decides how an engine answers, but the caller's clearance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["single", "multihop"] = Field(default="multihop", description="single or multihop")
    mode: Literal["bm25", "dense", "hybrid"] = Field(default="bm25", description="retrieval mode")
    fusion: Literal["rrf", "weighted"] = Field(default="rrf", description="how hybrid fuses its two lists")
    dense_lookups: Literal["all", "bridges"] = Field(
        default="all",
        description="with mode dense or hybrid, which lookups use it: all, or bridges (the dependent lookups; "
        "the question's first lookups stay BM25)",
    )
    k: int | None = Field(default=None, ge=1, le=1_000, description="hits per retrieval call (None: the engine's)")
    graph: bool | None = Field(
        default=None, description="the graph hop: on, off, or None (on when the index has an entity graph)"
    )
    rerank: Literal["offline", "llm"] = Field(default="offline", description="reranker: offline (chain-aware) | llm")
    llm: str = Field(default="offline", description="backend for every role: offline | openai:MODEL | llamacpp:PATH.gguf")
    planner_llm: str | None = Field(default=None, description="backend for planning (None: llm)")
    synth_llm: str | None = Field(default=None, description="backend for synthesis (None: llm)")
    judge_llm: str | None = Field(default=None, description="backend for the sufficiency judge (None: llm)")
    llm_settings: LLMSettings = Field(default_factory=LLMSettings, description="what every backend shares")
    multihop: MultiHopConfig = Field(default_factory=MultiHopConfig, description="the multi-hop engine's knobs")

    @field_validator("multihop", mode="before")
    @classmethod
    def _k_is_top_level(cls, value: Any) -> Any:
        if isinstance(value, Mapping) and "k" in value:
            raise ValueError("holds k, which is set at the top level of the spec (hits per retrieval call of either engine)")
        return value

    @field_validator("multihop")
    @classmethod
    def _knobs_need_multihop(cls, value: MultiHopConfig, info: ValidationInfo) -> MultiHopConfig:
        changed = _changed(value)
        if info.data.get("engine") == "single" and changed:
            raise ValueError(f"sets {', '.join(changed)}, which the single engine would ignore (it makes one retrieval call)")
        return value

    @field_validator("dense_lookups")
    @classmethod
    def _bridges_need_dense_multihop(cls, value: str, info: ValidationInfo) -> str:
        if value == "bridges" and info.data.get("mode") == "bm25":
            raise ValueError("is bridges, which needs mode dense or hybrid (with mode bm25 every lookup is BM25)")
        if value == "bridges" and info.data.get("engine") == "single":
            raise ValueError("is bridges, which the single engine would ignore (it makes no dependent lookup)")
        return value

    # -- what the engine is built with -------------------------------------------------------------

    def changed_knobs(self) -> tuple[str, ...]:
        """The multi-hop knobs that differ from their defaults."""
        return _changed(self.multihop)

    def multihop_config(self) -> MultiHopConfig:
        """The multi-hop engine's config: the section's knobs with the spec's ``k``."""
        return self.multihop.model_copy(update={"k": self.k}) if self.k else self.multihop

    def uses_models(self) -> bool:
        """Whether any role is played by a model (not ``offline``)."""
        from hoprag.llm.settings import backend_kind

        return any(backend_kind(s) != "offline" for s in (self.llm, self.planner_llm, self.synth_llm, self.judge_llm))

    def synth_model(self) -> str:
        """The backend that writes the answer: ``synth_llm``, else ``llm``."""
        return self.synth_llm or self.llm

    def replace(self, **changes: Any) -> EngineSpec:
        """A copy with ``changes`` (top-level fields), validated as a whole."""
        return EngineSpec.parse({**dict(self), **changes})

    # -- reading and writing -----------------------------------------------------------------------

    @classmethod
    def parse(cls, data: Any, *, source: str | None = None) -> EngineSpec:
        """A spec from a mapping; a problem is an :class:`~hoprag.errors.InputError` in the house words."""
        from pydantic import ValidationError

        from hoprag.validation_messages import validation_error

        if not isinstance(data, Mapping):
            raise InputError("an engine config is a mapping of settings (engine: multihop, mode: bm25, …)",
                             source=source, fix=_FILE_FIX)
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            # the section's own fix is for what the spec says of the section as a whole, not for a knob in it
            whole = any(tuple(e.get("loc", ())) == ("multihop",) for e in exc.errors(include_url=False))
            fixes = _FIXES if whole else {f: fix for f, fix in _FIXES.items() if f != "multihop"}
            raise validation_error(exc, what="engine config", source=source, fixes=fixes, fix=_FILE_FIX) from None

    @classmethod
    def from_options(cls, name: str = "multihop", **options: Any) -> EngineSpec:
        """A spec from flat keywords: top-level fields by name, multi-hop knobs by theirs (``max_hops=2``),
        ``llm_settings`` as an :class:`LLMSettings`; ``None`` means the default."""
        top: dict[str, Any] = {"engine": name}
        knobs: dict[str, Any] = {}
        for key, value in options.items():
            if value is not None:
                (knobs if key in MULTIHOP_KNOBS else top)[key] = value
        return cls.parse({**top, "multihop": knobs} if knobs else top)

    def to_dict(self) -> dict[str, Any]:
        """Every setting as plain JSON values; the API key is left out (it is never written down)."""
        data = self.model_dump(mode="json")
        data["llm_settings"].pop("api_key", None)
        data["multihop"].pop("k", None)  # the spec's own k is the one that counts
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    @classmethod
    def from_file(cls, path: str | Path) -> EngineSpec:
        """The spec in a YAML (``.yaml``/``.yml``) or JSON (``.json``) file; settings it leaves out keep their defaults."""
        path = Path(path)
        source = str(path)
        suffix = path.suffix.lower()
        if suffix == ".json":
            from hoprag.files import read_text
            from hoprag.jsonl import parse_json

            data = parse_json(read_text(path, "engine config"), source=source, fix=_FILE_FIX, what="the engine config")
        elif suffix in (".yaml", ".yml"):
            from hoprag.yaml_input import read_yaml

            data = read_yaml(path, what="engine config", fix=_FILE_FIX)
            data = {} if data is None else data
        else:
            raise InputError(f"an engine config is a .yaml, .yml or .json file, not '{path.suffix or path.name}'",
                             source=source, fix="rename the file to end in .yaml or .json as its content is")
        settings = data.get("llm_settings") if isinstance(data, Mapping) else None
        if isinstance(settings, Mapping) and settings.get("api_key"):
            raise InputError("an engine config file holds an API key (llm_settings.api_key)", source=source,
                             field="llm_settings.api_key", fix=_FIXES["llm_settings.api_key"])
        return cls.parse(data, source=source)


def _changed(config: MultiHopConfig) -> tuple[str, ...]:
    default = MultiHopConfig()
    return tuple(n for n in MULTIHOP_KNOBS if getattr(config, n) != getattr(default, n))
