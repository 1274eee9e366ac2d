"""Built-in checks, one module per stage; :func:`register_builtin` imports them all, and importing a
module registers its checks as hooks of its stage.

The package itself imports nothing, so a command that needs one check module does not pay for
every stage's imports (the feedback check reads the run store's records, which loads SQLAlchemy).
"""

from __future__ import annotations

import importlib

BUILTIN = ("chunks", "data", "embeddings", "feedback", "generation", "indexing", "retrieval")


def register_builtin() -> None:
    """Import every built-in check module (each registers its hooks once, on first import)."""
    for name in BUILTIN:
        importlib.import_module(f"{__name__}.{name}")
