"""Tests of code that forks need a process running one thread (a fork copies only the calling
thread, so hoprag does not fork while others run). When an earlier test left a thread behind (a
library's monitor, a client's pool), the test is run again in a fresh pytest process, where it must
pass, and is reported here as skipped with that result.

When the call comes from a fixture (an autouse one covers a whole module), every test of the module
that uses that fixture is run in the one fresh process, the first time one of them asks: one pytest
start for the module, not one per test. Each test is still judged by its own outcome there."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

# node id -> (its outcome in the fresh process, that process's output)
_FRESH: dict[str, tuple[str, str]] = {}


def _batch(request: pytest.FixtureRequest) -> list[str]:
    """This test's node id and, when asked from a fixture, those of the module's other tests that use it."""
    if request.fixturename is None or request.scope != "function":
        return [request.node.nodeid]
    module = request.node.nodeid.split("::")[0]
    return [item.nodeid for item in request.session.items
            if item.nodeid.split("::")[0] == module and request.fixturename in getattr(item, "fixturenames", ())]


def _run_fresh(nodeids: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *nodeids],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    output = f"{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    # -rA names every passed, failed or erroring test by its node id (a skipped one by its file and line)
    outcomes = {m.group(2): m.group(1) for m in re.finditer(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (.+?)(?: - .*)?$",
                                                            done.stdout, re.MULTILINE)}
    unnamed = "SKIPPED" if done.returncode in (0, 1) else f"NOT RUN (pytest exited {done.returncode})"
    for nodeid in nodeids:
        _FRESH[nodeid] = (outcomes.get(nodeid, unnamed), output)


def in_single_threaded_process(request: pytest.FixtureRequest) -> None:
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    if not others:
        return
    nodeid = request.node.nodeid
    if nodeid not in _FRESH:
        _run_fresh(_batch(request))
    outcome, output = _FRESH[nodeid]
    assert outcome in ("PASSED", "SKIPPED", "XFAIL"), f"{outcome} in a fresh process:\n{output}"
    pytest.skip(f"{outcome.lower()} in a fresh single-threaded process (threads here: {', '.join(others)})")
