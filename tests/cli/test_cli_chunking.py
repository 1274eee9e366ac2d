"""hoprag index --chunking paragraph: the chunker mode and budget reach the index and its manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.index.store import load_index
from hoprag.ingest.chunking import paragraph_spans, sentence_spans, token_count
from hoprag.ingest.loaders import load_documents

pytestmark = pytest.mark.integration
CORPUS = Path(__file__).parents[2] / "data" / "enterprise" / "corpus.jsonl"


def test_index_with_paragraph_chunking(tmp_path: Path) -> None:
    try:
        main(["index", str(CORPUS), "--out", str(tmp_path / "ix"), "--chunking", "paragraph", "--chunk-tokens", "60", "--quiet"])
    except SystemExit as done:
        assert done.code in (0, None)
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["chunk"]["mode"] == "paragraph" and manifest["config"]["chunk"]["max_tokens"] == 60
    index = load_index(tmp_path / "ix")
    docs = {d.id: d for d in load_documents(CORPUS)}
    for chunk in index.chunks.values():
        text = docs[chunk.doc_id].text
        assert chunk.text == text[chunk.start : chunk.end] and token_count(chunk.text) <= 60
        # a chunk ends where a paragraph or a sentence ends, never inside one
        assert chunk.end in {b for _, b in paragraph_spans(text)} | {b for _, b in sentence_spans(text)}
