"""TREC exports, so trec_eval / ir_measures / pytrec_eval users can check our numbers.

qrels (``qid 0 docid rel``), document level, one line per (case, document):

    rel(d) = max grade over the facts of any valid chain whose source is d  (2 answer-bearing, 1 bridge)
    rel(d) = 0 for a labelled distractor that is no fact's source

run (``qid Q0 docid rank score tag``), document level, from a trace:

    source "evidence": the documents of ``trace.evidence`` in order (first occurrence wins)
    source "hits":     the documents of every step's hits, ordered by (rank, step order)

with ``score = n - rank + 1`` so that score order equals rank order for every tool. Missing
``missing:`` sources are never written. Document ids must not contain whitespace (TREC columns).
Reading and writing the files themselves is :mod:`hoprag.trec`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from hoprag import trec
from hoprag.datasets.schema import Case
from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.matching import MISSING_SOURCE_PREFIX
from hoprag.records import Trace
from hoprag.trec import Qrels, Run

RUN_SOURCES = ("evidence", "hits")


def _check_id(value: str, what: str, case_id: str) -> str:
    if not value or any(ch.isspace() for ch in value):
        raise InputError(
            f"case {case_id!r}: {what} {value!r} is empty or contains whitespace",
            field=what,
            fix="TREC files are whitespace-separated; use ids without spaces",
        )
    return value


def qrels_for(case: Case) -> dict[str, int]:
    """Document-level relevance of one case (see the module doc)."""
    rel: dict[str, int] = {}
    for chain in case.valid_chains:
        for fact_id in chain:
            fact = case.facts[fact_id]
            if fact.source_id.startswith(MISSING_SOURCE_PREFIX):
                continue
            rel[fact.source_id] = max(rel.get(fact.source_id, 0), max(1, fact.grade))
    for distractor in case.distractors:
        rel.setdefault(distractor.source_id, 0)
    return rel


def ranked_docs(trace: Trace, source: str = "evidence") -> list[str]:
    """Documents of a trace, best first, without repeats."""
    if source == "evidence":
        docs = [e.doc_id for e in trace.evidence]
    elif source == "hits":
        order = sorted(
            ((h.rank, i, j, h.doc_id) for i, s in enumerate(trace.steps) for j, h in enumerate(s.hits)),
        )
        docs = [d for *_, d in order]
    else:
        raise ConfigError(f"unknown run source {source!r}; valid: {', '.join(RUN_SOURCES)} (--source)")
    return list(dict.fromkeys(docs))


def write_qrels(path: str | Path, cases: Iterable[Case]) -> int:
    """Write the document-level qrels of ``cases``; returns the number of lines."""
    qrels: Qrels = {}
    for case in cases:
        qid = _check_id(case.case_id, "case_id", case.case_id)
        qrels[qid] = {_check_id(doc, "source_id", case.case_id): rel for doc, rel in sorted(qrels_for(case).items())}
    trec.write_qrels(path, qrels)
    return sum(len(docs) for docs in qrels.values())


def write_run(path: str | Path, traces: Sequence[Trace], *, tag: str = "hoprag", source: str = "evidence") -> int:
    """Write a TREC run; the last trace of a case wins (as in evaluation)."""
    by_case: dict[str, Trace] = {}
    for trace in traces:
        by_case[trace.case_id] = trace
    run: Run = {}
    for case_id, trace in by_case.items():
        qid = _check_id(case_id, "case_id", case_id)
        docs = ranked_docs(trace, source)
        run[qid] = {_check_id(doc, "doc_id", case_id): len(docs) - rank + 1 for rank, doc in enumerate(docs, start=1)}
    trec.write_run(path, run, tag=tag)
    return sum(len(docs) for docs in run.values())


def doc_recall_at(qrels: dict[str, int], docs: Sequence[str], k: int) -> float | None:
    """Our document recall@k (relevance >= 1), the same definition as trec_eval's ``recall_k``."""
    relevant = {d for d, r in qrels.items() if r >= 1}
    if not relevant:
        return None
    return len(relevant & set(docs[:k])) / len(relevant)


def doc_precision_at(qrels: dict[str, int], docs: Sequence[str], k: int) -> float:
    """trec_eval's ``P_k``: relevant documents in the first k over k."""
    return sum(1 for d in docs[:k] if qrels.get(d, 0) >= 1) / k
