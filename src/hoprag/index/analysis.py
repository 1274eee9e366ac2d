"""What a build keeps of its analysis of every chunk, so an update re-analyses only what changed.

BM25 scores and the entity graph depend on corpus-wide statistics (N, avgdl, document frequencies,
the graph's common-entity cap), so adding one document changes every score. What they are computed
from does not change for an unchanged chunk: its term frequencies and length, and the entity
mentions found in it. An index directory keeps those in ``analysis/``, and
:mod:`hoprag.index.update` recomputes the arrays from them, tokenising and scanning only the new
chunks (the regex scan and the tokenising are most of a build's time)::

    analysis/tf.npy               uint16 (uint32 if needed): the term frequency of each stored BM25
                                  score, in the score matrix's own (CSC) order
    analysis/lengths.npy          int32 per chunk: its token count (BM25's |d|)
    analysis/mentions.json        [key, kind, words] per entity mention the chunks hold
    analysis/mention_stream.npy   int32: each chunk's mentions (ids into mentions.json; -1: a span
                                  naming nothing), chunk after chunk
    analysis/mention_ends.npy     int64 per chunk: where its run in the stream ends
    analysis/common_entities.json [key, chunks] per entity the graph leaves out as common (held by
                                  more chunks than its cap), in key order: with the graph's own
                                  entities.json, every key's chunk count, so an update recounts
                                  only the keys its chunks touch (:mod:`hoprag.index.graph_update`)

The graph files exist only for an index with an entity graph. An index built before this directory
existed is updated by a rebuild from its stored documents (the same result, at a build's cost).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ANALYSIS_DIR", "COMMON", "MENTIONS", "MENTION_ENDS", "MENTION_STREAM", "has_bm25_state",
           "load_bm25_state", "save_bm25_state", "save_common"]

ANALYSIS_DIR = "analysis"
TF = "tf.npy"
LENGTHS = "lengths.npy"
MENTIONS = "mentions.json"
MENTION_STREAM = "mention_stream.npy"
MENTION_ENDS = "mention_ends.npy"
COMMON = "common_entities.json"


def save_bm25_state(index_dir: Path, tf_csc: np.ndarray, lengths: np.ndarray) -> None:
    directory = index_dir / ANALYSIS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / TF, tf_csc, allow_pickle=False)
    np.save(directory / LENGTHS, lengths.astype(np.int32), allow_pickle=False)


def save_common(directory: Path, rows: list[list[Any]]) -> None:
    """The common entities' ``[key, chunks]`` rows (``analysis/common_entities.json``)."""
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    (directory / COMMON).write_text(text, encoding="utf-8")


def has_bm25_state(index_dir: Path) -> bool:
    return (index_dir / ANALYSIS_DIR / TF).is_file() and (index_dir / ANALYSIS_DIR / LENGTHS).is_file()


def load_bm25_state(index_dir: Path, *, entries: int, chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """``(tf_csc, lengths)`` (lengths as int64, as the build computed them); ``ValueError`` if they do not
    fit a matrix of ``entries`` scores over ``chunks`` chunks."""
    directory = index_dir / ANALYSIS_DIR
    tf = np.load(directory / TF, mmap_mode="r", allow_pickle=False)
    lengths = np.load(directory / LENGTHS, allow_pickle=False).astype(np.int64)
    if tf.shape != (entries,) or lengths.shape != (chunks,) or tf.dtype.kind != "u":
        raise ValueError(f"{ANALYSIS_DIR}/ does not fit the score matrix ({entries} scores, {chunks} chunks)")
    return tf, lengths
