"""The entity graph built beside the BM25 index, in a second process (:class:`GraphWorker`).

Finding a chunk's mentions is regex scanning in Python (:meth:`GraphBuilder.add`, about 30 µs a
chunk), which holds the interpreter's lock, so a thread cannot overlap it with the tokenising the
build does at the same time. A large build therefore ships each document's chunk ids, texts and
title to a worker process (a fresh interpreter running :func:`serve`) that runs the same
:class:`GraphBuilder` and writes the same files, while the building process goes on chunking,
writing rows and tokenising: on two cores the graph costs the build little wall time. A small
corpus (fewer than :data:`WORKER_MIN_CHUNKS` chunks), a machine with one core, or a worker that
cannot be started builds in process; the files are the same either way.

An index update whose delta is too large to change the graph in place
(:mod:`hoprag.index.graph_update`) uses the same worker: :meth:`GraphWorker.resume` starts it from
the saved mentions of the chunks the update keeps (read in the worker, from the old index's rows),
the new documents' chunks follow, and the graph is built while the update recomputes BM25.

The worker is a plain child process reading pickled frames on its standard input, so nothing of the
caller's program is re-imported (``multiprocessing``'s ``spawn`` would re-run a script that lacks a
``__main__`` guard); a thread writes the frames while the builder goes on, and the worker is killed
when the build fails."""

from __future__ import annotations

import json
import os
import pickle
import queue
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from hoprag.cpus import available_cores as _cores
from hoprag.errors import HopragError
from hoprag.index.analysis import ANALYSIS_DIR
from hoprag.index.entity_graph import CHUNK_IDS, GRAPH_DIR, GraphConfig, GraphInfo
from hoprag.index.graph_build import GraphBuilder
from hoprag.index.manifest import peak_rss_mb
from hoprag.records import Chunk

if TYPE_CHECKING:
    from hoprag.index.corpus_db import CorpusDB

__all__ = ["WORKER_MIN_CHUNKS", "GraphWorker", "serve"]

#: chunks held back before the graph moves to a worker process; a corpus with fewer builds in process
WORKER_MIN_CHUNKS = 20_000
#: chunks per frame sent to the worker
_BATCH = 2_000
#: frames waiting for the pipe: when the worker falls behind (a busy machine), the build waits for it
#: rather than holding the corpus's texts in memory
_QUEUED = 16
_HEADER = struct.Struct("<Q")
_WORKER = "import sys; from hoprag.index.graph_worker import serve; serve(sys.stdin.buffer, sys.stdout.buffer)"
_FIX = "rebuild with `--no-graph` to index without the entity graph, or give the build more memory"


