"""The graph builder against the graph's definition: entities per chunk by :func:`chunk_entities`, the
matrices by scipy's sparse product, compared array for array (dtypes and float32 bits included)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from hoprag.datasets.importers import import_dataset
from hoprag.index.entities import chunk_entities, title_key
from hoprag.index.entity_graph import GraphConfig
from hoprag.index.graph_build import build_entity_graph
from hoprag.ingest.chunking import ChunkConfig, chunk_document

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data"


def reference_graph(chunks, documents, config: GraphConfig):
    """keys, kinds and the three matrices (scipy CSR) straight from the definition."""
    titles = {title_key(d.title) for d in documents.values() if d.title} - {""}
    per_chunk = [chunk_entities(c.text, title=documents[c.doc_id].title, title_keys=titles) for c in chunks]
    first_kind: dict[str, str] = {}
    df: dict[str, int] = {}
    for found in per_chunk:
        for key, kind in found.items():
            first_kind.setdefault(key, kind)
            df[key] = df.get(key, 0) + 1
    cap = max(config.min_cap, int(config.max_share * len(chunks)))
    keys = sorted(k for k, f in df.items() if f <= cap)
    row = {k: i for i, k in enumerate(keys)}
    cells = sorted((row[k], j) for j, found in enumerate(per_chunk) for k in found if k in row)
    rows, cols = (np.array(x, dtype=np.int64) for x in zip(*cells))
    mentions = sparse.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, cols)), shape=(len(keys), len(chunks)))
    freq = np.diff(mentions.indptr)
    weights = np.where((freq >= 2) & (freq <= config.link_max_chunks), 1.0 / np.maximum(freq - 1, 1), 0.0).astype(np.float32)
    links = (mentions.T.tocsr() @ (sparse.diags(weights) @ mentions)).tocsr()
    links.setdiag(0)
    links.eliminate_zeros()
    links.sort_indices()
    kinds = tuple(first_kind[k] for k in keys)
    return tuple(keys), kinds, mentions, mentions.T.tocsr(), links.astype(np.float32), sum(f > cap for f in df.values())


@pytest.mark.parametrize("config", [GraphConfig(), GraphConfig(min_cap=2, max_share=0.001, link_max_chunks=4)])
def test_the_builder_makes_the_graph_the_definition_gives(config: GraphConfig) -> None:
    documents = [
        *import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"]).documents,
        *import_dataset("musique", [DATA / "musique_dev_slice.jsonl"]).documents,
        *import_dataset("2wiki", [DATA / "2wiki_dev_slice.json"]).documents,
    ]
    by_id = {d.id: d for d in documents}
    chunks = [c for d in by_id.values() for c in chunk_document(d, ChunkConfig())]
    graph, dropped = build_entity_graph(chunks, by_id, config)
    keys, kinds, mentions, mentioned, links, ref_dropped = reference_graph(chunks, by_id, config)
    assert graph.keys == keys and graph.kinds == kinds and dropped == ref_dropped
    assert links.nnz > 0 and ref_dropped > 0  # the fixture exercises links and the cap
    for built, expected in ((graph.mentions, mentions), (graph.mentioned, mentioned), (graph.links, links)):
        expected.sort_indices()
        for name in ("indptr", "indices"):
            got, want = getattr(built, name), getattr(expected, name)
            assert got.dtype == want.dtype == np.int32 and np.array_equal(got, want), name
        assert built.shape == expected.shape
    assert graph.mentions.data is None and graph.mentioned.data is None
    assert graph.links.data.dtype == np.float32
    assert graph.links.data.tobytes() == links.data.tobytes()  # the same float32 sums, bit for bit
