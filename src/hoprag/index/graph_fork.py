"""An index update's in-place graph change run in a forked copy of the updating process (:class:`ForkedGraph`).

:class:`~hoprag.index.graph_update.IncrementalGraph` reads the saved mentions, scans the new chunks
and rewrites the graph in Python, which holds the interpreter's lock: in a thread it takes turns with
the update's own work (analysing the new documents, rescoring BM25) instead of overlapping it, and
on two cores a 1 % update at 100k waited for it (about 0.3 s of CPU). A fork shares what the process
has already loaded (no interpreter to start, no import: the graph worker's fresh process costs a
quarter of a second), so on Linux with two cores or more the child does the whole graph change —
reads the saved mentions, chunks the new documents, scans them, writes ``graph/`` and the graph's
``analysis/`` files into the stage — while the parent goes on, and reports the
:class:`~hoprag.index.entity_graph.GraphInfo` through a pipe. The files are the same either way;
elsewhere, or if the child fails to report, the graph is changed in the updating process.

The fork is made before the update starts any thread of its own, and the child leaves with
``os._exit`` (no exit handlers, no buffered output of the parent's written twice).
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hoprag.cpus import available_cores
from hoprag.errors import IndexLoadError
from hoprag.index.entity_graph import GraphInfo
from hoprag.index.graph_update import IncrementalGraph
from hoprag.ingest.chunking import ChunkConfig, chunk_document
from hoprag.records import Chunk, Document

if TYPE_CHECKING:
    from hoprag.index.corpus_db import CorpusDB

__all__ = ["ForkedGraph", "can_fork"]


def can_fork() -> bool:
    """Whether the graph change runs in a forked child: Linux (a fork of a threaded process is not safe
    on macOS, and Windows has none) with a second core to run it on, called from the main thread with
    no other thread but daemons (a progress display): a program's worker threads could hold a lock
    (SQLite's, a logger's) that the child would then wait for forever."""
    main = threading.main_thread()
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and available_cores() >= 2
            and threading.current_thread() is main
            and all(t is main or t.daemon for t in threading.enumerate()))


class ForkedGraph:
    """:class:`IncrementalGraph`'s interface for the updating process, the work done by a forked child
    started at construction (module doc); :meth:`add` and :meth:`submit` have nothing left to do."""

    peak_rss_mb: float | None = None
    in_worker = False

    def __init__(self, index_dir: Path, info: GraphInfo, keep_chunks: np.ndarray, keep_docs: np.ndarray,
                 db: CorpusDB, *, documents: Sequence[Document], chunk: ChunkConfig, stage: Path) -> None:
        self._args = (index_dir, info, keep_chunks, keep_docs, db)
        self._documents, self._chunk = documents, chunk
        self._read, write = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12 warns of any fork in a process with threads; the update has started none yet,
            # and the ones there may be (OpenBLAS's idle pool, a progress display) hold nothing the child takes
            warnings.simplefilter("ignore", DeprecationWarning)
            self._pid = os.fork()
        if self._pid == 0:  # the child: never returns
            os.close(self._read)
            _run_child(write, self._args, documents, chunk, stage)
        os.close(write)

    def add(self, chunks: Sequence[Chunk], title: str) -> None:
        """The child scans the new documents itself."""

    def submit(self, index_dir: Path) -> None:
        """The child writes as soon as it has scanned."""

    def finish(self, stage: Path) -> GraphInfo:
        """The child's :class:`GraphInfo` once it has written the graph into ``stage``."""
        report = self._collect()
        if report is None:  # the child died before reporting: the graph is changed here instead
            graph = IncrementalGraph(*self._args)
            for doc in self._documents:
                graph.add(chunk_document(doc, self._chunk), doc.title)
            return graph.finish(stage)
        if "damaged" in report:
            raise IndexLoadError(str(report["damaged"]))
        if "error" in report:
            raise RuntimeError(f"the entity graph's update failed: {report['error']}")
        return GraphInfo.model_validate(report["info"])

    def abort(self) -> None:
        """Stop the child (what it wrote is in the stage, which is discarded)."""
        if self._pid:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._collect()

    def _collect(self) -> dict[str, Any] | None:
        if not self._pid:
            return None
        chunks = []
        try:
            while data := os.read(self._read, 1 << 16):
                chunks.append(data)
        finally:
            os.close(self._read)
            os.waitpid(self._pid, 0)
            self._pid = 0
        try:
            report = json.loads(b"".join(chunks).decode("utf-8"))
        except ValueError:
            return None
        return report if isinstance(report, dict) else None


def _run_child(write: int, args: tuple[Any, ...], documents: Sequence[Document], chunk: ChunkConfig,
               stage: Path) -> None:
    # no cyclic collector in a child that leaves with os._exit: its collections walked the parent's
    # objects (writing to each, so copying the page it sits on) and the saved mention table, about a
    # quarter of the child's CPU; reference counting still frees what it drops
    gc.disable()
    code = 0
    try:
        try:
            index_dir, info, keep_chunks, keep_docs, db = args
            db = pickle.loads(pickle.dumps(db))  # a connection of its own: SQLite's must not cross a fork
            graph = IncrementalGraph(index_dir, info, keep_chunks, keep_docs, db)
            for doc in documents:
                graph.add(chunk_document(doc, chunk), doc.title)
            report: dict[str, Any] = {"info": graph.finish(stage).model_dump(mode="json")}
        except IndexLoadError as exc:
            report = {"damaged": str(exc)}
        except BaseException as exc:  # noqa: BLE001  # reported to the parent, which raises it there
            report = {"error": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(report).encode("utf-8")
        while data:
            data = data[os.write(write, data):]
    except BaseException:  # noqa: BLE001  # the parent sees no report and changes the graph itself
        code = 1
    finally:
        os._exit(code)
