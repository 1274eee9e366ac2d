"""The pruned BM25 search (MaxScore over the score matrix's columns) returns what scoring every chunk
returns: the same chunks, the same float32 scores bit for bit, the same order among ties, under
filters, exclusions and clearances."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from hoprag.index.bm25 import BM25Retriever
from hoprag.ingest.chunking import chunk_documents
from hoprag.ingest.loaders import load_corpora
from hoprag.records import Document

pytestmark = pytest.mark.unit
DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def corpus() -> tuple[BM25Retriever, list[str]]:
    """The enterprise corpus and the HotpotQA sample's paragraphs, each paragraph also copied twice
    under another id (so many chunks tie), with the samples' questions as queries."""
    docs = list(load_corpora([DATA / "enterprise" / "corpus.jsonl"]))
    sample = json.loads((DATA / "hotpotqa" / "hotpot_dev_distractor_migres_part1.json").read_text(encoding="utf-8"))
    questions = [case["question"] for case in sample][:60]
    for case in sample[:40]:
        for title, sentences in case["context"]:
            for copy in range(3):
                docs.append(Document(id=f"{case['_id']}/{title}~{copy}", title=title, text="".join(sentences),
                                     acl="public" if copy else "internal"))
    unique = {d.id: d for d in docs}
    docs = list(unique.values())
    questions += [json.loads(line)["query"] for line in (DATA / "enterprise" / "cases.jsonl").read_text().splitlines()]
    return BM25Retriever(chunk_documents(docs), docs), questions


def _both(bm: BM25Retriever, query: str, k: int, **kwargs):
    model = bm.model
    model.prune_min_docs = 10**12  # every chunk scored
    dense = bm.retrieve(query, k, **kwargs)
    model.prune_min_docs = 0  # pruned whenever it can be
    pruned = bm.retrieve(query, k, **kwargs)
    return dense, pruned


def _same(dense, pruned) -> None:
    assert [(h.chunk_id, h.rank) for h in pruned] == [(h.chunk_id, h.rank) for h in dense]
    assert [np.float32(h.score).tobytes() for h in pruned] == [np.float32(h.score).tobytes() for h in dense]


@pytest.mark.parametrize("k", [1, 3, 10, 50])
def test_pruned_search_equals_scoring_every_chunk(corpus, k: int) -> None:
    bm, questions = corpus
    rng = random.Random(k)
    words = [w for q in questions for w in q.split()]
    queries = questions + [" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) for _ in range(80)]
    queries += [f"{q} {q.split()[-1]}" for q in questions[:20]]  # a term repeated
    for query in queries:
        _same(*_both(bm, query, k))


def test_pruned_search_keeps_filters_exclusions_and_clearance(corpus) -> None:
    bm, questions = corpus
    for i, query in enumerate(questions):
        dense, _ = _both(bm, query, 10)
        exclude = [h.chunk_id for h in dense[: i % 4]]
        for kwargs in ({"exclude": exclude}, {"clearance": "public"}, {"clearance": "internal", "exclude": exclude},
                       {"filters": {"acl": "public"}}):
            _same(*_both(bm, query, 10, **kwargs))


def test_pruning_leaves_out_chunks(corpus) -> None:
    """The bound does prune: on many questions fewer chunks are scored than hold a query term."""
    bm, questions = corpus
    model = bm.model
    model.prune_min_docs = 0
    smaller = 0
    for query in questions:
        ids = bm.token_ids(query)
        found = model.candidates(ids, 10, lambda positions: None)
        if found is None:  # no floor: fewer than k chunks among the seeds
            continue
        holding = np.unique(np.concatenate([model.column(t)[0] for t in ids]))
        assert np.isin(found[0], holding).all()
        smaller += found[0].size < holding.size
    assert smaller >= len(questions) // 3


def test_a_column_that_cannot_bound_falls_back(corpus) -> None:
    bm, questions = corpus
    model = bm.model
    model.prune_min_docs = 0
    ids = bm.token_ids(questions[0])
    model._bounds[ids[0]] = -1.0  # as for a negative score (another BM25 variant's idf)
    try:
        assert model.candidates(ids, 10, lambda positions: None) is None
        _same(*_both(bm, questions[0], 10))
    finally:
        model._bounds.pop(ids[0])


def test_a_damaged_matrix_is_a_load_error_on_the_pruned_path_too(corpus) -> None:
    from hoprag.errors import IndexLoadError
    from hoprag.index.bm25_arrays import BM25Arrays

    bm, questions = corpus
    m = bm.model
    indices = np.asarray(m.scores["indices"]) + m.scores["num_docs"]  # positions past the last chunk
    damaged = BM25Arrays(m.scores["data"], indices, m.scores["indptr"], m.scores["num_docs"], m.vocab_dict, m.params)
    damaged.prune_min_docs = 0
    with pytest.raises(IndexLoadError, match="score matrix is damaged.*Fix: run `hoprag index"):
        damaged.candidates(bm.token_ids(questions[0]), 10, lambda positions: None)


def test_a_damaged_column_leaves_the_scratch_array_clean(corpus) -> None:
    """A column past the last chunk fails after an earlier column was scattered: the scratch sums are put
    back to zero anyway, so a long-lived process (the service) keeps scoring exactly."""
    from hoprag.errors import IndexLoadError
    from hoprag.index.bm25_arrays import BM25Arrays

    bm, questions = corpus
    m = bm.model
    ids = list(dict.fromkeys(bm.token_ids(questions[0])))
    strongest = max(ids, key=lambda t: float(m.column(t)[1].max()))  # essential, and scattered first below
    indptr = np.asarray(m.scores["indptr"])
    indices = np.array(m.scores["indices"])
    for tid in ids:
        if tid != strongest:
            indices[indptr[tid]:indptr[tid + 1]] += m.scores["num_docs"]
    damaged = BM25Arrays(m.scores["data"], indices, m.scores["indptr"], m.scores["num_docs"], m.vocab_dict, m.params)
    damaged.prune_min_docs = 0
    damaged.rest_share = 0.0  # every term essential: the damaged ones are scattered after the strongest
    with pytest.raises(IndexLoadError, match="score matrix is damaged"):
        damaged.candidates([strongest, *[t for t in ids if t != strongest]], 10, lambda positions: None)
    scratch = getattr(damaged._local, "scratch", None)
    assert scratch is not None and not scratch.any()
