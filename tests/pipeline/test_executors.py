"""The executors without a cluster: order, the local thread pool, and every way of asking wrongly."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from hoprag.errors import ConfigError
from hoprag.executors import ExecutorError, LocalExecutor, RayExecutor, parse_executor

pytestmark = pytest.mark.unit


def _slow_square(state: dict, item: int) -> int:
    # later items finish first: the executor must still hand results back in the items' order
    time.sleep(0.002 * (10 - item % 10))
    state["threads"].add(threading.current_thread().name)
    return item * item


def test_local_executor_keeps_the_items_order_with_threads():
    state = {"threads": set()}
    calls = []

    def setup() -> dict:
        calls.append(1)
        return state

    results = list(LocalExecutor(workers=3).map(_slow_square, list(range(25)), setup=setup))
    assert results == [i * i for i in range(25)]
    assert calls == [1]  # one setup, shared by the threads
    assert len(state["threads"]) > 1


def test_one_local_worker_is_a_plain_loop_in_this_thread():
    state = {"threads": set()}
    assert list(LocalExecutor().map(_slow_square, [3, 1, 2], setup=lambda: state)) == [9, 1, 4]
    assert state["threads"] == {threading.current_thread().name}


def test_no_items_never_set_up():
    def setup():
        raise AssertionError("setup ran for nothing")

    assert list(LocalExecutor(workers=2).map(_slow_square, [], setup=setup)) == []


def test_parse_executor_values():
    assert parse_executor("local") == LocalExecutor(workers=1)
    assert parse_executor("local", workers=4) == LocalExecutor(workers=4)
    assert parse_executor("ray") == RayExecutor(address=None)
    assert parse_executor("ray:127.0.0.1:6379", workers=2) == RayExecutor(address="127.0.0.1:6379", workers=2)
    assert parse_executor("ray:auto").label == "ray:auto"


@pytest.mark.parametrize("value", ["", "threads", "local:4", "Ray", "dask:host:1"])
def test_unknown_executors_name_the_valid_ones(value):
    with pytest.raises(ConfigError, match="valid: local, ray, ray:ADDRESS"):
        parse_executor(value)


def test_an_empty_ray_address_is_refused():
    with pytest.raises(ConfigError, match="needs an address after the colon"):
        parse_executor("ray:")


def test_without_ray_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'hoprag\[ray\]'"):
        parse_executor("ray")
    assert parse_executor("local") == LocalExecutor(workers=1)


def test_an_unreachable_ray_address_is_one_clear_error_not_a_hang(monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    executor = parse_executor("ray:127.0.0.1:9")  # the discard port: nothing listens there
    with pytest.raises(ExecutorError, match=r"no Ray cluster answers at 127.0.0.1:9.*ray start --head"):
        list(executor.map(_slow_square, [1], setup=dict))  # refused by a probe, before ray.init would retry


def test_a_malformed_ray_address_is_refused():
    pytest.importorskip("ray")
    with pytest.raises(ConfigError, match="is not a Ray address"):
        list(parse_executor("ray:nohost").map(_slow_square, [1], setup=dict))
