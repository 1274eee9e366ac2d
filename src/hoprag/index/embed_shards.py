"""Embed a corpus in shards on an executor (:mod:`hoprag.executors`), byte-identical to one process.

The corpus is cut into consecutive shards whose sizes are whole multiples of the embedding batch
(``EMBED_BATCH`` texts), and each shard is embedded batch by batch exactly as
:func:`~hoprag.index.embedders.embed_in_batches` does in one process: every batch holds the same
texts in the same order, so every vector comes out with the same bytes. Shards travel to the
workers as their texts (through Ray's object store on a cluster); each worker loads the embedder
once and the vectors come back in corpus order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from hoprag.index.embedders import Embedder, embed_in_batches, make_embedder

if TYPE_CHECKING:
    from hoprag.executors import Executor

__all__ = ["EMBED_BATCH", "embed_corpus", "shard_bounds"]

#: texts per embedder call, the same for the one-process path and every shard
EMBED_BATCH = 256
#: shards per worker: a few, so a slow shard does not leave the other workers idle at the end
SHARDS_PER_WORKER = 4

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class _LoadEmbedder:
    """A worker's setup: the named embedder, loaded once per worker."""

    name: str

    def __call__(self) -> Embedder:
        return make_embedder(self.name)


def _embed_shard(embedder: Embedder, texts: Sequence[str], *, batch: int) -> np.ndarray:
    return embed_in_batches(embedder, texts, batch_size=batch)


def shard_bounds(total: int, shards: int, *, batch: int = EMBED_BATCH) -> list[tuple[int, int]]:
    """``(start, end)`` of about ``shards`` consecutive shards of ``total`` texts, each a whole
    number of batches (the last may be shorter)."""
    batches = -(-total // batch)
    per_shard = max(1, -(-batches // max(1, shards)))
    step = per_shard * batch
    return [(start, min(start + step, total)) for start in range(0, total, step)]


def embed_corpus(
    embedder_name: str,
    texts: Sequence[str],
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
    batch: int = EMBED_BATCH,
) -> tuple[np.ndarray, Embedder]:
    """The ``(len(texts), dim)`` float32 vectors of ``texts`` and the embedder (loaded here, for
    the manifest's model info). Without an executor, or a local one with one worker, this is
    :func:`embed_in_batches` in this process; ``batch`` texts go to each embedder call either way."""
    embedder = make_embedder(embedder_name)
    workers = getattr(executor, "workers", 1)
    if executor is None or (executor.name == "local" and (workers or 1) == 1):
        return embed_in_batches(embedder, texts, batch_size=batch, progress=progress), embedder
    total = len(texts)
    if progress:
        progress("embed", 0, total)
    bounds = shard_bounds(total, SHARDS_PER_WORKER * (workers or 8), batch=batch)
    shards = [list(texts[start:end]) for start, end in bounds]
    parts = []
    work = partial(_embed_shard, batch=batch)
    for (_, end), vectors in zip(bounds, executor.map(work, shards, setup=_LoadEmbedder(embedder_name))):
        parts.append(np.asarray(vectors, dtype=np.float32))
        if progress:
            progress("embed", end, total)
    if not parts:
        return np.zeros((0, embedder.dim), dtype=np.float32), embedder
    return np.vstack(parts), embedder
