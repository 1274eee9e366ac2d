"""The BM25 score matrix after an update, equal to a build of the updated corpus, without re-tokenising it.

An update keeps some chunks (in their order) and appends new ones. A build of that corpus would
number terms by first occurrence, count document frequencies, and score every (chunk, term) entry
from N, avgdl and df — all three change with any delta. What does not change is each kept entry's
term frequency and each kept chunk's length (:mod:`hoprag.index.analysis` keeps both). So
:func:`updated_matrix`

1. drops the removed chunks' entries and renumbers the kept rows (rows only move down: each column
   stays ascending), and appends the new chunks' entries (tokenised by a builder seeded with the
   index's vocabulary) after them in every column — no sort of the whole matrix;
2. numbers the surviving terms as a build would: by the chunk a term first occurs in, then by where it
   first occurs there. For a chunk that was already where its terms first occurred, their old ids
   are in that order; a chunk that became the first one for a term whose earlier chunks were removed
   is tokenised again to find the order (only such chunks); a new chunk's order comes from its
   tokenising;
3. scores every entry with :func:`hoprag.index.bm25_build.score_entries`, the build's own arithmetic,
   with bm25s's scoring functions read from its ``scoring`` module alone (:func:`bm25s_scoring`):
   importing bm25s itself pulls in scipy, half a second of a small update.

The result is the build's arrays value for value (tests compare them after random update sequences).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from hoprag.errors import EmptyCorpusError
from hoprag.index.bm25_arrays import BM25Arrays, sorted_unique
from hoprag.index.bm25_build import BM25Builder, assemble, narrow_tf, score_entries
from hoprag.index.tokenize import Tokenizer

__all__ = ["bm25s_scoring", "updated_matrix"]

#: bm25s's ``BM25.methods_requiring_nonoccurrence``
_NONOCCURRENCE = ("bm25l", "bm25+")


def bm25s_scoring(scored: Mapping[str, Any], bm25: Mapping[str, Any]) -> tuple[Any, Any, str] | None:
    """What :func:`~hoprag.index.bm25_build.score_entries` takes from bm25s — its ``scoring`` module,
    the model's fields, its version — without importing the package (and scipy with it), when the
    index was ``scored`` (its saved parameters) by the bm25s installed now, with the numpy backend and
    the parameters ``bm25``; else ``None`` (bm25s is imported: a build of today records its own)."""
    from importlib.metadata import PackageNotFoundError, version

    spec = importlib.util.find_spec("bm25s")
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("numba") is not None:
        return None
    try:
        installed = version("bm25s")
    except PackageNotFoundError:
        return None
    same = {key: scored.get(key) for key in ("k1", "b", "delta", "method")} == {
        key: bm25.get(key) for key in ("k1", "b", "delta", "method")}
    if not same or scored.get("version") != installed or scored.get("backend") != "numpy" \
            or scored.get("idf_method") != bm25.get("method"):
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "scoring.py"
    loader_spec = importlib.util.spec_from_file_location("hoprag._bm25s_scoring", path)
    if loader_spec is None or loader_spec.loader is None:
        return None
    module = importlib.util.module_from_spec(loader_spec)
    before = os.environ.get("DISABLE_TQDM")
    os.environ["DISABLE_TQDM"] = "1"  # the module would import tqdm (0.1 s) for progress bars these functions lack
    try:
        loader_spec.loader.exec_module(module)
    finally:
        if before is None:
            del os.environ["DISABLE_TQDM"]
        else:
            os.environ["DISABLE_TQDM"] = before
    model = SimpleNamespace(k1=scored["k1"], b=scored["b"], delta=scored["delta"], method=scored["method"],
                            idf_method=scored["idf_method"], dtype=scored["dtype"], int_dtype=scored["int_dtype"],
                            backend="numpy", methods_requiring_nonoccurrence=_NONOCCURRENCE)
    return module, model, installed


def _starts(counts: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums: where each run of ``counts`` starts."""
    out = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without a Python loop."""
    counts = counts.astype(np.int64)
    total = int(counts.sum())
    kind = np.int32 if total + int(starts.max(initial=0)) < np.iinfo(np.int32).max else np.int64  # half the bytes
    return np.repeat((starts.astype(np.int64) - _starts(counts)).astype(kind), counts) + np.arange(total, dtype=kind)


def updated_matrix(
    old: BM25Arrays,
    tf: np.ndarray,
    lengths: np.ndarray,
    keep: np.ndarray,
    fresh: BM25Builder,
    *,
    bm25: dict[str, Any],
    tokenizer: Tokenizer,
    texts_at: Callable[[Sequence[int]], list[str]],
) -> tuple[BM25Arrays, np.ndarray, np.ndarray]:
    """The matrix of the kept chunks (``keep``: a mask over the old ones) followed by the chunks added to
    ``fresh`` (seeded with ``old``'s vocabulary, tokenised with ``ordered=True``), and its analysis
    (``tf`` in CSC order, ``lengths``). ``texts_at(old positions)`` gives what BM25 saw of old chunks."""
    indptr, indices = old.scores["indptr"], old.scores["indices"]
    n_old_terms = len(old.vocab_dict) - 1  # without bm25s's "" column, always the last and empty
    nnz = int(indptr[n_old_terms])
    new_row = np.cumsum(keep, dtype=np.int32) - 1  # rows as the matrix stores them (int32)
    n_kept = int(new_row[-1]) + 1 if keep.size else 0

    # 1. kept entries, column by column as stored; their rows renumbered
    if keep.all():  # only additions: the stored entries as they are (no pass over a mask of every entry)
        kept_count = np.diff(indptr[: n_old_terms + 1]).astype(np.int64)
        k_rows = np.asarray(indices[:nnz], dtype=np.int32)
        k_tf = np.asarray(tf[:nnz])
    else:
        entry_keep = keep[indices[:nnz]]
        at = np.zeros(nnz + 1, dtype=np.int32 if nnz < np.iinfo(np.int32).max else np.int64)
        np.cumsum(entry_keep, out=at[1:])
        kept_count = (at[indptr[1 : n_old_terms + 1]] - at[indptr[:n_old_terms]]).astype(np.int64)
        k_rows = new_row[indices[:nnz][entry_keep]]
        k_tf = np.asarray(tf[:nnz])[entry_keep]
    # new entries, sorted by column (rows ascend within each: they were sorted by row, then term)
    f_rows, f_cols, f_tf, f_len, f_first = fresh.entries()
    stems = fresh.stems()
    n_terms = len(stems)
    by_col = np.argsort(f_cols, kind="stable")
    f_rows, f_cols, f_tf, f_first = (f_rows[by_col] + n_kept).astype(np.int32), f_cols[by_col], f_tf[by_col], f_first[by_col]
    fresh_count = np.bincount(f_cols, minlength=n_terms).astype(np.int64)
    kept_all = np.zeros(n_terms, dtype=np.int64)
    kept_all[:n_old_terms] = kept_count
    count = kept_all + fresh_count
    alive = np.flatnonzero(count > 0)
    if alive.size == 0:
        raise EmptyCorpusError(
            "after the update the corpus has no indexable words", fix="keep or add documents with real text"
        )

    # 2. number the surviving terms as a build of the updated corpus would
    k_start, f_start = _starts(kept_all), _starts(fresh_count)
    has_kept = kept_all[alive] > 0
    first_row = np.empty(alive.size, dtype=np.int64)
    first_row[has_kept] = k_rows[k_start[alive[has_kept]]]
    first_row[~has_kept] = f_rows[f_start[alive[~has_kept]]]
    order_key = np.empty(alive.size, dtype=np.int64)
    order_key[~has_kept] = f_first[f_start[alive[~has_kept]]]  # a new chunk: where the term first occurs in it
    old_terms = alive[has_kept]
    old_first = indices[indptr[old_terms]].astype(np.int64)  # every old term's column has an entry
    moved = ~keep[old_first] | (new_row[old_first] != first_row[has_kept])
    order_key[np.flatnonzero(has_kept)[~moved]] = old_terms[~moved]  # old ids: the old build's order there
    retokenise = sorted_unique(first_row[has_kept][moved])
    if retokenise.size:
        old_position = np.flatnonzero(keep)[retokenise]
        positions = _first_positions(texts_at(old_position.tolist()), tokenizer, stems)
        in_group = np.isin(first_row, retokenise) & has_kept
        for i in np.flatnonzero(in_group).tolist():
            order_key[i] = positions[int(np.searchsorted(retokenise, first_row[i]))][int(alive[i])]
    ranked = alive[np.lexsort((order_key, first_row))]

    # 3. the columns in their new order, kept entries then new ones in each, every entry scored afresh
    df = count[ranked]
    narrow = k_tf.dtype == np.uint16 and (not f_tf.size or int(f_tf.max()) <= np.iinfo(np.uint16).max)
    if narrow and ranked.size > 1 and bool(np.all(ranked[1:] > ranked[:-1])):
        # the columns keep their order (as after additions): each new entry goes in after its column's
        # kept ones, one insertion pass instead of gathering every entry
        at_end = (k_start + kept_all)[f_cols]
        rows = np.insert(k_rows, at_end, f_rows)
        tfs = np.insert(k_tf, at_end, f_tf.astype(np.uint16))  # narrow_tf's dtype, as a build's
    else:
        segments = np.stack([k_start[ranked], k_rows.size + f_start[ranked]], axis=1).ravel()
        sizes = np.stack([kept_all[ranked], fresh_count[ranked]], axis=1).ravel()
        take = _ranges(segments, sizes)
        rows = np.concatenate([k_rows, f_rows])[take]
        tfs = narrow_tf(np.concatenate([k_tf.astype(np.uint32), f_tf.astype(np.uint32)])[take])
    cols = np.repeat(np.arange(ranked.size, dtype=np.int32), df)
    all_lengths = np.concatenate([np.asarray(lengths, dtype=np.int64)[keep], f_len.astype(np.int64)])
    n_docs = n_kept + int(f_len.size)
    data, nonoccurrence, params = score_entries(rows, cols, tfs, all_lengths, df, n_docs, bm25,
                                                bm25s_api=bm25s_scoring(old.params, bm25))
    vocab = {stems[t]: j for j, t in enumerate(ranked.tolist())}
    arrays = assemble(data, rows.astype(np.int32, copy=False), df, n_docs, vocab, params, nonoccurrence)
    return arrays, tfs, all_lengths


def _first_positions(texts: list[str], tokenizer: Tokenizer, stems: list[str]) -> list[dict[int, int]]:
    """For each text, term id -> the token position where the term first occurs (the build's order)."""
    ids = {stem: i for i, stem in enumerate(stems)}
    found = []
    for text in texts:
        positions: dict[int, int] = {}
        for at, stem in enumerate(tokenizer.query(text)):
            tid = ids.get(stem)
            if tid is not None and tid not in positions:
                positions[tid] = at
        found.append(positions)
    return found
