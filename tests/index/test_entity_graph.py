"""The index-time entity graph: entities per chunk, the two sparse matrices, files, manifest, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.errors import IndexLoadError
from hoprag.index.entities import chunk_entities, title_key
from hoprag.index.entity_graph import GRAPH_DIR, GraphConfig, load_graph, save_graph
from hoprag.index.graph_build import build_entity_graph
from hoprag.index.store import IndexConfig, build_index, config_hash, load_index
from hoprag.ingest.chunking import ChunkConfig, chunk_document
from hoprag.records import Chunk, Document

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def hotpot():
    """The HotpotQA dev slice: 3 questions, 30 real Wikipedia paragraphs."""
    return import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"])


def _chunks(documents) -> list[Chunk]:
    return [c for d in documents for c in chunk_document(d, ChunkConfig())]


def test_chunk_entities_title_mentions_and_titles_inside_longer_names() -> None:
    text = 'Rush is a Canadian rock band. Their album "Counterparts" was released in October 1993 by Atlantic Records.'
    found = chunk_entities(text, title="Counterparts (album)", title_keys={"rush", "atlantic records"})
    # the chunk's own document title first, then the mentions, keyed by title_key
    assert list(found)[0] == "counterparts"
    assert found["counterparts"] == "title"
    assert found["rush"] == "title"  # names a document: a link target
    assert found["atlantic records"] == "title"
    assert found["october 1993"] == "date"
    assert found["canadian"] == "entity"
    assert "their" not in found  # opens a sentence and names nothing
    # a title inside a longer capitalised run counts: "Canadian Rush Tour" mentions rush
    assert chunk_entities("The Canadian Rush Tour began.", title_keys={"rush"}) == {
        "canadian rush tour": "entity", "rush": "title"}
    assert title_key("The Beatles (band)") == "beatles"
    # HotpotQA keeps HTML entities in some titles; the key reads them as a passage writes them
    assert title_key("Mitchells &amp; Butlers") == "mitchells & butlers"
    assert title_key('The &quot;Human&quot; Factor (1975 film)') == '"human" factor'


def test_graph_matrices_by_hand() -> None:
    docs = {
        "a": Document(id="a", title="Neil Peart", text="Neil Peart was the drummer of Rush. He wrote for Modern Drummer."),
        "b": Document(id="b", title="Rush (band)", text="Rush was formed in Toronto. Neil Peart joined in 1974."),
        "c": Document(id="c", title="Toronto", text="Toronto is the capital of Ontario."),
    }
    chunks = _chunks(docs.values())
    graph, dropped = build_entity_graph(chunks, docs, GraphConfig(min_cap=2, max_share=0.01))
    index = graph.entity_index
    column = {c.doc_id: i for i, c in enumerate(chunks)}
    dense = graph.entity_chunk.toarray()
    # neil peart: title of a, mentioned in b; rush: mentioned in a, title of b; toronto: b and c
    assert dense[index["neil peart"]].tolist() == [1, 1, 0]
    assert dense[index["rush"]].tolist() == [1, 1, 0]
    assert dense[index["toronto"]].tolist() == [0, 1, 1]
    assert dense[index["ontario"]].tolist() == [0, 0, 1]
    assert graph.kinds[index["rush"]] == "title"
    assert dropped == 0
    # chunk links through entities held by 2 chunks: each pair gets 1 / (2 - 1) per shared entity
    links = graph.chunk_chunk.toarray()
    a, b, c = column["a"], column["b"], column["c"]
    assert links[a, b] == links[b, a] == 2.0  # neil peart and rush
    assert links[b, c] == 1.0  # toronto
    assert links[a, c] == 0.0 and np.all(np.diag(links) == 0)


def test_common_entities_are_dropped_by_the_cap() -> None:
    docs = {f"d{i}": Document(id=f"d{i}", title=f"Town {i}", text=f"Town {i} lies in Gondor near Minas {i}.")
            for i in range(4)}
    graph, dropped = build_entity_graph(_chunks(docs.values()), docs, GraphConfig(min_cap=3, max_share=0.01))
    # "Gondor", and the runs "Town" and "Minas" (a digit ends a run), are in 4 chunks: over the cap of 3
    assert not {"gondor", "town", "minas"} & set(graph.entity_index)
    assert dropped == 3
    assert "town 2" in graph.entity_index  # the document title, in one chunk


def test_graph_is_deterministic_and_round_trips(tmp_path: Path, hotpot) -> None:
    docs = {d.id: d for d in hotpot.documents}
    first, _ = build_entity_graph(_chunks(hotpot.documents), docs)
    second, _ = build_entity_graph(_chunks(hotpot.documents), docs)
    assert first.keys == second.keys and first.kinds == second.kinds
    assert (first.entity_chunk != second.entity_chunk).nnz == 0
    assert (first.chunk_chunk != second.chunk_chunk).nnz == 0
    size = save_graph(first, tmp_path / "g")
    assert size == sum(p.stat().st_size for p in (tmp_path / "g").iterdir())
    loaded = load_graph(tmp_path / "g")
    assert loaded.keys == first.keys and tuple(loaded.chunk_ids) == first.chunk_ids
    assert (loaded.entity_chunk != first.entity_chunk).nnz == 0
    assert (loaded.chunk_chunk != first.chunk_chunk).nnz == 0


def test_index_builds_the_graph_records_it_and_loads_it_lazily(tmp_path: Path, hotpot) -> None:
    manifest = build_index(hotpot.documents, tmp_path / "idx")
    info = manifest.graph
    assert info is not None and info.chunks == manifest.chunk_count
    assert info.entities > 0 and info.mentions >= info.entities and info.bytes > 0 and info.build_seconds >= 0
    assert (tmp_path / "idx" / GRAPH_DIR / "entity_chunk.indptr.npy").is_file()
    index = load_index(tmp_path / "idx")
    assert index._graph is None  # nothing read until first use
    graph = index.graph
    assert graph is not None and len(graph.keys) == info.entities
    assert list(graph.chunk_ids) == [c.id for c in index.chunks.values()]
    # a question names entities of the graph by shape ("Counterparts") and by its words ("neil peart",
    # lowercase here, meets the document title); longest first, no shorter key inside a longer one
    rows = graph.question_entities('Which band released "Counterparts" with drummer neil peart of the Modern Drummer Hall of Fame?')
    named = [graph.keys[r] for r in rows]
    assert {"counterparts", "neil peart", "modern drummer hall of fame"} <= set(named)
    assert "modern drummer" not in named


def test_graph_off_and_hash(tmp_path: Path, hotpot) -> None:
    manifest = build_index(hotpot.documents, tmp_path / "plain", IndexConfig(graph=False))
    assert manifest.graph is None and not (tmp_path / "plain" / GRAPH_DIR).exists()
    assert load_index(tmp_path / "plain").graph is None
    # the default (graph on) keeps the hash indexes had before the graph existed; off is another build
    assert config_hash(IndexConfig()) != config_hash(IndexConfig(graph=False))


def test_a_damaged_graph_is_an_index_load_error(tmp_path: Path, hotpot) -> None:
    build_index(hotpot.documents, tmp_path / "idx")
    (tmp_path / "idx" / GRAPH_DIR / "entities.json").write_text("[[", encoding="utf-8")
    index = load_index(tmp_path / "idx")
    with pytest.raises(IndexLoadError, match="entity graph unreadable.*Fix: rebuild the index"):
        _ = index.graph


def test_the_graph_opens_memory_mapped_with_the_index_positions_as_its_columns(tmp_path: Path, hotpot) -> None:
    build_index(hotpot.documents, tmp_path / "idx")
    graph = load_index(tmp_path / "idx").graph
    # plain ndarray views of the maps (a walk's gathers skip np.memmap's Python-level indexing)
    for array in (graph.mentions.indices, graph.links.indptr, graph.mentioned.indptr):
        assert type(array) is np.ndarray and isinstance(array.base, np.memmap) and not array.flags.writeable
    # the ids file and the index's own positions give the same column order, so the index maps ids
    # to columns without a dictionary of every id
    stored = load_graph(tmp_path / "idx" / GRAPH_DIR)
    assert tuple(graph.chunk_ids) == tuple(stored.chunk_ids)
    assert all(graph.position(c) == i for i, c in enumerate(stored.chunk_ids))
    assert graph.position("no-such-chunk") is None
    # the transpose written at build time is the transpose of the mentions
    assert (graph.entity_chunk.T.tocsr() != graph.mentioned.to_scipy()).nnz == 0
    assert list(graph.mentioned.row(0)) == sorted(np.flatnonzero(graph.entity_chunk.toarray()[:, 0]))


def test_a_format_1_graph_is_refused_with_the_rebuild_command(tmp_path: Path, hotpot) -> None:
    import json

    from scipy import sparse

    build_index(hotpot.documents, tmp_path / "idx")
    directory = tmp_path / "idx" / GRAPH_DIR
    graph = load_graph(directory)
    for path in directory.glob("*.npy"):
        path.unlink()
    sparse.save_npz(directory / "entity_chunk.npz", graph.entity_chunk, compressed=False)
    with pytest.raises(IndexLoadError, match="format 1.*Fix: rebuild the index"):
        load_graph(directory)
    manifest_path = tmp_path / "idx" / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    del manifest["graph"]["format"]  # what a manifest written before format 2 holds
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexLoadError, match="format 1; this version reads format 2.*Fix: rebuild the index"):
        _ = load_index(tmp_path / "idx").graph
