"""Supporting-passage recall@k, all-supporting-passages@k and supporting-fact EM/F1, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.schema import Case, load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.hops import chain_coverage
from hoprag.evaluation.support import all_passages, passage_recall, sp_em, sp_f1
from hoprag.records import Answer, Citation, Claim, Evidence, Hit, Trace

pytestmark = pytest.mark.unit

DOC_A = "Alpha was born in Paris. Alpha wrote Beta. Gamma is unrelated."  # sentences [0,24) [25,42) [43,62)
DOC_B = "Beta is a novel. Beta sold well."  # sentences [0,16) [17,32)
TEXTS = {"A": DOC_A, "B": DOC_B}
CASE = Case(
    case_id="c1",
    query="Which novel did the man born in Paris write?",
    answers=["Beta"],
    facts={
        "a1": {"source_id": "A", "spans": [{"start": 25, "end": 42, "text": "Alpha wrote Beta."}]},
        "b0": {"source_id": "B", "spans": [{"start": 0, "end": 16, "text": "Beta is a novel."}]},
    },
    valid_chains=[["a1", "b0"]],
    edges=[{"from": "a1", "to": "b0"}],
)


def entry(doc: str, start: int | None = None, end: int | None = None) -> Evidence:
    text = TEXTS[doc] if start is None else TEXTS[doc][start:end]
    hit = Hit(chunk_id=f"{doc}@{start}", doc_id=doc, score=1.0, rank=1, retriever="t", start=start, end=end)
    return Evidence(hit=hit, text=text, title=doc, hop=1, step_id="s1", sub_query="q")


def trace(evidence: list[Evidence], cites: list[Evidence] = (), abstained: bool = False) -> Trace:
    claims = (Claim("Beta.", tuple(Citation(e.hit.chunk_id, e.hit.doc_id, 1) for e in cites)),) if cites else ()
    return Trace(run_id="r", case_id="c1", question=CASE.query, evidence=tuple(evidence),
                 answer=Answer(text="Beta", claims=claims, abstained=abstained))


def test_passage_recall_and_all_passages() -> None:
    t = trace([entry("A", 0, 62), entry("B", 0, 32)])
    # top-1 holds document A only: 1 of the chain's 2 supporting documents
    assert passage_recall(CASE, t, 1) == 0.5 and all_passages(CASE, t, 1) == 0.0
    assert passage_recall(CASE, t, 2) == 1.0 and all_passages(CASE, t, 2) == 1.0


def test_all_passages_is_paragraph_level_chain_coverage_is_span_level() -> None:
    # the first sentence of A is not the labelled one: both documents found, fact a1 not covered
    t = trace([entry("A", 0, 24), entry("B", 0, 16)])
    assert all_passages(CASE, t, 2) == 1.0 and chain_coverage(CASE, t, 2) == 0.0


def test_supporting_facts_from_cited_sentences() -> None:
    whole_a = entry("A", 0, 62)
    t = trace([whole_a, entry("B", 0, 32)], cites=[whole_a])
    # cited: the 3 sentences of A; 1 overlaps a gold span -> P = 1/3; gold found: a1 of {a1, b0} -> R = 1/2
    p, r = 1 / 3, 1 / 2
    assert sp_f1(CASE, t) == pytest.approx(2 * p * r / (p + r))  # = 0.4
    assert sp_em(CASE, t) == 0.0


def test_supporting_facts_exact_when_sentences_are_the_gold_ones() -> None:
    t = trace([entry("A", 25, 42), entry("B", 0, 16)])  # nothing cited: all selected evidence counts
    assert (sp_em(CASE, t), sp_f1(CASE, t)) == (1.0, 1.0)
    extra = trace([entry("A", 25, 42), entry("B", 0, 16), entry("B", 17, 32)])
    # one false positive sentence: P = 2/3, R = 1 -> F1 = 0.8, EM 0
    assert sp_f1(CASE, extra) == pytest.approx(0.8) and sp_em(CASE, extra) == 0.0


def test_document_level_evidence_and_abstention() -> None:
    docs_only = trace([entry("A"), entry("B")])
    docs_only = Trace(run_id="r", case_id="c1", question="q", answer=Answer(text="Beta"),
                      evidence=tuple(Evidence(Hit(e.hit.doc_id, e.hit.doc_id, 1.0, 1, "t"), "", "", 1, "s", "q")
                                     for e in docs_only.evidence))
    assert sp_f1(CASE, docs_only) is None and sp_em(CASE, docs_only) is None  # no offsets: not guessed
    assert passage_recall(CASE, docs_only, 2) == 1.0
    abstained = trace([entry("A", 25, 42), entry("B", 0, 16)], abstained=True)
    assert (sp_em(CASE, abstained), sp_f1(CASE, abstained)) == (0.0, 0.0)


def test_alternative_chains_take_the_best() -> None:
    two = CASE.model_copy(update={"valid_chains": [["a1", "b0"], ["a1"]]})
    t = trace([entry("A", 25, 42)])
    # chain 1: P = 1, R = 1/2 -> 2/3; chain 2: P = R = 1 -> EM 1
    assert (sp_em(two, t), sp_f1(two, t)) == (1.0, 1.0)
    assert passage_recall(two, t, 1) == 1.0 and all_passages(two, t, 1) == 1.0


def test_reported_by_evaluate_chains() -> None:
    cases = load_cases(Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl")
    report = evaluate_chains([CASE, *cases[:2]], [trace([entry("A", 25, 42), entry("B", 0, 16)])], ks=(1, 2))
    agg = report.aggregate
    # c1 is perfect; the two enterprise cases have no trace and score the default 0
    assert agg["all_passages@2"] == pytest.approx(1 / 3) and agg["passage_recall@1"] == pytest.approx(0.5 / 3)
    assert agg["sp_em"] == pytest.approx(1 / 3) and agg["sp_f1"] == pytest.approx(1 / 3)
    assert agg["all_passages@2"] >= agg["chain_coverage@2"]
