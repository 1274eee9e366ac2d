from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.ingest.loaders import load_corpora
from hoprag.records import Document

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="session")
def fixture_docs() -> list[Document]:
    """4 enterprise documents + 4 HotpotQA paragraphs in BEIR form."""
    return load_corpora([DATA / "ingest_docs.jsonl", DATA / "ingest_beir_corpus.jsonl"])
