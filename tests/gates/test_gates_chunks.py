"""Chunk QA: length distribution and realised overlap against the configured one."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.gates.checks.chunks import ChunkOutput, overlap_histogram, realised_overlaps
from hoprag.gates.hooks import StageRunner
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.ingest.loaders import load_documents
from hoprag.records import Chunk, Document

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


def _metrics(chunks, docs, config):
    emitted = StageRunner("r", lambda m: None, {"chunk_config": config}).observe("chunk", ChunkOutput(chunks, docs))
    return {m.name: m for m in emitted}


def test_hand_made_overlap() -> None:
    doc = Document("d", "", "Alpha beta. Gamma delta. Epsilon zeta.")
    chunks = [Chunk("d#0", "d", doc.text[0:24], 0, 24, 0), Chunk("d#1", "d", doc.text[12:38], 12, 38, 1)]
    assert realised_overlaps(chunks, [doc]) == [(12, 3)]  # "Gamma delta." = 12 chars, 3 tokens
    assert overlap_histogram([0, 3, 7, 60]) == {"0": 1, "1-5": 1, "6-10": 1, "11-20": 0, "21-50": 0, "51+": 1}


def test_real_documents_overlap_on_and_off() -> None:
    docs = load_documents(ROOT / "data" / "enterprise" / "corpus.jsonl")
    on = ChunkConfig(max_chars=300, overlap_chars=150)
    with_overlap = _metrics(chunk_documents(docs, on), docs, on)
    # min_chars=0: otherwise a short final chunk is extended backwards, a (real) overlap of its own
    off = ChunkConfig(max_chars=300, overlap_chars=0, min_chars=0)
    without = _metrics(chunk_documents(docs, off), docs, off)
    assert with_overlap["overlap_pairs"].value > 0
    assert without["overlap_zero_frac"].value == 1.0  # silently disabled overlap collapses to zero
    assert with_overlap["overlap_zero_frac"].value < 1.0
    assert with_overlap["overlap_chars_p50"].value <= 150
    hist = with_overlap["overlap_zero_frac"].meta["histogram"]
    assert sum(hist.values()) == with_overlap["overlap_pairs"].value
    assert with_overlap["len_chars_max"].value <= 300


def test_length_distribution_values() -> None:
    docs = [Document("a", "", "x" * 10), Document("b", "", "word " * 39 + "word")]
    chunks = chunk_documents(docs, ChunkConfig(max_chars=1200))
    m = _metrics(chunks, docs, ChunkConfig())
    assert m["chunks"].value == 2
    assert m["len_chars_max"].value == 199 and m["len_chars_p50"].value == pytest.approx((10 + 199) / 2)
    assert m["len_tokens_max"].value == 40
    assert m["below_floor_frac"].value == 0.5  # the 10-character chunk is under the 32-character floor
    assert "overlap_zero_frac" not in m  # single-chunk documents: nothing to measure
