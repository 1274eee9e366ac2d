"""A trace set whose documents match no label is refused or named, never scored as zeros in silence
(hoprag.evaluation.label_match), over the bundled HotpotQA slice's cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.errors import InputError
from hoprag.evaluation.label_match import MIN_DOCUMENTS, MIN_TRACES, check_traces_meet_labels
from hoprag.records import Hit, HopStep, Trace

pytestmark = pytest.mark.unit

SLICE = import_dataset("hotpotqa", [Path(__file__).parents[1] / "data" / "hotpotqa_dev_slice.json"])
CASES = SLICE.cases
CORPUS = {d.id for d in SLICE.documents}


def _trace(case_id: str, doc_ids: list[str]) -> Trace:
    hits = tuple(Hit(chunk_id=d, doc_id=d, score=1.0, rank=i + 1, retriever="bm25") for i, d in enumerate(doc_ids))
    return Trace(run_id="r", case_id=case_id, question="q",
                 steps=(HopStep(step_id="s1", hop=1, sub_query="q", issued_query="q", hits=hits),))


def _hashes(case_index: int, n: int) -> list[str]:
    return [f"{case_index:02d}{i:062d}" for i in range(n)]  # content-hash-like ids no case cites


def test_a_set_large_enough_to_tell_is_refused_and_a_cited_document_lets_it_through() -> None:
    traces = [_trace(c.case_id, _hashes(i, 4)) for i, c in enumerate(CASES[:MIN_TRACES])]
    assert len({d for t in traces for s in t.steps for d in (h.doc_id for h in s.hits)}) >= MIN_DOCUMENTS
    with pytest.raises(InputError, match=r"none of the 12 documents .* --corpus CORPUS"):
        check_traces_meet_labels(CASES, traces, "traces.jsonl")
    cited = next(iter(CASES[0].facts.values())).source_id
    assert check_traces_meet_labels(CASES, [*traces, _trace(CASES[1].case_id, [cited])]) == ""


def test_a_small_set_is_scored_with_a_warning_and_refused_when_the_corpus_shows_the_ids_are_foreign() -> None:
    small = [_trace(CASES[0].case_id, _hashes(0, 5)), _trace(CASES[1].case_id, _hashes(1, 5))]
    warning = check_traces_meet_labels(CASES, small)
    assert warning.startswith("none of the 10 documents 2 trace(s) retrieved") and "--corpus CORPUS" in warning
    with pytest.raises(InputError, match="none of the 10 documents"):
        check_traces_meet_labels(CASES, small, corpus_ids=CORPUS)
    # corpus documents no case cites: a retrieval that missed, scored without a refusal
    uncited = sorted(CORPUS - {f.source_id for c in CASES for f in c.facts.values()})
    assert uncited
    missed = [_trace(CASES[0].case_id, uncited[:2])]
    assert check_traces_meet_labels(CASES, missed, corpus_ids=CORPUS).startswith("none of the 2 documents")
