"""hoprag: build and prove multi-hop retrieval-augmented generation."""

from typing import Any

from hoprag.errors import HopragError
from hoprag.records import Answer, Chunk, Citation, Claim, Document, Evidence, Hit, HopStep, Trace, Usage

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "Chunk",
    "Citation",
    "Claim",
    "Document",
    "Evidence",
    "Hit",
    "HopStep",
    "HopragError",
    "Recorder",
    "Trace",
    "Usage",
    "__version__",
    "record",
]

#: names loaded on first use, so ``import hoprag`` stays light (a pipeline imports it to record)
_LAZY = {"record": "recorder", "Recorder": "recorder"}


def __getattr__(name: str) -> Any:
    """``hoprag.record`` and ``hoprag.Recorder`` (:mod:`hoprag.recorder`), loaded when first asked for."""
    if name in _LAZY:
        from hoprag import recorder

        return getattr(recorder, name)
    raise AttributeError(f"module 'hoprag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
