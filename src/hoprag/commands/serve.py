"""The ``serve`` command: the API and the page over one index (``pip install 'hoprag[serve]'``)."""

from __future__ import annotations

import ipaddress
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from hoprag.cli_engine import engine_options
from hoprag.commands import ACL_LEVELS_OPT

err = Console(stderr=True)

SERVE_TIMEOUT_OPT = typer.Option(20.0, "--llm-timeout", min=0.1, help="seconds one model call may take")
#: threads answering questions in each worker process unless --threads says otherwise
DEFAULT_THREADS = 16
STORE_HELP = "run store URL (postgresql://… or a SQLite path); default $HOPRAG_STORE or .hoprag/hoprag.db"


class McpTransport(str, Enum):
    """How ``serve --mcp`` speaks MCP: to the process that started it, or over HTTP at /mcp."""

    stdio = "stdio"
    http = "http"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def register(app: typer.Typer) -> None:
    @app.command("serve")
    @engine_options(("llm", "base_url", "llm_timeout"), options={"llm_timeout": SERVE_TIMEOUT_OPT})
    def serve_cmd(
        index_dir: str = typer.Argument(..., help="index directory, or a postgresql://…?index=NAME URL"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        host: str = typer.Option("127.0.0.1", "--host", help="address to bind (non-loopback needs --tokens)"),
        allow_host: Optional[list[str]] = typer.Option(
            None, "--allow-host", metavar="NAME",
            help="a Host name the server answers to besides localhost and the loopback addresses "
                 "(repeatable; the name a proxy or your browser uses to reach it)"),
        port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port"),
        synth_only: bool = typer.Option(False, "--synth-only", help="the model only answers (streamed); planning, "
                                        "expansion and judging stay offline, a model call or two fewer per hop"),
        tokens: Optional[Path] = typer.Option(None, "--tokens", help="tokens.yaml: bearer tokens → caller, clearance"),
        clearance: Optional[str] = typer.Option(
            None, "--clearance", metavar="LEVEL",
            help="clearance of the callers of a server without --tokens (default $HOPRAG_CLEARANCE, else the "
                 "lowest level: public); with --tokens each token's entry sets it"),
        acl_levels: Optional[str] = ACL_LEVELS_OPT,
        unlabelled: Optional[str] = typer.Option(None, "--unlabelled",
                                                 help="level of documents with no acl class (default: above public)"),
        run_id: Optional[str] = typer.Option(None, "--run-id",
                                             help="run that feedback is recorded under (default: the run that built the index)"),
        thresholds: Optional[Path] = typer.Option(None, "--thresholds", help="thresholds YAML for the run browser"),
        cases: Optional[Path] = typer.Option(None, "--cases", help="cases.jsonl: evaluation reports in the run browser"),
        request_timeout: float = typer.Option(30.0, "--request-timeout", min=0.1, help="seconds one request may take"),
        workers: str = typer.Option(
            "1", "--workers", metavar="N|auto",
            help="worker processes answering on the one port (auto: one per usable CPU); each maps the same "
                 "index files and writes to the same store"),
        threads: Optional[int] = typer.Option(None, "--threads", min=1, max=256,
                                              help="threads answering questions in each worker process (default 16)"),
        mcp: Optional[McpTransport] = typer.Option(
            None, "--mcp", help="serve MCP tools (search, ask, get_document, evaluate) instead of the API: stdio "
            "(for an agent that starts hoprag) or http (streamable HTTP at /mcp); pip install 'hoprag[mcp]'"),
        spec=None,  # the EngineSpec hoprag.cli_engine.engine_options makes of the engine flags
    ) -> None:
        """Serve the API (/openapi.json), the OpenAI-compatible /v1/chat/completions and the page: ask with
        live hops, citations, feedback, runs; or, with --mcp, hoprag's tools to MCP clients."""
        from hoprag.errors import ConfigError

        processes, threads = _processes_and_threads(workers, threads)
        if mcp is not None and processes > 1:
            raise ConfigError("--mcp serves from one process: an MCP session lives in the process that opened it. "
                              "Fix: drop --workers (or pass --workers 1)")
        if mcp is not None:
            try:
                import mcp as _sdk  # noqa: F401
            except ImportError:
                raise ConfigError("hoprag serve --mcp needs the MCP Python SDK. Fix: pip install 'hoprag[mcp]'") from None
            if mcp is McpTransport.stdio and tokens is not None:
                raise ConfigError("--tokens names the callers of an HTTP server; an MCP client over stdio is the user "
                                  "who started it and sends no token. Fix: drop --tokens, or pass --mcp http")

        if not is_loopback(host) and tokens is None:
            raise ConfigError(f"refusing to bind {host}, which is not a loopback address, without a token file. "
                              "Fix: pass --tokens tokens.yaml, or bind --host 127.0.0.1")
        if synth_only and spec.llm in ("", "offline"):
            raise ConfigError("--synth-only needs a model to answer with: add --llm openai:MODEL (or llamacpp:PATH.gguf)")
        try:
            import fastapi  # noqa: F401
            import uvicorn
        except ImportError:
            raise ConfigError("hoprag serve needs FastAPI and uvicorn. Fix: pip install 'hoprag[serve]'") from None
        from hoprag.service.address import check_listen_address

        if mcp is not McpTransport.stdio:
            check_listen_address(host, port)  # before the index is loaded and "serving on" is said
        # --base-url was checked where it entered the engine spec (LLMSettings, hoprag.llm.base_url)
        from hoprag.service.app import ServiceConfig, create_app, load_state

        if synth_only:  # the model only writes the answer: every other role stays offline
            spec = spec.replace(llm="offline", synth_llm=spec.llm)
        config = ServiceConfig(index_dir=index_dir, store=store, tokens=tokens, clearance=clearance, host=host,
                               allow_hosts=tuple(allow_host or ()),
                               acl_levels=acl_levels, unlabelled=unlabelled, engine=spec, run_id=run_id,
                               thresholds=thresholds, cases=cases, request_timeout=request_timeout, threads=threads)
        application = create_app(config) if mcp is None and processes == 1 else None
        state = application.state.hoprag if application is not None else load_state(config)
        from hoprag.service.access import access_rule
        from hoprag.service.guard import server_options

        hidden = len(state.index.documents) - len(state.pool.view(state.config.clearance).documents)
        err.print(access_rule(state) if mcp is not McpTransport.stdio else
                  f"callers: the MCP client that started this server, at clearance '{state.config.clearance}'", markup=False)
        if hidden and state.tokens is None:
            err.print(f"[yellow]note:[/] {hidden} of {len(state.index.documents)} documents are above the "
                      f"'{state.config.clearance}' clearance of this server's callers"
                      + (" (documents without an acl class count as "
                         f"'{state.policy.unlabelled}'; --unlabelled public shows them)" if state.policy.unlabelled != "public" else ""))
        if mcp is not None:
            _serve_mcp(state, mcp, host, port)
            return
        if processes > 1:
            from hoprag.service.address import bind_listening_socket
            from hoprag.service.processes import serve_processes

            listening = bind_listening_socket(host, port)  # bound before it is said: the workers accept on it
            err.print(f"hoprag serving {state.index.location} on http://{host}:{port}/ · {processes} worker processes "
                      f"· feedback → run {state.store.feedback_run} · store {state.store.store.display_url}")
            serve_processes(state, listening, processes, say=lambda text: err.print(f"note: {text}", markup=False))
            return
        err.print(f"hoprag serving {state.index.location} on http://{host}:{port}/ · feedback → run {state.store.feedback_run} "
                  f"· store {state.store.store.display_url}")
        uvicorn.run(application, host=host, port=port, **server_options())


def _processes_and_threads(workers: str, threads: Optional[int]) -> tuple[int, int]:
    """Worker processes and answering threads per process of ``--workers`` and ``--threads``.

    The last release's ``--workers N`` counted threads. For one release a count above the usable CPUs
    given without ``--threads`` is read that way (more processes than cores add no throughput), with a
    note naming the new spelling."""
    from hoprag.cpus import available_cores
    from hoprag.service.processes import parse_workers

    cores = available_cores()
    processes = parse_workers(workers, cores)
    if threads is None and processes > cores:
        err.print(f"[yellow]note:[/] --workers now counts processes; {processes} is more than the {cores} usable "
                  f"CPUs, so it is read as the last release's --workers: {processes} threads answering questions in "
                  f"one process, now spelt --threads {processes}. The old reading ends with the next release")
        return 1, processes
    return processes, threads or DEFAULT_THREADS


def _serve_mcp(state: object, transport: McpTransport, host: str, port: int) -> None:
    import uvicorn

    from hoprag.service.guard import server_options
    from hoprag.service.mcp_server import build_mcp, mcp_http_app

    server = build_mcp(state)
    try:
        if transport is McpTransport.stdio:  # stdout carries MCP only: everything said goes to stderr
            err.print(f"hoprag MCP server over stdio on {state.index.location}")
            server.run("stdio")
        else:
            err.print(f"hoprag MCP server on http://{host}:{port}/mcp over {state.index.location}")
            uvicorn.run(mcp_http_app(state, server), host=host, port=port, **server_options())
    finally:
        state.store.close()
        state.executor.shutdown(wait=False)
