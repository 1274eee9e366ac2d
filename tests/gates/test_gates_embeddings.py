"""Embedding QA on real vectors (model2vec static model) and a real WordPiece tokenizer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hoprag.gates.checks.embeddings import (EmbedOutput, centroid_drift, ks_statistic, oov_share,
                                            reference_sample, unknown_token_ids)
from hoprag.gates.embedding_source import HashingEmbedder
from hoprag.gates.hooks import StageRunner
from hoprag.ingest.loaders import load_documents

ROOT = Path(__file__).resolve().parents[2]


def _metrics(out, ctx=None):
    return {m.name: m for m in StageRunner("r", lambda m: None, ctx or {}).observe("embed", out)}


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return [d.text for d in load_documents(ROOT / "data" / "enterprise" / "corpus.jsonl")]


@pytest.fixture(scope="module")
def static_vectors(texts: list[str]) -> np.ndarray:
    pytest.importorskip("model2vec")
    pytest.importorskip("static_model")
    from hoprag.gates.embedding_source import make_embedder

    return make_embedder("static").embed(texts + [""])  # the empty text reaches the encoder


@pytest.mark.slow
def test_static_model_norms_and_zero_norm(static_vectors: np.ndarray) -> None:
    m = _metrics(EmbedOutput(static_vectors))
    assert m["vectors"].value == len(static_vectors)
    assert m["zero_norm_frac"].value == pytest.approx(1 / len(static_vectors))
    assert m["norm_p50"].value == pytest.approx(1.0, abs=1e-5)
    assert m["nonfinite_frac"].value == 0.0


@pytest.mark.slow
def test_drift_against_reference_batch(static_vectors: np.ndarray, texts: list[str]) -> None:
    ref = reference_sample(static_vectors[:-1])
    same = _metrics(EmbedOutput(static_vectors[:-1]), {"reference": ref})
    assert same["centroid_drift"].value == pytest.approx(0.0, abs=1e-6)
    assert same["pairwise_sim_ks"].value == 0.0
    other = HashingEmbedder(dim=static_vectors.shape[1]).embed(texts)  # another "model", same dimension
    moved = _metrics(EmbedOutput(other), {"reference": ref})
    assert moved["centroid_drift"].value > 0.05 and moved["pairwise_sim_ks"].value > 0.2
    wrong_dim = _metrics(EmbedOutput(HashingEmbedder(dim=16).embed(texts)), {"reference": ref})
    assert wrong_dim["centroid_drift"].value == 1.0


@pytest.mark.unit
def test_oov_share_with_wordpiece_unk() -> None:
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer

    from hoprag.index.embedders import MINILM_TOKENIZER

    tok = Tokenizer.from_file(str(MINILM_TOKENIZER))
    unknown, special = unknown_token_ids(tok)
    assert tok.token_to_id("[UNK]") in unknown and tok.token_to_id("[CLS]") in special
    ids = [e.ids for e in tok.encode_batch(["retention policy", "ሰላም 𓀀 policy"])]
    share, total = oov_share(ids, unknown, special)
    # "retention policy" -> 2 pieces; "ሰላም 𓀀 policy" -> [UNK] [UNK] policy: 2 unknown of 5
    assert (share, total) == (pytest.approx(2 / 5), 5)
    m = _metrics(EmbedOutput(np.eye(2, dtype=np.float32), token_ids=ids, unknown_ids=unknown, ignore_ids=special))
    assert m["oov_frac"].value == pytest.approx(2 / 5)


@pytest.mark.unit
def test_math_helpers() -> None:
    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert centroid_drift(a, a) == pytest.approx(0.0)
    assert centroid_drift(a, -a) == pytest.approx(2.0)
    assert ks_statistic(np.array([0.0, 1.0]), np.array([2.0, 3.0])) == 1.0
    nan_batch = np.array([[np.nan, 1.0], [1.0, 0.0], [0.0, 0.0]])
    m = _metrics(nan_batch)
    assert m["nonfinite_frac"].value == pytest.approx(1 / 3) and m["zero_norm_frac"].value == pytest.approx(1 / 3)
