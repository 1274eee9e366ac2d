"""The forked-process executor: results in order, computed in other processes; a worker that fails on
an item or dies leaves that item to this process (same result, or the same error); workers are reaped
however the caller stops; and the cases where it must not fork run here."""

from __future__ import annotations

import os
import signal
import threading

import pytest
from single_thread import in_single_threaded_process

from hoprag.forks import ProcessExecutor, can_fork, fork_supported

pytestmark = [pytest.mark.unit, pytest.mark.skipif(not fork_supported(), reason="forks only on Linux")]

PARENT = os.getpid()


@pytest.fixture(autouse=True)
def _single_threaded(request: pytest.FixtureRequest) -> None:
    in_single_threaded_process(request)


def _square(state: dict, item: int) -> tuple[int, int]:
    return item * item + state["offset"], os.getpid()


def _fails_on_seven(state: dict, item: int) -> int:
    if item == 7:
        raise ValueError(f"item {item} is bad (pid {'parent' if os.getpid() == PARENT else 'worker'})")
    return item


def _worker_dies_at_five(state: dict, item: int) -> tuple[int, int]:
    if item == 5 and os.getpid() != PARENT:
        os._exit(3)  # as if killed: no result, no error
    return item * 2, os.getpid()


def _worker_killed_at_three(state: dict, item: int) -> tuple[int, int]:
    if item == 3 and os.getpid() != PARENT:
        os.kill(os.getpid(), signal.SIGKILL)
    return item + 100, os.getpid()


def _unpicklable_result(state: dict, item: int) -> object:
    return (lambda: item) if os.getpid() != PARENT else item  # a lambda cannot travel back


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_results_come_back_in_order_from_other_processes() -> None:
    calls = []

    def setup() -> dict:
        calls.append(os.getpid())
        return {"offset": 1}

    out = list(ProcessExecutor(workers=2).map(_square, list(range(20)), setup=setup))
    assert [value for value, _ in out] == [i * i + 1 for i in range(20)]
    pids = {pid for _, pid in out}
    assert len(pids) == 2 and PARENT not in pids  # two workers, the items split between them
    assert calls == [PARENT]  # setup ran once, here, and the workers inherited its state
    assert not any(_alive(pid) for pid in pids)  # reaped


def test_an_item_a_worker_fails_on_raises_its_own_error_here() -> None:
    with pytest.raises(ValueError, match=r"item 7 is bad \(pid parent\)"):
        list(ProcessExecutor(workers=2).map(_fails_on_seven, list(range(12)), setup=dict))


def test_a_worker_that_dies_leaves_its_items_to_this_process() -> None:
    out = list(ProcessExecutor(workers=2).map(_worker_dies_at_five, list(range(12)), setup=dict))
    assert [value for value, _ in out] == [i * 2 for i in range(12)]
    # item 5 and every later item of its worker (positions 7, 9, 11) were computed here
    assert [i for i, (_, pid) in enumerate(out) if pid == PARENT] == [5, 7, 9, 11]


def test_a_killed_worker_loses_nothing() -> None:
    out = list(ProcessExecutor(workers=2).map(_worker_killed_at_three, list(range(8)), setup=dict))
    assert [value for value, _ in out] == [i + 100 for i in range(8)]


def test_a_result_that_cannot_be_sent_back_is_computed_here() -> None:
    assert list(ProcessExecutor(workers=2).map(_unpicklable_result, [1, 2, 3, 4], setup=dict)) == [1, 2, 3, 4]


def test_stopping_early_kills_and_reaps_the_workers() -> None:
    results = ProcessExecutor(workers=2).map(_square, list(range(50_000)), setup=lambda: {"offset": 0})
    first = [next(results) for _ in range(3)]
    pids = {pid for _, pid in first}
    results.close()
    assert not any(_alive(pid) for pid in pids)


def test_it_runs_here_when_forking_is_wrong_or_pointless() -> None:
    state = {"offset": 0}
    assert {pid for _, pid in ProcessExecutor(workers=1).map(_square, [1, 2, 3], setup=lambda: state)} == {PARENT}
    assert {pid for _, pid in ProcessExecutor(workers=4).map(_square, [9], setup=lambda: state)} == {PARENT}
    assert list(ProcessExecutor(workers=2).map(_square, [], setup=lambda: state)) == []
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:  # a fork copies only this thread: with another running, no fork
        assert not can_fork()
        out = list(ProcessExecutor(workers=2).map(_square, list(range(6)), setup=lambda: state))
    finally:
        stop.set()
        other.join()
    assert {pid for _, pid in out} == {PARENT}
