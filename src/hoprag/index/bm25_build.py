"""Build the bm25s score matrix from chunk texts fed in batches, without holding the corpus.

``bm25s.tokenize`` + ``BM25.index`` want every text, then every document's token list, in memory
at once (Python lists of ints: the bulk of a million-passage build's peak). :class:`BM25Builder`
tokenises each batch as it comes (the same tokens as :class:`~hoprag.index.tokenize.Tokenizer`:
accents folded if it folds them, lowercase, ``TOKEN_PATTERN``, stopwords dropped before stemming),
keeps only each batch's ``(chunk, term, tf)`` triples as numpy arrays, and computes the scores with
bm25s's own idf and tf functions, so the matrix, the document frequencies and every score equal
what bm25s builds from the same tokens (the tests compare them value for value).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hoprag.errors import EmptyCorpusError
from hoprag.index.bm25_arrays import BM25Arrays, sorted_unique
from hoprag.index.tokenize import TOKEN_PATTERN, Tokenizer

__all__ = ["WORD_RUNS", "BM25Builder", "assemble", "narrow_tf", "score_entries"]

#: the words ``TOKEN_PATTERN`` finds: under ``findall`` a greedy run of two or more word characters can
#: start only where a run starts (a one-letter run fails at its start, and the next character is not
#: a word character), so its ``\b`` checks never reject anything; without them the scan is 25 % faster
WORD_RUNS = r"\w\w+"
_SLICE = 1 << 18  # (chunk, term) pairs scored at a time: caps the float64 temporaries (2 MB each)
_TABLE_MAX = 1 << 20  # (tf, length) pairs the tf component table may hold (8 MB)


class _Vocabulary(dict):  # type: ignore[type-arg]
    """word -> term id (stemmed); stopwords map to -1. A new word is stemmed once, when first seen."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        super().__init__((w, -1) for w in tokenizer.stopwords)
        self.terms: dict[str, int] = {}
        stemmer = tokenizer._stemmer
        self._stem = stemmer.stemWord if stemmer is not None else None

    def __missing__(self, word: str) -> int:
        term = self._stem(word) if self._stem is not None else word
        tid = self.terms.setdefault(term, len(self.terms))
        self[word] = tid
        return tid


class BM25Builder:
    """Feed chunk texts with :meth:`add` (in corpus order), then :meth:`finish` for the model."""

    def __init__(self, tokenizer: Tokenizer, *, method: str, k1: float, b: float, delta: float) -> None:
        self.method, self.k1, self.b, self.delta = method, k1, b, delta
        self._vocab = _Vocabulary(tokenizer)
        self._split = re.compile(WORD_RUNS).findall
        self._fold = tokenizer.fold
        # per batch, entries sorted by chunk then term: each entry's term id (int32), each chunk's
        # number of entries, each entry's tf (uint16 where it fits): 6 bytes an entry, not 12 as int64 keys
        self._cols: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []
        self._tfs: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []
        self._firsts: list[np.ndarray] = []  # with add(ordered=True): where each entry's term first occurs
        self.count = 0

    def seed(self, terms: dict[str, int]) -> None:
        """Start from an index's vocabulary (stem -> id, ids 0..n-1): known stems keep their ids, a new
        one gets the next. An update tokenises only its new chunks this way."""
        self._vocab.terms.update(terms)

    def add(self, texts: Sequence[str], *, ordered: bool = False) -> None:
        """Tokenise one batch of chunk texts (what BM25 sees: title, newline, text). ``ordered`` also
        keeps where in its chunk each term first occurs (:meth:`entries`; an update needs it to number
        terms as a build of its corpus would)."""
        lookup = self._vocab.__getitem__
        split, fold = self._split, self._fold
        flat: list[int] = []
        lengths = np.empty(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            ids = [t for t in map(lookup, split(fold(text).lower())) if t >= 0]
            lengths[i] = len(ids)
            flat.extend(ids)
        terms = np.asarray(flat, dtype=np.int64)
        chunks = np.repeat(np.arange(self.count, self.count + len(texts), dtype=np.int64), lengths)
        if ordered:
            keys, first, tfs = np.unique((chunks << 32) | terms, return_index=True, return_counts=True)
            self._firsts.append(first - np.repeat(np.cumsum(lengths) - lengths, lengths)[first])
        else:
            keys, tfs = np.unique((chunks << 32) | terms, return_counts=True)
        self._cols.append((keys & 0xFFFFFFFF).astype(np.int32))
        self._counts.append(np.bincount((keys >> 32) - self.count, minlength=len(texts)).astype(np.int32))
        self._tfs.append(narrow_tf(tfs))
        self._lengths.append(lengths)
        self.count += len(texts)

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, cols, tfs, lengths, firsts)`` of every chunk added with ``ordered=True``: the
        (chunk, term) entries sorted by chunk then term id, and each term's first token position in its chunk."""
        cols = np.concatenate(self._cols).astype(np.int64) if self._cols else np.zeros(0, dtype=np.int64)
        counts = np.concatenate(self._counts) if self._counts else np.zeros(0, dtype=np.int32)
        rows = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64)
        firsts = np.concatenate(self._firsts) if self._firsts else np.zeros(0, dtype=np.int64)
        tfs = np.concatenate(self._tfs).astype(np.uint32) if self._tfs else np.zeros(0, dtype=np.uint32)
        return rows, cols, tfs, lengths, firsts

    def stems(self) -> list[str]:
        """Every stem by term id."""
        return list(self._vocab.terms)

    def finish(self) -> BM25Arrays:
        """The score matrix (CSC, as bm25s stores it) and vocabulary over every chunk added.

        Also keeps, for an update without re-tokenising (:mod:`hoprag.index.bm25_delta`), each stored
        score's term frequency in the same CSC order (``tf_csc``) and every chunk's length (``lengths``)."""
        vocab = self._vocab.terms
        if not vocab:
            raise EmptyCorpusError(
                "the corpus has no indexable words (only stopwords, punctuation or one-letter tokens)",
                fix="index documents with real text",
            )
        import scipy.sparse  # bm25s imports it for scoring anyway

        cols = np.concatenate(self._cols)
        self._cols.clear()
        tfs = narrow_tf(np.concatenate(self._tfs))  # uint16 unless a batch needed uint32
        self._tfs.clear()
        row_ends = np.zeros(self.count + 1, dtype=np.int64 if cols.size >= 2**31 else np.int32)
        np.cumsum(np.concatenate(self._counts), out=row_ends[1:])
        self._counts.clear()
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64)
        n_vocab = len(vocab)
        df = np.bincount(cols, minlength=n_vocab)
        # CSR (chunk rows) to CSC (term columns) by scipy's counting sort: rows ascend within a column,
        # as bm25s stores them, without an int64 permutation of every entry
        csc = scipy.sparse.csr_matrix((tfs, cols, row_ends), shape=(self.count, n_vocab), copy=False).tocsc()
        del cols, tfs, row_ends
        self.tf_csc, indices = csc.data, csc.indices.astype(np.int32, copy=False)
        del csc
        # scored in CSC order: each score depends only on its entry and the corpus statistics
        columns = np.repeat(np.arange(n_vocab, dtype=np.int32), df)
        data, nonoccurrence, params = score_entries(indices, columns, self.tf_csc, lengths, df, self.count, self.params)
        del columns
        self.lengths = lengths
        return assemble(data, indices, df, self.count, dict(vocab), params, nonoccurrence)

    @property
    def params(self) -> dict[str, Any]:
        return {"method": self.method, "k1": self.k1, "b": self.b, "delta": self.delta}


