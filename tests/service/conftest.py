"""Fixtures for the service: an enterprise index, a token file, a real uvicorn on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import ENTERPRISE, TOKENS, LiveServer, start_service


@pytest.fixture(scope="session")
def enterprise_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hoprag.index.store import build_index
    from hoprag.ingest.loaders import load_corpora

    out = tmp_path_factory.mktemp("service-index") / "index"
    build_index(load_corpora([ENTERPRISE / "corpus.jsonl"]), out)
    return out


@pytest.fixture(scope="session")
def tokens_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("service-tokens") / "tokens.yaml"
    path.write_text(
        "tokens:\n"
        f"  - {{token: {TOKENS['public']}, name: pat, clearance: public}}\n"
        f"  - {{token: {TOKENS['internal']}, name: ines, clearance: internal}}\n"
        f"  - {{token: {TOKENS['restricted']}, name: rita, clearance: restricted}}\n"
        f"  - {{token: {TOKENS['reader']}, name: ro, clearance: internal, can_write: false}}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def server(enterprise_index: Path, tokens_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The service over the enterprise index with a token file (anonymous callers: public, read-only)."""
    store = tmp_path_factory.mktemp("service-store") / "store.db"
    yield from start_service(enterprise_index, store, tokens=tokens_file, run_id="svc-feedback")
