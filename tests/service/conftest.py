"""Fixtures for the service: an enterprise index, a token file, a real uvicorn on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"

TOKENS = {
    "public": "tok-public-0123456789",
    "internal": "tok-internal-0123456789",
    "restricted": "tok-restricted-0123456789",
    "reader": "tok-reader-0123456789",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@dataclass
class LiveServer:
    url: str
    app: object
    store_path: Path

    @property
    def state(self):
        return self.app.state.hoprag

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKENS[who]}"}


class _Uvicorn:
    def __init__(self, app: object) -> None:
        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False,
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_service(index: Path, store: Path, **options: object) -> Iterator[LiveServer]:
    from hoprag.service.app import ServiceConfig, create_app

    config = ServiceConfig(index_dir=index, store=str(store), thresholds=ROOT / "thresholds.yaml", **options)
    app = create_app(config)
    with _Uvicorn(app) as url:
        yield LiveServer(url=url, app=app, store_path=store)
    app.state.hoprag.store.close()
    app.state.hoprag.executor.shutdown(wait=False)


@pytest.fixture(scope="module")
def server(enterprise_index: Path, tokens_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The service over the enterprise index with a token file (anonymous callers: public, read-only)."""
    store = tmp_path_factory.mktemp("service-store") / "store.db"
    yield from start_service(enterprise_index, store, tokens=tokens_file, run_id="svc-feedback")


def read_sse(response) -> list[tuple[str, dict]]:
    """(event, data) pairs of a Server-Sent Events response, in order."""
    import json

    events, name, data = [], "message", ""
    for line in response.iter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif line == "" and data:
            events.append((name, json.loads(data)))
            name, data = "message", ""
    return events
