"""Document-level (TREC) measures over qrels and a run, vectorised with numpy; values equal trec_eval's.

Names are ir_measures'. With ``rank`` from 1, ``rel(d)`` the judged grade (0 when unjudged),
relevant meaning ``rel >= 1`` and ``R`` the number of relevant judged documents of the query:

    P@k        = |relevant in top k| / k
    R@k        = |relevant in top k| / R                    (0 when R = 0)
    RR         = 1 / rank of the first relevant document    (0 when none is retrieved)
    Success@k  = 1 if any relevant document is in the top k, else 0   (alias: coverage@k)
    nDCG@k     = DCG@k / IDCG@k, DCG@k = sum_{rank<=k} max(rel,0) / log2(rank + 1); IDCG@k is the
                 DCG of all judged gains sorted descending, so retrieving nothing scores 0
    nDCG       = the same without a cut-off
    AP         = sum over relevant retrieved of (relevant up to rank / rank), divided by R

The ranking is by score descending, ties broken by docid descending (trec_eval's order); the rank
column of a run is ignored. Queries are those in both run and qrels (pytrec_eval's convention);
``include_missing=True`` also scores qrels queries absent from the run as 0 (``trec_eval -c``, the
registered default). The definitions are :mod:`hoprag.evaluation.measures.registry`'s ``document``
kind; ``hoprag trec eval``, the retrieve gate and ``hoprag eval -m`` (one query per case,
:mod:`hoprag.evaluation.measures.cases`) all compute them here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

import numpy as np

from hoprag.errors import ConfigError
from hoprag.evaluation.measures.registry import MeasureSpec, parse_measure
from hoprag.trec import Qrels, Run

__all__ = ["RankingArrays", "RetrievalResult", "measure_values", "parse_document_measure", "retrieval_measures"]


def parse_document_measure(name: str | MeasureSpec) -> MeasureSpec:
    """A document-level measure's spec; another name lists the valid ones (``P@k, ..., AP``)."""
    return parse_measure(name, ("document",)) if isinstance(name, str) else name


@dataclass(frozen=True)
class RetrievalResult:
    """Per-query values (``{measure: {qid: value}}``) and their means."""

    per_query: dict[str, dict[str, float]]
    aggregate: dict[str, float]
    queries: int


def _codes(code: dict[str, int], docs: list[str]) -> np.ndarray:
    return np.fromiter(map(code.__getitem__, docs), dtype=np.int64, count=len(docs))


def _ranking_order(rq: np.ndarray, score: np.ndarray, doc: np.ndarray, nq: int, ndocs: int) -> np.ndarray:
    """Indices sorting by (query, score desc, docid desc): one composite integer key when it fits."""
    levels, score_rank = np.unique(-score, return_inverse=True)
    if nq * max(len(levels), 1) * ndocs < 2**62:
        key = (rq * max(len(levels), 1) + score_rank.reshape(-1)) * ndocs + (ndocs - 1 - doc)
        return np.argsort(key, kind="stable")
    return np.lexsort((-doc, -score, rq))


