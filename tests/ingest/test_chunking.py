"""Chunker: exact offsets, sentence boundaries, overlap, long sentences, stable ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hoprag.ingest.chunking import ChunkConfig, chunk_document, chunk_documents, sentence_spans
from hoprag.ingest.loaders import load_documents
from hoprag.records import Document

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def beir() -> dict[str, Document]:
    return {d.id: d for d in load_documents(DATA / "ingest_beir_corpus.jsonl")}


@pytest.fixture(scope="module")
def enterprise() -> dict[str, Document]:
    return {d.id: d for d in load_documents(DATA / "ingest_docs.jsonl")}


def spans(chunks: list) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks]


def test_short_document_is_one_chunk(beir: dict[str, Document]) -> None:
    doc = beir["31001"]
    (chunk,) = chunk_document(doc)
    assert (chunk.id, chunk.doc_id, chunk.index) == ("31001#0", "31001", 0)
    assert (chunk.start, chunk.end) == (0, len(doc.text)) and chunk.text == doc.text


def test_sentence_boundaries_on_real_text(beir: dict[str, Document]) -> None:
    text = beir["31002"].text
    sentences = [text[a:b] for a, b in sentence_spans(text)]
    assert len(sentences) == 7
    # a period inside closing quotes still ends the sentence: ...Revolution management.” The Midnight
    assert sentences[2].endswith("with Revolution management.\u201d")
    assert sentences[3].startswith("The Midnight Riders are viewed as")
    # "(sections 142 and 143)" and the quoted "The Fort.” stay inside their sentence
    assert sentences[5].startswith("The majority") and sentences[5].endswith('"The Fort.\u201d')


def test_initials_and_titles_do_not_end_sentences(beir: dict[str, Document]) -> None:
    # 'Donald W. "Donnie" Smith' — an initial followed by a quote
    assert len(sentence_spans(beir["31001"].text)) == 1
    text = "Dr. Smith met J. R. R. Tolkien in the U.S. Army. They talked."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Dr. Smith met J. R. R. Tolkien in the U.S. Army.",
        "They talked.",
    ]


def test_lowercase_after_period_and_blank_lines() -> None:
    text = "Version 2. effective now. Next one!\n\nretention schedule:\n- item one.\n- item two"
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Version 2. effective now.",  # no split before a lowercase word
        "Next one!",
        "retention schedule:\n- item one.\n- item two",  # a blank line splits; a single newline does not
    ]


def test_packing_without_overlap(enterprise: dict[str, Document]) -> None:
    # Sentences of policy-8-v2 (start, end): (0,51) (52,83) (84,130) (131,161) (163,277) (278,433)
    # (435,723) (725,824) (825,933). With max 300: 0..277 fits (277), adding ..433 would be 433;
    # 278..433 alone (155, adding the 288-char schedule would exceed 300); the schedule alone;
    # 725..933 = 208. No previous trailing sentence is <= 100 chars, so no overlap.
    doc = enterprise["policy-8-v2"]
    chunks = chunk_document(doc, ChunkConfig(max_chars=300, overlap_chars=100, min_chars=0))
    assert spans(chunks) == [(0, 277), (278, 433), (435, 723), (725, 933)]
    assert [c.id for c in chunks] == [f"policy-8-v2#{i}" for i in range(4)]
    assert chunks[2].text.startswith("Retention schedule:\n- Skyline") and chunks[2].text.endswith("12 years.")


def test_overlap_repeats_whole_trailing_sentences(enterprise: dict[str, Document], beir: dict[str, Document]) -> None:
    # overlap 120 lets the 114-char "Purpose: ..." sentence (163,277) open chunk 2: 163..433 = 270 <= 300
    doc = enterprise["policy-8-v2"]
    chunks = chunk_document(doc, ChunkConfig(max_chars=300, overlap_chars=120, min_chars=0))
    assert spans(chunks)[:2] == [(0, 277), (163, 433)]
    assert chunks[1].text.startswith("Purpose: this policy sets how long Kestrel keeps customer data")
    # 31000 sentences: (0,191) (192,268) (269,420); the 76-char middle one is repeated at overlap 80 only
    doc = beir["31000"]
    with_overlap = chunk_document(doc, ChunkConfig(max_chars=300, overlap_chars=80, min_chars=0))
    without = chunk_document(doc, ChunkConfig(max_chars=300, overlap_chars=70, min_chars=0))
    assert spans(with_overlap) == [(0, 268), (192, 420)]
    assert spans(without) == [(0, 268), (269, 420)]


def test_short_tail_is_extended_backwards(beir: dict[str, Document]) -> None:
    # tail (269,420) is 151 chars < min 200: it takes the previous sentence, 192..420 = 228 <= 300
    doc = beir["31000"]
    chunks = chunk_document(doc, ChunkConfig(max_chars=300, overlap_chars=0, min_chars=200))
    assert spans(chunks) == [(0, 268), (192, 420)]


def test_sentence_longer_than_max_splits_at_whitespace(beir: dict[str, Document]) -> None:
    doc = beir["31001"]  # one 174-char sentence
    chunks = chunk_document(doc, ChunkConfig(max_chars=50, overlap_chars=10, min_chars=0))
    assert [c.text for c in chunks] == [
        'Donald W. "Donnie" Smith (born December 7, 1990 in',
        "Detroit, Michigan) is an American soccer player",
        "who plays as a left back for New England",
        "Revolution in Major League Soccer.",
    ]
    assert all(c.text == doc.text[c.start : c.end] for c in chunks)


def test_unbroken_token_longer_than_max_is_hard_cut() -> None:
    doc = Document(id="d", title="", text="x" * 45 + " end.")
    chunks = chunk_document(doc, ChunkConfig(max_chars=20, overlap_chars=0, min_chars=0))
    # pieces of a split sentence are packed like sentences: the 5-char rest joins "end."
    assert [c.text for c in chunks] == ["x" * 20, "x" * 20, "xxxxx end."]


def test_whitespace_only_document_has_no_chunks() -> None:
    assert chunk_document(Document(id="e", title="", text=" \n\t ")) == []
    assert chunk_document(Document(id="e", title="", text="")) == []


def test_leading_whitespace_is_not_part_of_a_chunk() -> None:
    doc = Document(id="w", title="", text="\n  Hello there.  \n")
    (chunk,) = chunk_document(doc)
    assert (chunk.start, chunk.end, chunk.text) == (3, 15, "Hello there.")


def test_ids_are_stable_and_deterministic(enterprise: dict[str, Document]) -> None:
    config = ChunkConfig(max_chars=200, overlap_chars=60, min_chars=50)
    first = chunk_documents(enterprise.values(), config)
    again = chunk_documents(list(enterprise.values()), ChunkConfig(max_chars=200, overlap_chars=60, min_chars=50))
    assert first == again
    assert len({c.id for c in first}) == len(first)
    for doc in enterprise.values():
        own = [c for c in first if c.doc_id == doc.id]
        assert [c.id for c in own] == [f"{doc.id}#{i}" for i in range(len(own))]
        assert [c.index for c in own] == list(range(len(own)))


def test_config_is_validated() -> None:
    with pytest.raises(ValidationError, match="overlap_chars"):
        ChunkConfig(max_chars=100, overlap_chars=100)
    with pytest.raises(ValidationError, match="min_chars"):
        ChunkConfig(max_chars=100, overlap_chars=10, min_chars=101)
    with pytest.raises(ValidationError):
        ChunkConfig(max_chars=100, overlap=10)  # type: ignore[call-arg]
    # unset defaults shrink to fit a small max_chars: 150 -> 100 // 8, 200 -> 100 // 4
    small = ChunkConfig(max_chars=100)
    assert (small.overlap_chars, small.min_chars) == (12, 25)
    assert ChunkConfig(max_chars=150, overlap_chars=20).min_chars == 37


_TEXT = st.text(alphabet=st.sampled_from(list("abcXYZ019 .!?\n\t\"'”()-")), max_size=600)


@settings(max_examples=300, deadline=None)
@given(
    text=_TEXT,
    max_chars=st.integers(20, 200),
    overlap_ratio=st.floats(0, 0.99),
    min_ratio=st.floats(0, 1),
)
def test_offsets_invariant_and_coverage(text: str, max_chars: int, overlap_ratio: float, min_ratio: float) -> None:
    config = ChunkConfig(
        max_chars=max_chars, overlap_chars=int(max_chars * overlap_ratio), min_chars=int(max_chars * min_ratio)
    )
    doc = Document(id="p", title="", text=text)
    chunks = chunk_document(doc, config)
    covered = [False] * len(text)
    for i, chunk in enumerate(chunks):
        assert chunk.text == text[chunk.start : chunk.end]
        assert 0 < chunk.end - chunk.start <= max_chars
        assert not chunk.text[0].isspace() and not chunk.text[-1].isspace()
        assert chunk.id == f"p#{i}" and chunk.index == i
        for j in range(chunk.start, chunk.end):
            covered[j] = True
    # every non-whitespace character lands in some chunk; chunks move strictly forward
    assert all(covered[j] for j, ch in enumerate(text) if not ch.isspace())
    assert all(a.start < b.start and a.end < b.end for a, b in zip(chunks, chunks[1:]))
    assert chunk_document(doc, config) == chunks


@settings(max_examples=200, deadline=None)
@given(text=_TEXT, max_chars=st.integers(20, 700))
def test_text_within_max_chars_is_its_sentences_packed(text: str, max_chars: int) -> None:
    # a text of at most max_chars characters skips the sentence scan: the one chunk it gets must be
    # the one sentence packing gives (its first sentence's start to its last sentence's end)
    config = ChunkConfig(max_chars=max_chars)
    sentences = sentence_spans(text)
    expected = [(sentences[0][0], sentences[-1][1])] if sentences and len(text) <= max_chars else None
    chunks = chunk_document(Document(id="s", title="", text=text), config)
    if expected is not None:
        assert spans(chunks) == expected
    else:
        assert len(text) > max_chars or chunks == []
