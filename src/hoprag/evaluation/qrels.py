"""Judgments from cases and rankings from traces: the one rule behind every document-level measure.

``hoprag eval -m``, the retrieve gate and ``hoprag trec export`` (so ``hoprag trec eval``, trec_eval,
pytrec_eval and ir_measures on its files) judge the same traces with these qrels and rank with these
runs, so their numbers agree.

qrels, document level, one judgment per (case, document):

    rel(d) = max(1, grade) maximised over the facts of every valid chain (alternative chains
             included) whose source is d                     (2 answer-bearing, 1 bridge)
    rel(d) = 0 for a labelled distractor that is no such fact's source

- a fact whose source is ``missing:…`` (an importer did not find it in the corpus) is not judged: no
  run can retrieve it, so it would lower every system's recall alike and tell nothing about any;
- a fact on no valid chain is not judged: it is not evidence any chain needs;
- a case with no relevant document (no valid chain, or every chain fact missing) has no qrels at all.
  TREC collections drop such topics, and trec_eval would score one 0 on every measure whatever was
  retrieved, lowering every mean by the same amount; left out, it is what the case-level measures
  call N/A (``hoprag eval`` leaves it out of the mean, the gate does not count it).

run, document level, from each case's last trace (the one evaluation scores):

    source "evidence": the documents of ``trace.evidence`` in order (first occurrence wins)
    source "hits":     the documents of every step's hits, ordered by (rank, step order)

scored ``n - rank + 1``, so score order is rank order for every tool. A case whose trace is missing
is in the qrels but not the run: the gate and ``hoprag eval`` score it 0 (``trec_eval -c``,
``hoprag trec eval --include-missing``). Writing and reading the files is :mod:`hoprag.trec`.
"""

from __future__ import annotations

from collections.abc import Iterable

from hoprag.datasets.schema import Case
from hoprag.errors import ConfigError
from hoprag.evaluation.matching import MISSING_SOURCE_PREFIX
from hoprag.records import Trace
from hoprag.trec import Qrels, Run

__all__ = ["RUN_SOURCES", "case_qrels", "qrels_from_cases", "ranked_docs", "run_from_traces", "trace_run"]

RUN_SOURCES = ("evidence", "hits")


def case_qrels(case: Case) -> dict[str, int]:
    """One case's judgments (see the module doc), by document id; empty when it has no relevant document."""
    rel: dict[str, int] = {}
    for chain in case.valid_chains:
        for fact_id in chain:
            fact = case.facts[fact_id]
            if fact.source_id.startswith(MISSING_SOURCE_PREFIX):
                continue
            rel[fact.source_id] = max(rel.get(fact.source_id, 0), max(1, fact.grade))
    if not rel:
        return {}
    for distractor in case.distractors:
        rel.setdefault(distractor.source_id, 0)
    return dict(sorted(rel.items()))


def qrels_from_cases(cases: Iterable[Case]) -> Qrels:
    """``{case_id: judgments}`` for every case with a relevant document, in the cases' order."""
    qrels: Qrels = {}
    for case in cases:
        judged = case_qrels(case)
        if judged:
            qrels[case.case_id] = judged
    return qrels


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


def trace_run(trace: Trace, source: str = "evidence") -> dict[str, float]:
    """One trace's ranking as ``{doc_id: n - rank + 1}``."""
    docs = ranked_docs(trace, source)
    return {doc: len(docs) - rank + 1 for rank, doc in enumerate(docs, start=1)}


def run_from_traces(traces: Iterable[Trace], source: str = "evidence") -> Run:
    """``{case_id: ranking}`` of every case's last trace (in the order the cases first appear)."""
    by_case: dict[str, Trace] = {}
    for trace in traces:
        by_case[trace.case_id] = trace  # the last one wins, as in evaluation
    return {case_id: trace_run(trace, source) for case_id, trace in by_case.items()}
