from __future__ import annotations

import pytest

from hoprag.errors import ConfigError
from hoprag.gates.hooks import StageRunner, hook, hooks_for, metric, unregister
from hoprag.metrics import Metric

pytestmark = pytest.mark.unit


def test_a_new_hook_takes_a_few_lines_and_runs_with_latency() -> None:
    @hook("chunking")  # the seed's name for the chunk stage
    def tiny(chunks, ctx):
        return [metric(ctx, "tiny_count", sum(len(c) < 3 for c in chunks))]

    try:
        sink: list[Metric] = []
        runner = StageRunner("run-1", sink.append)
        out = runner.run("chunk", lambda text: text.split(), "a bb ccc dddd")
        assert out == ["a", "bb", "ccc", "dddd"]
        names = {m.name: m.value for m in sink}
        assert names["tiny_count"] == 2 and names["latency_ms"] >= 0
        assert all(m.run_id == "run-1" and m.stage == "chunk" for m in sink)
    finally:
        unregister("chunk", tiny)
    assert tiny not in hooks_for("chunk")


def test_a_failing_hook_is_recorded_not_silent() -> None:
    @hook("index")
    def broken(out, ctx):
        raise RuntimeError("boom")

    try:
        sink: list[Metric] = []
        StageRunner("r", sink.append).observe("index", None)
        errors = [m for m in sink if m.name == "hook_error"]
        assert len(errors) >= 1 and any(m.meta["hook"] == "broken" and "boom" in m.meta["error"] for m in errors)
    finally:
        unregister("index", broken)


def test_stage_error_and_labels() -> None:
    sink: list[Metric] = []
    runner = StageRunner("r", sink.append)
    with pytest.raises(ValueError):
        with runner.stage("embed"):
            raise ValueError("bad batch")
    assert sink[-1].name == "stage_error" and "bad batch" in sink[-1].meta["error"]
    with runner.stage("feedback", label="multihop") as st:
        st.output = []
    assert "multihop/latency_ms" in [m.name for m in sink]


def test_unknown_stage_lists_valid() -> None:
    with pytest.raises(ConfigError, match="valid stages: ingest, chunk, embed, index, retrieve, generate, feedback"):
        hook("vectorise")
