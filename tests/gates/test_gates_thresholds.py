from __future__ import annotations

import math
from pathlib import Path

import pytest

from hoprag.errors import ConfigError
from hoprag.gates.gate import evaluate_gate
from hoprag.metrics import Metric
from hoprag.gates.thresholds import load_thresholds, parse_thresholds

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


def test_repository_thresholds_file_is_valid() -> None:
    rules = load_thresholds(ROOT / "thresholds.yaml").rules
    blocking = {(r.stage, r.metric) for r in rules if r.mode == "block"}
    assert {("ingest", "schema_violations"), ("ingest", "pii_hits"), ("embed", "zero_norm_frac")} <= blocking
    assert next(r for r in rules if r.metric == "faithfulness").mode == "warn"


@pytest.mark.parametrize("data, message", [
    ({"vectorise": {"oov_frac": {"max": 1}}}, "unknown stage 'vectorise'; valid stages: ingest"),
    ({"embed": {"oov_rate": {"max": 1}}}, "unknown metric 'oov_rate' for stage 'embed'; valid: vectors"),
    ({"embed": {"oov_frac": {"maximum": 1}}}, "unknown rule key"),
    ({"embed": {"oov_frac": {"max": 1, "mode": "stop"}}}, "mode 'stop'"),
    ({"embed": {"oov_frac": {"mode": "block"}}}, "at least one bound"),
    ({"embed": {"oov_frac": {"max": "low"}}}, "must be a number"),
])
def test_bad_thresholds(data, message) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_thresholds(data)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_thresholds(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("embed:\n  oov_frac: {max: [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_thresholds(bad)


def _m(stage: str, name: str, value: float) -> Metric:
    return Metric("r", stage, name, value)


def test_gate_semantics() -> None:
    rules = parse_thresholds({
        "ingest": {"pii_hits": {"max": 0, "mode": "block"}},
        "retrieve": {"nDCG@10": {"min": 0.5, "max_drop": 0.05}, "coverage@10": {"min": 0.9}},
        "generate": {"faithfulness": {"min": 0.9}, "bleu": {"min": 1, "optional": True}},
    })
    run = [_m("ingest", "pii_hits", 0), _m("retrieve", "single/nDCG@10", 0.62), _m("retrieve", "multihop/nDCG@10", 0.70),
           _m("retrieve", "multihop/Success@10", 0.95), _m("generate", "multihop/faithfulness", math.nan)]
    base = [_m("retrieve", "single/nDCG@10", 0.70), _m("retrieve", "multihop/nDCG@10", 0.71)]
    report = evaluate_gate("r", run, rules, base, "b")
    rows = {(r.stage, r.metric): r for r in report.rows}
    assert rows[("retrieve", "single/nDCG@10")].status == "fail" and "dropped 0.08" in rows[("retrieve", "single/nDCG@10")].reason
    assert rows[("retrieve", "multihop/nDCG@10")].status == "pass"
    assert rows[("generate", "multihop/faithfulness")].reason.startswith("value is NaN")
    assert rows[("generate", "bleu")].status == "skip"
    assert not report.blocked and report.exit_code == 0 and len(report.warnings) == 2
    blocked = evaluate_gate("r", run + [_m("ingest", "pii_hits", 2)], rules)
    assert blocked.blocked and blocked.exit_code == 1
    missing = evaluate_gate("r", [_m("ingest", "documents", 3)], rules)
    assert any(r.metric == "pii_hits" and r.status == "fail" and r.mode == "block" for r in missing.rows)
    with pytest.raises(ConfigError, match="has no metrics"):
        evaluate_gate("r", [], rules)
    errored = evaluate_gate("r", run + [Metric("r", "index", "hook_error", 1, {"hook": "h", "error": "x"})], rules)
    assert errored.blocked