def narrow_tf(tfs: np.ndarray) -> np.ndarray:
    """Term frequencies as uint16 when they fit (a chunk of a few thousand characters always does)."""
    return tfs.astype(np.uint16) if not tfs.size or int(tfs.max()) <= np.iinfo(np.uint16).max else tfs.astype(np.uint32)


def score_entries(
    rows: np.ndarray, cols: np.ndarray, tfs: np.ndarray, lengths: np.ndarray, df: np.ndarray, n_docs: int,
    bm25: dict[str, Any],
    *,
    bm25s_api: tuple[Any, Any, str] | None = None,
) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any]]:
    """The BM25 score of every (chunk ``rows[i]``, term ``cols[i]``) entry with frequency ``tfs[i]``,
    given every chunk's length and every term's document frequency ``df``: the scores (in the order
    given), the non-occurrence array (``bm25l``/``bm25+``) and bm25s's parameter record.

    The one place scores are computed, for a build and for an update alike: each score depends only
    on its entry and the corpus statistics (N, avgdl, df), so equal statistics give equal floats.
    ``bm25s_api``: (bm25s's scoring module, a record of a ``bm25s.BM25`` model's fields, bm25s's
    version) from a caller that has them without importing bm25s and scipy (an update,
    :func:`hoprag.index.bm25_delta.bm25s_scoring`); by default bm25s is imported."""
    k1, b, delta = bm25["k1"], bm25["b"], bm25["delta"]
    if bm25s_api is None:
        import bm25s  # build time only: its scoring functions define the scores

        bm25s_api = bm25s.scoring, bm25s.BM25(method=bm25["method"], k1=k1, b=b, delta=delta), bm25s.__version__
    scoring, model, version = bm25s_api
    _build_nonoccurrence_array = scoring._build_nonoccurrence_array
    _select_idf_scorer, _select_tfc_scorer = scoring._select_idf_scorer, scoring._select_tfc_scorer
    avg_doc_len = lengths.mean()
    idf = _idf_by_value(df, n_docs, _select_idf_scorer(model.idf_method), model.dtype)
    nonoccurrence = None
    if model.method in model.methods_requiring_nonoccurrence:
        nonoccurrence = _build_nonoccurrence_array(
            doc_frequencies=dict(enumerate(df.tolist())), n_docs=n_docs, compute_idf_fn=_select_idf_scorer(model.idf_method),
            calculate_tfc_fn=_select_tfc_scorer(model.method), l_d=avg_doc_len, l_avg=avg_doc_len,
            k1=k1, b=b, delta=delta, dtype=model.dtype,
        )
    tfc = _select_tfc_scorer(model.method)
    data = np.empty(rows.size, dtype=model.dtype)
    scored = _scored_by_table(tfs, lengths, data, rows, cols, idf, nonoccurrence,
                              lambda tf, length: tfc(tf_array=tf, l_d=length, l_avg=avg_doc_len, k1=k1, b=b, delta=delta))
    for lo in range(0, 0 if scored else rows.size, _SLICE):
        r, c = rows[lo : lo + _SLICE], cols[lo : lo + _SLICE]
        # bm25s scores document by document with a scalar length; the same float64 arithmetic
        # element-wise gives the same float32 scores
        part = idf[c] * tfc(tf_array=tfs[lo : lo + _SLICE].astype(np.float32), l_d=lengths[r], l_avg=avg_doc_len,
                            k1=k1, b=b, delta=delta)
        if nonoccurrence is not None:
            part = part - nonoccurrence[c]
        data[lo : lo + _SLICE] = part
    params = {"k1": model.k1, "b": model.b, "delta": model.delta, "method": model.method,
              "idf_method": model.idf_method, "dtype": model.dtype, "int_dtype": model.int_dtype,
              "version": version, "backend": model.backend}
    return data, nonoccurrence, params


