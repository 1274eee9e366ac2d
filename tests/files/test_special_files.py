"""A FIFO, a device or a socket given where a file belongs is refused at once, never read (it would block).

The library's one reader of user files (:func:`hoprag.files.check_file`) refuses them, so every
reader built on it does; the commands are run as real processes with a timeout, so a reader that
opened the FIFO fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hoprag.errors import HopragError, InputError
from hoprag.files import check_file, open_text, read_text

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
HOPRAG = Path(sys.executable).with_name("hoprag")


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO nobody writes to; should a reader open it anyway, a writer comes after 5 s and goes,
    so that reader sees an empty stream and the test fails on its message instead of hanging."""
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    done = threading.Event()

    def unblock() -> None:
        if done.wait(5):
            return
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # nobody is reading: nothing to unblock
            pass

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    yield path
    done.set()
    thread.join()


def test_the_helper_refuses_a_fifo_a_device_and_a_socket(fifo: Path, tmp_path: Path) -> None:
    for read in (check_file, read_text, lambda p, w: open_text(p, w).__enter__()):
        with pytest.raises(InputError, match=r"cases file is a named pipe \(FIFO\).*not a regular file.*\. Fix: write "
                                             r"the data to a file first"):
            read(fifo, "cases file")
    with pytest.raises(InputError, match=r"corpus file is a device, not a regular file"):
        read_text("/dev/null", "corpus file")
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        with pytest.raises(InputError, match=r"traces file is a socket, not a regular file"):
            read_text(sock_path, "traces file")


def _readers() -> dict[str, Callable[[Path], object]]:
    from hoprag.datasets.importers import import_dataset
    from hoprag.datasets.labels import read_cases_checked
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.release import load_policy
    from hoprag.io.traces import read_traces, read_traces_file
    from hoprag.gates.checks.feedback import read_feedback
    from hoprag.gates.thresholds import load_thresholds
    from hoprag.ingest.loaders import load_documents
    from hoprag.llm.pricing import load_price_table
    from hoprag.trec import read_qrels, read_run

    return {
        "corpus": load_documents, "cases": load_cases, "cases (audit)": read_cases_checked, "traces": read_traces,
        "traces (lenient)": lambda p: read_traces_file(p, lenient=True), "hotpotqa": lambda p: import_dataset("hotpotqa", [p]),
        "musique": lambda p: import_dataset("musique", [p]), "feedback": read_feedback, "qrels": read_qrels,
        "trec run": read_run, "thresholds": load_thresholds, "policy": load_policy, "prices": load_price_table,
    }


@pytest.mark.parametrize("reader", sorted(_readers()))
def test_every_library_reader_refuses_a_fifo_at_once(reader: str, fifo: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(HopragError, match=r"named pipe \(FIFO\).*Fix: "):
        _readers()[reader](fifo)
    assert time.perf_counter() - start < 2


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hoprag.index.store import build_index
    from hoprag.ingest.loaders import load_documents

    out = tmp_path_factory.mktemp("fifo-index") / "index"
    build_index(load_documents(ENTERPRISE / "corpus.jsonl"), out)
    return out


COMMANDS: dict[str, Callable[[Path, Path, Path], list[str]]] = {
    "index": lambda f, idx, tmp: ["index", str(f), "--out", str(tmp / "new-index")],
    "run": lambda f, idx, tmp: ["run", str(idx), str(f), "--out", str(tmp / "traces.jsonl")],
    "eval (cases)": lambda f, idx, tmp: ["eval", str(f), str(tmp / "traces.jsonl")],
    "eval (traces)": lambda f, idx, tmp: ["eval", str(ENTERPRISE / "cases.jsonl"), str(f)],
    "audit": lambda f, idx, tmp: ["audit", str(f), str(ENTERPRISE / "corpus.jsonl")],
    "import": lambda f, idx, tmp: ["import", "hotpotqa", str(f), "--out", str(tmp / "imported")],
    "feedback import": lambda f, idx, tmp: ["feedback", "import", str(f), "--store", str(tmp / "store.db")],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_refuses_a_fifo_without_blocking(command: str, fifo: Path, index_dir: Path,
                                                       tmp_path: Path) -> None:
    (tmp_path / "traces.jsonl").write_text("", encoding="utf-8")
    argv = COMMANDS[command](fifo, index_dir, tmp_path)
    try:
        done = subprocess.run([str(HOPRAG), *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hoprag {' '.join(argv)} blocked on the FIFO")
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    text = " ".join(done.stderr.split())
    assert "FIFO" in text and "Fix:" in text and "Traceback" not in done.stderr, done.stderr
    assert len(lines) <= 3, done.stderr  # one message (rich may wrap it)
