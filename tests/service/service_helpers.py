"""Helpers of the service tests: paths, tokens, a real uvicorn on a free loopback port, an SSE reader.

Kept out of conftest.py so tests import them by a name no other test folder uses.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
    def __init__(self, app: object, lifespan: str = "off") -> None:
        import uvicorn

        from hoprag.service.guard import server_options

        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, lifespan=lifespan, **server_options())
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


def model_engine(llm: str, *, base_url: str, timeout: float, synth_only: bool = False) -> object:
    """The engine spec of a service answering with ``llm`` at ``base_url`` (only the answer: ``synth_only``)."""
    from hoprag.llm.settings import LLMSettings
    from hoprag.pipeline.spec import EngineSpec

    roles = {"synth_llm": llm} if synth_only else {"llm": llm}
    return EngineSpec(**roles, llm_settings=LLMSettings(base_url=base_url, timeout=timeout))


def start_service(index: Path, store: Path, **options: object) -> Iterator[LiveServer]:
    from hoprag.service.app import ServiceConfig, create_app

    config = ServiceConfig(index_dir=index, store=str(store), thresholds=ROOT / "thresholds.yaml", **options)
    app = create_app(config)
    with _Uvicorn(app) as url:
        yield LiveServer(url=url, app=app, store_path=store)
    app.state.hoprag.store.close()
    app.state.hoprag.executor.shutdown(wait=False)


def start_mcp_http(index: Path, store: Path, **options: object) -> Iterator[tuple[str, object]]:
    """``hoprag serve --mcp http``'s app on a free loopback port: (the /mcp URL, the shared state)."""
    from hoprag.service.app import ServiceConfig, load_state
    from hoprag.service.mcp_server import build_mcp, mcp_http_app

    state = load_state(ServiceConfig(index_dir=index, store=str(store), **options))
    with _Uvicorn(mcp_http_app(state, build_mcp(state)), lifespan="on") as url:  # MCP's sessions need the lifespan
        yield url + "/mcp", state
    state.store.close()
    state.executor.shutdown(wait=False)


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
