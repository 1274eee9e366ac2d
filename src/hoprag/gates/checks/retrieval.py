"""Retrieval measures over qrels and a run, vectorised with numpy; values equal trec_eval's.

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
``include_missing=True`` also scores qrels queries absent from the run as 0 (``trec_eval -c``).
"""

from __future__ import annotations

import re
from itertools import chain
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoprag.errors import ConfigError
from hoprag.gates.hooks import hook, metric
from hoprag.gates.metrics import Metric
from hoprag.trec import Qrels, Run

__all__ = ["MEASURES", "RetrievalResult", "parse_measure", "retrieval_measures"]

# family -> (needs a cut-off, allows one)
MEASURES: dict[str, tuple[bool, bool]] = {
    "P": (True, True), "R": (True, True), "Success": (True, True),
    "nDCG": (False, True), "RR": (False, False), "AP": (False, False),
}
_ALIASES = {"coverage": "Success", "precision": "P", "recall": "R", "ndcg": "nDCG", "mrr": "RR", "map": "AP"}
_NAME = re.compile(r"^([A-Za-z]+)(?:@(\d+))?$")


@dataclass(frozen=True)
class MeasureSpec:
    family: str
    k: int | None

    def __str__(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"


def parse_measure(name: str) -> MeasureSpec:
    """``"P@5"`` → ``MeasureSpec("P", 5)``; an unknown name lists the valid ones."""
    valid = "P@k, R@k, Success@k (alias coverage@k), nDCG, nDCG@k, RR, AP"
    match = _NAME.match(name.strip())
    family = match.group(1) if match else ""
    family = _ALIASES.get(family.lower(), family) if family not in MEASURES else family
    if not match or family not in MEASURES:
        raise ConfigError(f"unknown retrieval measure '{name}'; valid: {valid}")
    k = int(match.group(2)) if match.group(2) else None
    needs, allows = MEASURES[family]
    if (k is None and needs) or (k is not None and not allows) or (k is not None and k < 1):
        raise ConfigError(f"measure '{name}': {family} {'needs a cut-off @k >= 1' if needs else 'takes no cut-off'}; "
                          f"valid: {valid}")
    return MeasureSpec(family, k)


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


class _Arrays:
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


def _compute(a: _Arrays, spec: MeasureSpec) -> np.ndarray:
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
    raise ConfigError(f"unknown measure family '{spec.family}'")


def retrieval_measures(qrels: Qrels, run: Run, measures: Iterable[str | MeasureSpec],
                       *, include_missing: bool = False) -> RetrievalResult:
    """Every measure per query and as a mean over the evaluated queries (0.0 when there are none)."""
    specs = [m if isinstance(m, MeasureSpec) else parse_measure(m) for m in measures]
    if not specs:
        raise ConfigError("no retrieval measures asked for; e.g. -m P@5 -m RR -m nDCG@10")
    arrays = _Arrays(qrels, run, include_missing)
    per_query: dict[str, dict[str, float]] = {}
    aggregate: dict[str, float] = {}
    for spec in specs:
        values = _compute(arrays, spec)
        per_query[str(spec)] = dict(zip(arrays.qids, values.tolist()))
        aggregate[str(spec)] = float(values.mean()) if arrays.nq else 0.0
    return RetrievalResult(per_query=per_query, aggregate=aggregate, queries=arrays.nq)


def doc_run_from_rankings(rankings: dict[str, Sequence[str]]) -> Run:
    """A run from ranked doc-id lists (first occurrence kept), scored so the order is exact."""
    run: Run = {}
    for qid, docs in rankings.items():
        seen: dict[str, float] = {}
        for doc in docs:
            if doc not in seen:
                seen[doc] = float(len(docs) - len(seen))
        run[qid] = seen
    return run


@dataclass(frozen=True)
class RetrievalOutput:
    """What the retrieve stage hands its hooks: a run and the qrels to judge it (doc-level)."""

    run: Run
    qrels: Qrels
    ks: tuple[int, ...] = (5, 10)
    label: str = ""


def qrels_from_cases(cases: Iterable) -> Qrels:
    """Doc-level graded qrels from cases: a document's grade is the highest grade of its facts
    (2 = answer-bearing, 1 = bridge); distractors are judged 0."""
    qrels: Qrels = {}
    for case in cases:
        judged: dict[str, int] = {d.source_id: 0 for d in case.distractors}
        for fact in case.facts.values():
            judged[fact.source_id] = max(judged.get(fact.source_id, 0), max(int(fact.grade), 1))
        if any(v >= 1 for v in judged.values()):
            qrels[case.case_id] = judged
    return qrels


def run_from_traces(traces: Iterable) -> Run:
    """A doc-level run from each trace's final ranked evidence (first occurrence of a doc kept)."""
    return doc_run_from_rankings({t.case_id: [e.doc_id for e in t.evidence] for t in traces})


@hook("retrieve")
def retrieval_check(out: RetrievalOutput, ctx: dict[str, Any]) -> list[Metric]:
    ks = tuple(ctx.get("ks") or out.ks)
    names = [f"{family}@{k}" for k in ks for family in ("P", "R", "nDCG", "Success")] + ["RR", "AP"]
    result = retrieval_measures(out.qrels, out.run, names, include_missing=True)
    missing = sum(1 for q in out.qrels if q not in out.run)
    metrics = [metric(ctx, "queries", result.queries, label=out.label, missing_from_run=missing)]
    for name, value in result.aggregate.items():
        alias = {"alias": name.replace("Success", "coverage")} if name.startswith("Success") else {}
        metrics.append(metric(ctx, name, value, label=out.label, **alias))
    return metrics
