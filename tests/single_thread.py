"""Tests of code that forks need a process running one thread (a fork copies only the calling
thread, so hoprag does not fork while others run). When an earlier test left a thread behind (a
library's monitor, a client's pool), the test is run again in a fresh pytest process, where it must
pass, and is reported here as skipped with that result."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def in_single_threaded_process(request: pytest.FixtureRequest) -> None:
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    if not others:
        return
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", request.node.nodeid],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"failed in a fresh process:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    pytest.skip(f"passed in a fresh single-threaded process (threads here: {', '.join(others)})")
