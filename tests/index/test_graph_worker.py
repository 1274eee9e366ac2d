"""The entity graph built in a worker process: the same files as in process, byte for byte; a dead,
failing or unstartable worker is one clear error or an in-process build, and a failed build kills it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import hoprag.index.graph_worker as graph_worker
from hoprag.datasets.importers import import_dataset
from hoprag.errors import HopragError
from hoprag.index.graph_worker import GraphWorker
from hoprag.index.store import build_index, load_index
from hoprag.ingest.chunking import ChunkConfig, chunk_document

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def documents():
    return [
        *import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"]).documents,
        *import_dataset("musique", [DATA / "musique_dev_slice.jsonl"]).documents,
    ]


def graph_files(index_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((index_dir / "graph").iterdir())}


@pytest.fixture()
def worker_from(monkeypatch):
    """Sets the chunk count past which the graph moves to a worker; records every worker started."""
    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        process = real(*args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(graph_worker.subprocess, "Popen", popen)
    monkeypatch.setattr(graph_worker, "_cores", lambda: 2)

    def set_limit(chunks: int) -> list[subprocess.Popen]:
        monkeypatch.setattr(graph_worker, "WORKER_MIN_CHUNKS", chunks)
        return started

    return set_limit


def test_a_worker_writes_the_files_an_in_process_build_writes(documents, tmp_path, worker_from) -> None:
    started = worker_from(10**9)
    local = build_index(documents, tmp_path / "local")
    assert not started and local.build.graph_worker_peak_rss_mb is None
    started = worker_from(7)  # past the seventh chunk: the held ones go first, then the rest
    shipped = build_index(documents, tmp_path / "worker")
    assert len(started) == 1 and started[0].returncode == 0
    assert graph_files(tmp_path / "worker") == graph_files(tmp_path / "local")
    drop = {"build_seconds"}
    assert shipped.graph.model_dump(exclude=drop) == local.graph.model_dump(exclude=drop)
    assert shipped.build.graph_worker_peak_rss_mb > 0
    graph = load_index(tmp_path / "worker").graph
    assert graph is not None and graph.n_chunks == shipped.chunk_count


def test_a_script_without_a_main_guard_builds_with_a_worker(documents, tmp_path) -> None:
    """The worker re-imports nothing of the caller's program (``multiprocessing``'s spawn would re-run it)."""
    script = tmp_path / "build.py"
    script.write_text(textwrap.dedent(f"""
        import hoprag.index.graph_worker as graph_worker
        from hoprag.datasets.importers import import_dataset
        from hoprag.index.store import build_index
        graph_worker.WORKER_MIN_CHUNKS = 5
        graph_worker._cores = lambda: 2
        docs = import_dataset("hotpotqa", [{str(DATA / "hotpotqa_dev_slice.json")!r}]).documents
        manifest = build_index(docs, {str(tmp_path / "index")!r})
        print("worker" if manifest.build.graph_worker_peak_rss_mb else "in process", manifest.graph.entities)
    """), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("worker ") and done.stderr == ""


def test_a_failed_build_kills_its_worker_and_keeps_the_old_index(documents, tmp_path, worker_from) -> None:
    target = tmp_path / "index"
    build_index(documents[:3], target)
    before = graph_files(target)
    started = worker_from(5)

    def corpus():
        yield from documents[:12]
        assert started and started[0].poll() is None  # the worker is running
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_index(corpus(), target)
    assert started[0].poll() is not None  # killed, and reaped
    assert graph_files(target) == before and load_index(target).manifest.document_count == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]  # no staging directory left


def test_a_worker_that_dies_is_an_error_with_its_exit_code_and_the_fix(documents, tmp_path, worker_from) -> None:
    worker_from(1)
    worker = GraphWorker()
    chunks = chunk_document(documents[0], ChunkConfig())
    worker.add(chunks, documents[0].title)
    assert worker.in_worker
    worker._process.kill()
    for doc in documents[1:]:  # frames to a dead worker are dropped, not piled up or raised
        worker.add(chunk_document(doc, ChunkConfig()), doc.title)
    with pytest.raises(HopragError) as caught:
        worker.finish(tmp_path)
    message = str(caught.value)
    assert "exit code -9" in message and "--no-graph" in message
    assert not worker.in_worker


def test_a_worker_that_dies_mid_corpus_fails_the_next_batch(documents, tmp_path, worker_from, monkeypatch) -> None:
    worker_from(1)
    monkeypatch.setattr(graph_worker, "_BATCH", 1)  # every document is a frame
    worker = GraphWorker()
    worker.add(chunk_document(documents[0], ChunkConfig()), documents[0].title)
    process = worker._process
    process.kill()
    process.wait()
    with pytest.raises(HopragError) as caught:  # not only once the whole corpus has been read
        worker.add(chunk_document(documents[1], ChunkConfig()), documents[1].title)
    assert "exit code -9" in str(caught.value) and "--no-graph" in str(caught.value)
    assert not worker.in_worker
    worker.abort()  # what a failed build does next: nothing left to stop


def test_a_build_whose_worker_dies_is_one_error_and_keeps_the_old_index(documents, tmp_path, worker_from,
                                                                        monkeypatch) -> None:
    target = tmp_path / "index"
    build_index(documents[:3], target)
    started = worker_from(5)
    monkeypatch.setattr(graph_worker, "_BATCH", 1)

    def corpus():
        for i, doc in enumerate(documents):
            if i == 12:
                started[0].kill()
                started[0].wait()
            yield doc

    with pytest.raises(HopragError) as caught:
        build_index(corpus(), target)
    assert "--no-graph" in str(caught.value)
    assert load_index(target).manifest.document_count == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


def test_an_error_inside_the_worker_comes_back_with_the_fix(documents, tmp_path, worker_from) -> None:
    worker_from(1)
    worker = GraphWorker()
    worker.add(chunk_document(documents[0], ChunkConfig()), documents[0].title)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory", encoding="utf-8")
    with pytest.raises(HopragError) as caught:
        worker.finish(blocked)  # the graph directory cannot be made inside a file
    assert "failed in its worker process" in str(caught.value) and "--no-graph" in str(caught.value)


def test_a_worker_that_cannot_start_leaves_the_graph_in_process(documents, tmp_path, worker_from, monkeypatch) -> None:
    started = worker_from(5)

    def refuse(*args, **kwargs):
        raise OSError("no interpreter")

    monkeypatch.setattr(graph_worker.subprocess, "Popen", refuse)
    manifest = build_index(documents, tmp_path / "index")
    worker_from(10**9)
    build_index(documents, tmp_path / "local")
    assert not started and manifest.build.graph_worker_peak_rss_mb is None
    assert graph_files(tmp_path / "index") == graph_files(tmp_path / "local")


def test_one_core_builds_in_process(monkeypatch) -> None:
    monkeypatch.setattr(graph_worker, "_cores", lambda: 1)
    assert GraphWorker(min_chunks=1).min_chunks == sys.maxsize


def test_abort_returns_when_closing_a_dead_workers_pipe_fails(documents, worker_from, monkeypatch) -> None:
    """Closing the pipe flushes what it buffered; to a dead worker that raises after the last frame was
    taken, and the writer must not then wait for frames that will never come."""
    worker_from(1)
    real = graph_worker.subprocess.Popen

    class FailingClose:
        def __init__(self, pipe) -> None:
            self.pipe = pipe

        def write(self, data: bytes) -> int:
            return len(data)  # held, as a buffer would hold it

        def close(self) -> None:
            self.pipe.close()
            raise BrokenPipeError(32, "Broken pipe")

    def popen(*args, **kwargs):
        process = real(*args, **kwargs)
        process.stdin = FailingClose(process.stdin)
        return process

    monkeypatch.setattr(graph_worker.subprocess, "Popen", popen)
    worker = GraphWorker()
    worker.add(chunk_document(documents[0], ChunkConfig()), documents[0].title)
    assert worker.in_worker
    done = threading.Event()
    stopper = threading.Thread(target=lambda: (worker.abort(), done.set()), daemon=True)
    stopper.start()
    assert done.wait(30), "abort() did not return"
    assert not worker.in_worker
