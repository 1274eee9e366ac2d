"""A trace set that matches no label is refused, never scored as zeros.

A pipeline whose traces record its own document ids (a LlamaIndex node UUID, a Haystack content hash)
retrieves the right documents under names no case cites: every measure is 0.000 and nothing says why.
:func:`check_traces_meet_labels` refuses such a set before ``hoprag eval`` (:func:`~hoprag.evaluation.
chain_eval.evaluate_chains`) or ``hoprag trec export`` scores it: when traces of the cases retrieved
documents, and not one of those documents is a source some case's facts cite. A set too small to tell
an id mismatch from a system that missed (fewer than :data:`MIN_DOCUMENTS` documents, or fewer than
:data:`MIN_TRACES` traces, retrieved) is scored as it is, with a warning saying so: its zeros may be the
system's. With the corpus known (``eval --corpus``) size does not matter: retrieved documents none of
which is a corpus document are refused.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from hoprag.datasets.schema import Case
from hoprag.errors import InputError
from hoprag.records import Trace

__all__ = ["MIN_DOCUMENTS", "MIN_TRACES", "check_traces_meet_labels"]

#: how much a trace set must have retrieved before "none of it is cited" means the ids differ
MIN_DOCUMENTS = 10
MIN_TRACES = 3


def check_traces_meet_labels(cases: Sequence[Case], traces: Iterable[Trace], source: str = "traces",
                             corpus_ids: Collection[str] | None = None) -> str:
    """Raise :class:`InputError` when the traces' retrieved documents hold none of the cases' sources (or,
    with ``corpus_ids``, none of the corpus's documents); return a warning, else ``""``, when none matched
    but too few were retrieved to tell."""
    labelled = {fact.source_id for case in cases for fact in case.facts.values()}
    known = {case.case_id for case in cases}
    retrieved: set[str] = set()
    searched = 0
    for trace in traces:
        if trace.case_id not in known:
            continue
        searched += bool(trace.steps or trace.evidence)
        retrieved.update(h.doc_id for step in trace.steps for h in step.hits)
        retrieved.update(e.hit.doc_id for e in trace.evidence)
        if retrieved & labelled:
            return ""
    foreign = bool(retrieved) and corpus_ids is not None and not retrieved & set(corpus_ids)
    if labelled and (foreign or (len(retrieved) >= MIN_DOCUMENTS and searched >= MIN_TRACES)):
        example = ", ".join(sorted(retrieved)[:3])
        raise InputError(
            f"none of the {len(retrieved)} documents the traces retrieved (e.g. {example}) is a document the cases "
            "cite: every measure would be 0 because the ids differ, not because the retrieval failed",
            source=source,
            fix="record the corpus ids in the traces; for imported spans run `hoprag traces import SPANS --out "
            "TRACES --corpus CORPUS` (or --index INDEX), which resolves the frameworks' own ids by metadata or text")
    if labelled and retrieved:
        return (f"none of the {len(retrieved)} documents {searched} trace(s) retrieved is a document the cases cite; "
                "too few to tell ids that differ from a retrieval that missed, so they are scored "
                "(`hoprag eval --corpus CORPUS` checks the ids against the corpus)")
    return ""