def _idf_by_value(df: np.ndarray, n_docs: int, compute_idf: Any, dtype: Any) -> np.ndarray:
    """bm25s's ``_build_idf_array`` (``compute_idf(df, N=n_docs)`` per term, stored as ``dtype``) with the
    function called once per distinct document frequency — a few hundred, not one per term — and the
    values spread by index: the same floats, since each depends only on df and N."""
    values = sorted_unique(np.asarray(df, dtype=np.int64))
    per_value = np.array([compute_idf(d, N=n_docs) for d in values.tolist()], dtype=np.float64)
    return per_value[np.searchsorted(values, df)].astype(dtype)


def _scored_by_table(tfs: np.ndarray, lengths: np.ndarray, data: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                     idf: np.ndarray, nonoccurrence: np.ndarray | None, tfc: Any) -> bool:
    """Fill ``data`` as :func:`score_entries`'s loop would, reading the tf component from a table over
    every (tf, chunk length) pair up to the largest of each; ``False`` (nothing done) when that table
    would be large. The loop computes ``idf[term] * tfc(tf, length)`` in float64 element by element,
    so the table's values are its values and the scores are equal bit for bit; a matrix has millions
    of entries but a few thousand distinct pairs, and the per-entry float64 arithmetic was most of
    the scoring (65 to 35 ms at 100k chunks)."""
    if not rows.size or lengths.dtype.kind not in "iu" or tfs.dtype.kind not in "iu":
        return False
    top_tf, width = int(tfs.max()), int(lengths.max()) + 1
    if int(lengths.min()) < 0 or (top_tf + 1) * width > _TABLE_MAX:
        return False
    # float32 tf and the lengths' own dtype, as the loop passes them
    table = tfc(np.repeat(np.arange(top_tf + 1, dtype=np.float32), width),
                np.tile(np.arange(width, dtype=lengths.dtype), top_tf + 1))
    if table.dtype != np.float64 or idf.dtype != np.float32:
        return False  # another promotion than the loop's float32 idf times float64 tfc: left to the loop
    short = lengths.astype(np.int32)
    key = np.empty(min(_SLICE, rows.size), dtype=np.int32)
    part = np.empty(key.size, dtype=np.float64)
    weight = np.empty(key.size, dtype=np.float32)
    for lo in range(0, rows.size, _SLICE):
        hi = min(lo + _SLICE, rows.size)
        k, p, w = key[: hi - lo], part[: hi - lo], weight[: hi - lo]
        np.take(short, rows[lo:hi], out=k)
        k += tfs[lo:hi].astype(np.int32) * np.int32(width)
        np.take(table, k, out=p)
        np.take(idf, cols[lo:hi], out=w)
        p *= w  # float32 idf times float64 tfc, as the loop's idf[c] * tfc(...)
        if nonoccurrence is not None:
            p -= nonoccurrence[cols[lo:hi]]
        data[lo:hi] = p
    return True


def assemble(
    data: np.ndarray, indices: np.ndarray, df: np.ndarray, n_docs: int, vocab: dict[str, int], params: dict[str, Any],
    nonoccurrence: np.ndarray | None,
) -> BM25Arrays:
    """The saved form of a CSC matrix (columns in term-id order, ``df`` entries each): bm25s's extra
    empty column for its "" token, in the offsets, the vocabulary and the non-occurrence array."""
    n_vocab = len(vocab)
    indptr = np.zeros(n_vocab + 2, dtype=np.int64)  # one more, empty column: bm25s's "" token
    np.cumsum(df, out=indptr[1 : n_vocab + 1])
    indptr[-1] = indptr[-2]
    if nonoccurrence is not None:
        nonoccurrence = np.append(nonoccurrence, np.zeros(1, dtype=nonoccurrence.dtype))
    terms = dict(vocab)
    terms[""] = n_vocab
    return BM25Arrays(data, indices, indptr, n_docs, terms, params, nonoccurrence)
