"""An index's analyser folds accents (the manifest says so), queries follow it, and an index built
before the field existed reads as unfolded and works as it did. On a real MuSiQue question whose
name is spelt without its diacritics: 'Aschenbrodel' for the passage titled 'Aschenbrödel'."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hoprag.index.store import IndexConfig, build_index, config_hash, load_index
from hoprag.pipeline.text import Analyzer
from hoprag.records import Document

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data"
#: the hash every default index had before the analyser recorded ``fold_accents`` (an old build's manifest)
UNFOLDED_DEFAULT_HASH = "c77f4df13203aa00"


@pytest.fixture(scope="module")
def case() -> dict:
    lines = (DATA / "musique_dev_slice.jsonl").read_text(encoding="utf-8").splitlines()
    return next(json.loads(line) for line in lines if "Aschenbrodel" in line)


@pytest.fixture(scope="module")
def docs(case: dict) -> list[Document]:
    return [Document(id=f"p{p['idx']}", title=p["title"], text=p["paragraph_text"]) for p in case["paragraphs"]]


@pytest.fixture(scope="module")
def indexes(docs: list[Document], tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    root = tmp_path_factory.mktemp("fold")
    built = {}
    for fold in (True, False):
        build_index(docs, root / str(fold), IndexConfig(fold_accents=fold))
        built[fold] = root / str(fold)
    return built


def test_new_indexes_fold_and_say_so(indexes: dict[bool, Path]) -> None:
    assert IndexConfig().fold_accents is True
    manifest = json.loads((indexes[True] / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["fold_accents"] is True
    assert load_index(indexes[True]).bm25.tokenizer.fold_accents is True
    assert load_index(indexes[False]).bm25.tokenizer.fold_accents is False


def test_aschenbrodel_finds_aschenbrodel_with_its_diaeresis(indexes: dict[bool, Path], case: dict) -> None:
    index = load_index(indexes[True])
    hits = index.bm25.retrieve("Aschenbrodel", 3)
    assert [index.documents[h.doc_id].title for h in hits] == ["Aschenbrödel"]
    # the chunk and its offsets are the original text's: only the analysed copy was folded
    chunk = index.chunks[hits[0].chunk_id]
    document = index.documents[hits[0].doc_id]
    assert chunk.text.startswith("Aschenbrödel") and document.text[chunk.start : chunk.end] == chunk.text
    assert index.bm25.retrieve("Aschenbrödel", 3) == hits
    # the whole question: the passage is now a first-hop hit, where the unfolded index misses it
    question = case["question"]
    assert "Aschenbrödel" in [index.documents[h.doc_id].title for h in index.bm25.retrieve(question, 3)]
    unfolded = load_index(indexes[False])
    assert unfolded.bm25.retrieve("Aschenbrodel", 3) == []
    assert "Aschenbrödel" not in [unfolded.documents[h.doc_id].title for h in unfolded.bm25.retrieve(question, 3)]


def test_the_engines_term_weights_see_the_folded_term(indexes: dict[bool, Path]) -> None:
    """The multi-hop engine's IDF reads document frequencies from the BM25 matrix by its own
    (folded) analysis of the question: folded at build, the name is found in one passage."""
    (term,) = Analyzer()("Aschenbrodel")
    assert load_index(indexes[True]).chunks.term_stats.df(term) == 1
    assert load_index(indexes[False]).chunks.term_stats.df(term) == 0


def test_an_index_built_before_the_field_reads_as_unfolded(indexes: dict[bool, Path], tmp_path: Path) -> None:
    """A manifest without ``fold_accents`` (as every earlier build wrote it) loads, keeps its config
    hash, and is queried unfolded, as it was built."""
    assert config_hash(IndexConfig(fold_accents=False)) == UNFOLDED_DEFAULT_HASH
    old = tmp_path / "old"
    shutil.copytree(indexes[False], old)
    manifest = json.loads((old / "manifest.json").read_text(encoding="utf-8"))
    del manifest["config"]["fold_accents"]
    assert manifest["config_hash"] == UNFOLDED_DEFAULT_HASH
    (old / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    index = load_index(old)
    assert index.manifest.config.fold_accents is False and index.bm25.tokenizer.fold_accents is False
    assert [index.documents[h.doc_id].title for h in index.bm25.retrieve("Aschenbrödel", 1)] == ["Aschenbrödel"]
    assert index.bm25.retrieve("Aschenbrodel", 3) == []
