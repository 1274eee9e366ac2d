from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.store import RunStore, StoreError, resolve_store_url

pytestmark = pytest.mark.unit


def test_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPRAG_STORE", raising=False)
    assert resolve_store_url() == "sqlite:///.hoprag/hoprag.db"
    monkeypatch.setenv("HOPRAG_STORE", "postgresql://u:p@db.example/hoprag")
    assert resolve_store_url() == "postgresql+psycopg://u:p@db.example/hoprag"
    assert resolve_store_url("runs.db") == "sqlite:///runs.db"
    assert resolve_store_url("postgres://h/db") == "postgresql+psycopg://h/db"


def test_default_store_is_created_under_dot_hoprag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPRAG_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    with RunStore() as store:
        store.create_run("r")
    assert (tmp_path / ".hoprag" / "hoprag.db").is_file()


def test_unreachable_postgres_is_a_clear_error_without_password() -> None:
    with pytest.raises(StoreError) as info:
        RunStore("postgresql://user:secret@127.0.0.1:1/hoprag")
    message = str(info.value)
    assert "cannot open the run store" in message and "secret" not in message and "HOPRAG_STORE" in message


def test_unknown_scheme_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot open the run store"):
        RunStore("nosuchdb://x/y")
