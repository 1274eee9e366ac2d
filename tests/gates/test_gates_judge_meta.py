"""Judged gate metrics say how their judge is calibrated: the generate stage's lexical judge is
uncalibrated (and its meta says so), and the gate row and table carry that, or a record's kappa."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.calibration import calibrate
from hoprag.evaluation.calibration_record import calibration_meta
from hoprag.io.traces import read_traces
from hoprag.gates.checks.generation import GenerationOutput, generation_check
from hoprag.gates.gate import evaluate_gate
from hoprag.metrics import Metric
from hoprag.gates.render import gate_table
from hoprag.gates.thresholds import parse_thresholds

pytestmark = pytest.mark.unit
ROOT = Path(__file__).parents[2]
CASES = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")
TRACES = read_traces(ROOT / "tests" / "data" / "eval_traces.jsonl")
RULES = parse_thresholds({"generate": {"faithfulness": {"min": 0.0}, "answers": {"min": 1}}})


def _shown(table) -> str:
    console = Console(width=400, record=True)
    console.print(table)
    return " ".join(console.export_text().split())


def test_the_lexical_judge_is_recorded_as_uncalibrated_and_the_gate_says_so() -> None:
    metrics = generation_check(GenerationOutput(TRACES, {c.case_id: c for c in CASES}),
                               {"run_id": "r1", "stage": "generate"})
    by_name = {m.name: m for m in metrics}
    for name in ("faithfulness", "factuality"):
        assert by_name[name].meta["calibration"] == "uncalibrated"
        assert by_name[name].meta["judge_model_id"] == "lexical:claim-support>=0.8"
    assert "calibration" not in by_name["answers"].meta  # no judge decides a count
    report = evaluate_gate("r1", metrics, RULES)
    rows = {r.metric: r for r in report.rows}
    assert rows["faithfulness"].judge["calibration"] == "uncalibrated" and rows["answers"].judge is None
    shown = {r["metric"]: r["judge"] for r in json.loads(json.dumps(report.to_json()))["rows"]}
    assert shown["faithfulness"]["calibration"] == "uncalibrated" and shown["answers"] is None
    assert "judged metrics: generate/faithfulness judge lexical:claim-support>=0.8 uncalibrated" in _shown(
        gate_table(report))


def test_a_calibrated_judge_metric_shows_its_kappa_ci_and_record_in_the_gate() -> None:
    record = calibrate(CASES, resamples=50)
    meta = calibration_meta({**record, "source": {"path": "c.json", "sha256": "sha256:abc"}})
    report = evaluate_gate("r1", [Metric("r1", "generate", "faithfulness", 0.9, meta=meta),
                                  Metric("r1", "generate", "answers", 3)], RULES)
    row = next(r for r in report.rows if r.metric == "faithfulness")
    assert row.judge["calibration_kappa"] == record["overall"]["kappa"]
    lo, hi = record["overall"]["kappa_ci95"]
    assert (f"calibrated kappa={record['overall']['kappa']} [{lo}, {hi}] n={record['overall']['n']} "
            f"(sha256:abc, {record['date']})") in _shown(gate_table(report))