class RankingArrays:
    """Run and qrels as flat arrays, the run sorted by (query, score desc, docid desc)."""

    def __init__(self, qrels: Qrels, run: Run, include_missing: bool) -> None:
        qids = [q for q in run if q in qrels]
        if include_missing:
            qids += [q for q in qrels if q not in run]
        self.qids = qids
        nq = len(qids)
        empty: dict[str, float] = {}
        run_docs = list(chain.from_iterable(run.get(q, empty) for q in qids))
        judged_docs = list(chain.from_iterable(qrels[q] for q in qids))
        docs = sorted(set(run_docs).union(judged_docs))
        code = {d: i for i, d in enumerate(docs)}
        ndocs = max(len(docs), 1)
        sizes = np.fromiter((len(run.get(q, empty)) for q in qids), dtype=np.int64, count=nq)
        total = int(sizes.sum())
        rq = np.repeat(np.arange(nq, dtype=np.int64), sizes)
        rdoc = _codes(code, run_docs)
        rscore = np.fromiter(chain.from_iterable(run.get(q, empty).values() for q in qids), dtype=np.float64,
                             count=total)
        order = _ranking_order(rq, rscore, rdoc, nq, ndocs)
        self.rq, rdoc = rq[order], rdoc[order]
        starts = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        self.rank = np.arange(total, dtype=np.int64) - starts[self.rq] + 1
        qsizes = np.fromiter((len(qrels[q]) for q in qids), dtype=np.int64, count=nq)
        jq = np.repeat(np.arange(nq, dtype=np.int64), qsizes)
        jdoc = _codes(code, judged_docs)
        jrel = np.fromiter(chain.from_iterable(qrels[q].values() for q in qids), dtype=np.float64,
                           count=int(qsizes.sum()))
        keys = jq * ndocs + jdoc
        korder = np.argsort(keys, kind="stable")
        skeys, srel = keys[korder], jrel[korder]
        probe = self.rq * ndocs + rdoc
        pos = np.searchsorted(skeys, probe)
        pos_clip = np.minimum(pos, max(len(skeys) - 1, 0))
        found = (pos < len(skeys)) & (skeys[pos_clip] == probe) if len(skeys) else np.zeros(total, bool)
        self.rel = np.where(found, srel[pos_clip] if len(skeys) else 0.0, 0.0)
        self.nq = nq
        self.num_rel = np.bincount(jq, weights=(jrel >= 1).astype(np.float64), minlength=nq)
        # ideal gains per query, descending
        gains = np.maximum(jrel, 0.0)
        iorder = np.lexsort((-gains, jq))
        self.iq, self.igain = jq[iorder], gains[iorder]
        istarts = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(qsizes, out=istarts[1:])
        self.irank = np.arange(len(self.iq), dtype=np.int64) - istarts[self.iq] + 1

    def per_query_sum(self, q: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(q, weights=weights, minlength=self.nq)


def measure_values(a: RankingArrays, spec: MeasureSpec) -> np.ndarray:
    """One measure's value for every query of ``a``, in ``a.qids`` order."""
    relevant = a.rel >= 1
    cut = np.ones_like(relevant) if spec.k is None else a.rank <= spec.k
    if spec.family == "P":
        return a.per_query_sum(a.rq, (relevant & cut).astype(np.float64)) / spec.k
    if spec.family == "R":
        hits = a.per_query_sum(a.rq, (relevant & cut).astype(np.float64))
        return np.divide(hits, a.num_rel, out=np.zeros(a.nq), where=a.num_rel > 0)
    if spec.family == "Success":
        return (a.per_query_sum(a.rq, (relevant & cut).astype(np.float64)) > 0).astype(np.float64)
    if spec.family == "RR":
        out = np.zeros(a.nq)
        idx = np.flatnonzero(relevant)
        first_q, first = np.unique(a.rq[idx], return_index=True)
        out[first_q] = 1.0 / a.rank[idx[first]]
        return out
    if spec.family == "nDCG":
        gain = np.maximum(a.rel, 0.0) * cut / np.log2(a.rank + 1.0)
        dcg = a.per_query_sum(a.rq, gain)
        icut = np.ones(len(a.irank), bool) if spec.k is None else a.irank <= spec.k
        idcg = a.per_query_sum(a.iq, a.igain * icut / np.log2(a.irank + 1.0))
        return np.divide(dcg, idcg, out=np.zeros(a.nq), where=idcg > 0)
    if spec.family == "AP":
        rel_f = relevant.astype(np.float64)
        cum = np.cumsum(rel_f)
        group_start = np.searchsorted(a.rq, np.arange(a.nq))
        before = np.concatenate([[0.0], cum])[group_start]
        within = cum - before[a.rq]
        prec = a.per_query_sum(a.rq, rel_f * within / a.rank)
        return np.divide(prec, a.num_rel, out=np.zeros(a.nq), where=a.num_rel > 0)
    raise ConfigError(f"'{spec}' is not a document-level measure. Fix: use P@k, R@k, Success@k, nDCG, nDCG@k, RR or AP")


def retrieval_measures(qrels: Qrels, run: Run, measures: Iterable[str | MeasureSpec],
                       *, include_missing: bool = False) -> RetrievalResult:
    """Every measure per query and as a mean over the evaluated queries (0.0 when there are none)."""
    specs = [parse_document_measure(m) for m in measures]
    if not specs:
        raise ConfigError("no retrieval measures asked for. Fix: name some, e.g. -m P@5 -m RR -m nDCG@10")
    arrays = RankingArrays(qrels, run, include_missing)
    per_query: dict[str, dict[str, float]] = {}
    aggregate: dict[str, float] = {}
    for spec in specs:
        values = measure_values(arrays, spec)
        per_query[str(spec)] = dict(zip(arrays.qids, values.tolist()))
        aggregate[str(spec)] = float(values.mean()) if arrays.nq else 0.0
    return RetrievalResult(per_query=per_query, aggregate=aggregate, queries=arrays.nq)
