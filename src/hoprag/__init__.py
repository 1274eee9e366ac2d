"""hoprag: build and prove multi-hop retrieval-augmented generation."""

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
    "Trace",
    "Usage",
    "__version__",
]