class GraphWorker:
    """:class:`GraphBuilder`'s interface (:meth:`add` in index order, :meth:`submit` when the corpus is
    read, :meth:`finish`), building in a worker process once the corpus reaches ``min_chunks``
    chunks; :meth:`abort` stops it.

    ``peak_rss_mb`` is the worker's peak resident memory once finished (``None`` when the graph was
    built in process, whose memory is the building process's own)."""

    def __init__(self, config: GraphConfig | None = None, *, min_chunks: int | None = None) -> None:
        self.config = config or GraphConfig()
        wanted = WORKER_MIN_CHUNKS if min_chunks is None else min_chunks
        self.min_chunks = wanted if _cores() > 1 else sys.maxsize
        self.peak_rss_mb: float | None = None
        self._held: list[tuple[Sequence[Chunk], str]] = []
        self._held_chunks = 0
        self._batch: list[tuple[str, list[str], list[str]]] = []
        self._batch_chunks = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._frames: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUED)
        self._writer: threading.Thread | None = None
        self._stderr: IO[bytes] | None = None
        self._submitted = False
        self._resume: tuple[str, np.ndarray, np.ndarray, CorpusDB] | None = None

    @property
    def in_worker(self) -> bool:
        """Whether the graph is being built in a worker process."""
        return self._process is not None

    def resume(self, index_dir: Path, keep_chunks: np.ndarray, keep_docs: np.ndarray, db: CorpusDB) -> None:
        """Before any :meth:`add`: start from the mentions the index in ``index_dir`` saved (its
        ``analysis/``) of the chunks ``keep_chunks`` keeps, with the titles of the documents ``keep_docs``
        keeps (``db``: the index's rows). With as many kept chunks as ``min_chunks``, the worker starts
        now and reads them while the caller goes on."""
        self._resume = (str(index_dir), keep_chunks, keep_docs, db)
        kept = int(np.count_nonzero(keep_chunks))
        if kept >= self.min_chunks and self._start():
            self._frames.put(_frame(("resume", self._resume)))
        else:
            self._held_chunks += kept

    def add(self, chunks: Sequence[Chunk], title: str) -> None:
        """One document's chunks, in index order, and its title."""
        if self._process is None:
            self._held.append((chunks, title))
            self._held_chunks += len(chunks)
            if self._held_chunks >= self.min_chunks and self._start():
                if self._resume is not None:
                    self._frames.put(_frame(("resume", self._resume)))
                held, self._held = self._held, []
                for held_chunks, held_title in held:
                    self._send(held_chunks, held_title)
            return
        self._send(chunks, title)

    def _start(self) -> bool:
        """Start the worker; ``False`` (and the graph stays in process) when it cannot be started."""
        package_root = str(Path(__file__).resolve().parents[2])  # the directory holding ``hoprag``
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self._stderr = tempfile.TemporaryFile()
        try:
            self._process = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        except OSError:
            self.min_chunks = sys.maxsize
            return False
        self._writer = threading.Thread(target=self._write, name="hoprag-graph-frames", daemon=True)
        self._writer.start()
        self._frames.put(_frame(("config", self.config.model_dump(mode="json"))))
        return True

    def _write(self) -> None:
        """The writer thread: frames to the worker's stdin in order, until the closing ``None``."""
        assert self._process is not None and self._process.stdin is not None
        pipe = self._process.stdin
        ended = False  # the closing None was taken: nothing more will be put
        try:
            while (frame := self._frames.get()) is not None:
                pipe.write(frame)
            ended = True
            pipe.close()
        except (OSError, ValueError):  # the worker died: its exit code says why
            while not ended and self._frames.get() is not None:  # drop what is left, so puts never pile up
                pass

    def _send(self, chunks: Sequence[Chunk], title: str) -> None:
        self._batch.append((title, [c.id for c in chunks], [c.text for c in chunks]))
        self._batch_chunks += len(chunks)
        if self._batch_chunks >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            self._check_alive()
            self._frames.put(_frame(("add", self._batch)))
            self._batch, self._batch_chunks = [], 0

    def _check_alive(self) -> None:
        """A worker that has died before it was given the whole corpus fails the build now, not after
        the BM25 arrays are made (its exit code says why)."""
        process = self._process
        if process is not None and not self._submitted and process.poll() is not None:
            self._stop()
            raise self._died(process)

    def _died(self, process: subprocess.Popen[bytes]) -> HopragError:
        return HopragError(
            f"the entity graph's worker process ended without a result (exit code {process.returncode}; a "
            f"negative code is the signal that ended it, -9 often the system running out of memory"
            f"{self._last_error()}). Fix: {_FIX}"
        )

    def submit(self, index_dir: Path) -> None:
        """No more chunks: a worker builds and writes the graph into ``index_dir/graph`` now, while the
        building process goes on (in process, nothing happens until :meth:`finish`)."""
        if self._process is not None and not self._submitted:
            self._flush()
            self._frames.put(_frame(("finish", str(index_dir))))
            self._frames.put(None)
            self._submitted = True

    def finish(self, index_dir: Path) -> GraphInfo:
        """Build the graph into ``index_dir/graph`` (in the worker, when one runs); the manifest's record."""
        if self._process is None:
            builder = _resumed(self.config, *self._resume) if self._resume else GraphBuilder(self.config)
            for chunks, title in self._held:
                builder.add(chunks, title)
            self._held = []
            return builder.finish(index_dir)
        self.submit(index_dir)
        process = self._process
        try:
            answer = _read(process.stdout)  # type: ignore[arg-type]
            process.wait()
        except BaseException:  # interrupted while waiting: the worker's graph is not wanted
            process.kill()
            raise
        finally:
            self._stop()
        if answer is None:
            raise self._died(process)
        kind, payload, peak = answer
        if kind != "ok":
            raise HopragError(f"building the entity graph failed in its worker process: {payload}. Fix: {_FIX}")
        self.peak_rss_mb = peak
        return GraphInfo.model_validate(payload)

    def abort(self) -> None:
        """Stop the worker (a failed or interrupted build); the build keeps nothing it wrote."""
        self._held = []
        if self._process is not None:
            self._process.kill()
            self._stop()

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if not self._submitted:
            self._frames.put(None)
        process.wait()
        if self._writer is not None:
            self._writer.join()
        for pipe in (process.stdin, process.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:  # what a dead worker's stdin still buffered
                pass

    def _last_error(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        return f"; it said: {lines[-1]}" if lines else ""


def _resumed(config: GraphConfig, index_dir: str, keep_chunks: np.ndarray, keep_docs: np.ndarray,
             db: CorpusDB) -> GraphBuilder:
    """:meth:`GraphBuilder.resumed` for the kept chunks and documents of the index in ``index_dir``."""
    titles = db.title_keys(keep_docs)
    # the chunk ids from the graph's own list (one small file) rather than a scan of every chunk's row
    try:
        ids = json.loads((Path(index_dir) / GRAPH_DIR / CHUNK_IDS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        ids = None
    if isinstance(ids, list) and len(ids) == keep_chunks.size:
        chunk_ids = [cid for cid, kept in zip(ids, keep_chunks.tolist()) if kept]
    else:
        chunk_ids = list(db.iter_chunk_ids(mask=keep_chunks))
    return GraphBuilder.resumed(Path(index_dir) / ANALYSIS_DIR, config, keep_chunks, chunk_ids, titles)


def _frame(message: Any) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


def _read(pipe: IO[bytes]) -> Any:
    """One frame from ``pipe``; ``None`` at its end (the other side is gone)."""
    header = pipe.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    body = pipe.read(size)
    return pickle.loads(body) if len(body) == size else None


def serve(inbox: IO[bytes], outbox: IO[bytes]) -> None:
    """The worker: a config frame, every batch in order, then build and write the graph; one answer."""
    builder = GraphBuilder()
    try:
        while (message := _read(inbox)) is not None:
            kind, payload = message
            if kind == "config":
                builder = GraphBuilder(GraphConfig.model_validate(payload))
            elif kind == "resume":
                builder = _resumed(builder.config, *payload)
            elif kind == "add":
                for title, ids, texts in payload:
                    builder.add_texts(ids, texts, title)
            else:
                info = builder.finish(Path(payload))
                outbox.write(_frame(("ok", info.model_dump(mode="json"), round(peak_rss_mb(), 1))))
                break
    except Exception as exc:  # reported to the building process, which raises it with the fix
        outbox.write(_frame(("error", f"{type(exc).__name__}: {exc}", round(peak_rss_mb(), 1))))
    outbox.flush()


