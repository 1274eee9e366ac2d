"""Build an engine by name over a loaded index."""

from __future__ import annotations

from typing import Any

from hoprag.errors import ConfigError
from hoprag.pipeline.engine import Engine, MultiHopConfig, SingleShotConfig, SingleShotEngine
from hoprag.pipeline.multihop import MultiHopEngine

ENGINE_NAMES = ("single", "multihop")


def make_engine(name: str, index: Any, *, k: int | None = None, **options: Any) -> Engine:
    """``index`` is a loaded index (``.retriever()``, ``.chunks``, ``.documents``)."""
    retriever = index.retriever()
    if name == "single":
        config = SingleShotConfig(**({"k": k} if k else {}), **options)
        return SingleShotEngine(retriever, index.chunks, index.documents, config)
    if name == "multihop":
        config = MultiHopConfig(**({"k": k} if k else {}), **options)
        return MultiHopEngine(retriever, index.chunks, index.documents, config)
    raise ConfigError(f"unknown engine '{name}'; valid: {', '.join(ENGINE_NAMES)}")
