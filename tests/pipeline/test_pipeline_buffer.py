from __future__ import annotations

import pytest

from hoprag.index.store import build_index, load_index
from hoprag.pipeline.buffer import EvidenceBuffer, jaccard
from hoprag.pipeline.factory import make_engine
from hoprag.records import Document, Evidence, Hit

pytestmark = pytest.mark.unit

# A real HotpotQA sentence pair: the same paragraph appears with and without a trailing clause.
PEART = "Neil Ellwood Peart, OC (September 12, 1952 – January 7, 2020) was a Canadian musician and author, best known as the drummer of Rush."
PEART_NEAR = PEART + " He was inducted into the Modern Drummer Hall of Fame."


def ev(chunk_id: str, text: str) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title="Neil Peart", hop=1, step_id="s1", sub_query="q")


def test_exact_and_near_duplicates_are_dropped_and_reported():
    from hoprag.pipeline.buffer import _shingles

    similarity = jaccard(_shingles(PEART), _shingles(PEART_NEAR))
    assert 0.6 <= similarity < 0.9  # near, but below the default threshold
    buffer = EvidenceBuffer(near_threshold=0.6)
    kept, dropped = buffer.add([ev("a#0", PEART), ev("b#0", PEART.upper()), ev("c#0", PEART_NEAR), ev("d#0", "Rush is a Canadian rock band.")])
    assert [e.chunk_id for e in kept] == ["a#0", "d#0"]
    assert dropped == ["b#0", "c#0"]
    assert "a#0" in buffer and len(buffer) == 2
    kept, dropped = buffer.add([ev("a#0", PEART)])
    assert kept == [] and dropped == []  # already held is not a duplicate, just not new


def test_threshold_one_keeps_near_duplicates():
    buffer = EvidenceBuffer(near_threshold=1.0)
    kept, dropped = buffer.add([ev("a#0", PEART), ev("c#0", PEART_NEAR)])
    assert len(kept) == 2 and dropped == []


def test_jaccard_bounds():
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({1}), frozenset({2})) == 0.0


def test_the_engine_records_duplicates_in_the_trace(tmp_path):
    docs = [
        Document(id="peart", title="Neil Peart", text=PEART),
        Document(id="peart-copy", title="Neil Peart (drummer)", text=PEART),
        Document(id="rush", title="Rush (band)", text="Rush was a Canadian rock band whose drummer was Neil Peart."),
    ]
    build_index(docs, tmp_path / "idx")
    trace = make_engine("multihop", load_index(tmp_path / "idx")).answer("Which band did Neil Peart drum for?")
    assert {e.doc_id for e in trace.evidence} >= {"rush"} and not {"peart", "peart-copy"} <= {e.doc_id for e in trace.evidence}
    assert any(step.duplicates for step in trace.steps)


def test_a_question_in_a_language_the_corpus_lacks_abstains_with_a_reason(hotpot_index):
    trace = make_engine("multihop", hotpot_index).answer("カナダのロックバンドのドラマーは誰ですか")
    assert trace.stop_reason == "no_evidence" and trace.answer.abstained and trace.evidence == ()


def test_min_evidence_keeps_hopping(hotpot_index):
    question = "Are Sutera and Rhodotypos both types of shrub?"
    eager = make_engine("multihop", hotpot_index, min_evidence=1).answer(question)
    patient = make_engine("multihop", hotpot_index, min_evidence=50, max_hops=2).answer(question)
    assert patient.stop_reason != "sufficient"
    assert len(patient.steps) >= len(eager.steps)


def test_near_duplicate_at_the_size_bound_is_still_dropped():
    # 12 words hold 10 word 3-grams; their first 11 words hold 9 of them: Jaccard 9/10, exactly the
    # threshold, where the sizes' ratio (the bound that skips a pair) is 9/10 too. 10 words: 8/10.
    words = "Rush were a Canadian rock band formed in Toronto in the year".split()
    assert len(words) == 12
    buffer = EvidenceBuffer(near_threshold=0.9)
    kept, dropped = buffer.add([ev("a#0", " ".join(words)), ev("b#0", " ".join(words[:11])), ev("c#0", " ".join(words[:10]))])
    assert [e.chunk_id for e in kept] == ["a#0", "c#0"]
    assert dropped == ["b#0"]
