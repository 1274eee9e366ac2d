"""``hoprag eval --executor ray`` on a real local Ray (tests/ray/conftest.py): the cases are scored in
batches on two workers, and the JSON (every row, aggregate, group, failure count, exclusion and
label report), the HTML report and the printed summary must be the local executor's, byte for byte,
with ``--oracle``, ``--judge-calibration``, ``--corpus`` (label exclusions and missing sources),
``--lenient`` and ``--strict``; local ``--workers 2`` threads give the same, and a worker that fails is
one error naming what failed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.cli import app
from hoprag.datasets.importers import import_dataset, write_import
from hoprag.datasets.schema import write_cases
from hoprag.evaluation.calibration import calibrate
from hoprag.index.store import load_index
from hoprag.io.traces import write_traces
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.batch import questions_from_cases, run_questions

from chain_fixtures import broken, oracle_trace

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
HOTPOT_DEV = ROOT / "data" / "hotpotqa" / "hotpot_dev_distractor_hoprag.json"
RAY = ["--executor", "ray", "--workers", "2"]


@pytest.fixture(scope="module")
def files(enterprise, hotpot, tmp_path_factory) -> dict[str, Path]:
    """Cases, corpora and traces of local runs of both samples, and what the options read."""
    folder = tmp_path_factory.mktemp("ray-eval")
    out: dict[str, Path] = {}
    write_import(import_dataset("hotpotqa", [HOTPOT_DEV]), folder / "hotpot")
    out["hotpot_cases"], out["hotpot_corpus"] = folder / "hotpot" / "cases.jsonl", folder / "hotpot" / "corpus.jsonl"
    for name, (index_dir, cases) in (("enterprise", enterprise), ("hotpot", hotpot)):
        out[f"{name}_traces"] = folder / f"{name}-traces.jsonl"
        run_questions(make_engine("multihop", load_index(index_dir)), questions_from_cases(cases), out[f"{name}_traces"],
                      run_id="r1")
    cases = enterprise[1]
    out["oracle"] = folder / "oracle.jsonl"
    write_traces(out["oracle"], [oracle_trace(c, run_id="oracle") for c in cases[:12]])  # 4 cases without an oracle trace
    out["calibration"] = folder / "calibration.json"
    out["calibration"].write_text(json.dumps(calibrate(cases, resamples=100)), encoding="utf-8")
    out["broken_cases"] = folder / "broken-cases.jsonl"
    write_cases(out["broken_cases"], [broken(cases[0]), *cases[1:]])
    lines = (ENTERPRISE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    out["corpus_without_faq2"] = folder / "corpus.jsonl"
    out["corpus_without_faq2"].write_text("".join(line + "\n" for line in lines if json.loads(line)["id"] != "faq-2"),
                                          encoding="utf-8")
    # a duplicate trace, one for an unknown case id, and a last line cut off mid-write
    records = out["enterprise_traces"].read_text(encoding="utf-8").splitlines()
    unknown = json.loads(records[1]) | {"case_id": "ent-999"}
    out["messy_traces"] = folder / "messy.jsonl"
    out["messy_traces"].write_text("\n".join([*records, records[2], json.dumps(unknown), records[3][:80]]), encoding="utf-8")
    out["duplicate_traces"] = folder / "duplicates.jsonl"
    out["duplicate_traces"].write_text("\n".join([*records, records[2], json.dumps(unknown)]) + "\n", encoding="utf-8")
    return out


def run_eval(args: list[str], out_dir: Path, expected_exit: int = 0) -> tuple[str, str, bytes | None]:
    """``hoprag eval ARGS --json DIR/eval.json --html DIR/report.html``: the JSON text, what it
    printed (the folder's name replaced), and the HTML bytes."""
    out_dir.mkdir(parents=True)
    result = CliRunner().invoke(app, ["eval", *args, "--json", str(out_dir / "eval.json"),
                                      "--html", str(out_dir / "report.html")])
    assert result.exit_code == expected_exit, result.output
    assert "Traceback" not in result.output
    html = (out_dir / "report.html").read_bytes() if (out_dir / "report.html").exists() else None
    return (out_dir / "eval.json").read_text(encoding="utf-8"), result.output.replace(str(out_dir), "OUT"), html


def assert_same_on_ray(args: list[str], tmp_path: Path, expected_exit: int = 0) -> tuple[dict, str]:
    """Eval with the local executor and on Ray: the same files and output; the JSON and the output."""
    # folder names of one length, so the output wraps its paths alike
    local = run_eval(args, tmp_path / "local", expected_exit)
    remote = run_eval([*args, *RAY], tmp_path / "onray", expected_exit)
    assert remote[0] == local[0]  # the JSON, byte for byte
    assert remote[1] == local[1]  # the printed tables and warnings
    assert remote[2] == local[2]  # the HTML report
    return json.loads(local[0]), local[1]


def test_enterprise_with_an_oracle_run_and_a_judge_calibration(files, tmp_path):
    args = [str(ENTERPRISE / "cases.jsonl"), str(files["enterprise_traces"]), "--oracle", str(files["oracle"]),
            "--judge-calibration", str(files["calibration"])]
    payload, _ = assert_same_on_ray(args, tmp_path)
    assert payload["aggregate"]["cases"] == 16 and payload["aggregate"]["oracle_missing_traces"] == 4
    assert [row["case_id"] for row in payload["cases"]] == [f"ent-{i:03d}" for i in range(1, 17)]
    assert payload["metric_meta"]["citation_support"]["calibration"] != "uncalibrated"
    threads = run_eval([*args, "--workers", "2"], tmp_path / "threads")
    assert threads[0] == (tmp_path / "local" / "eval.json").read_text(encoding="utf-8")


def test_hotpot_with_its_corpus(files, tmp_path):
    args = [str(files["hotpot_cases"]), str(files["hotpot_traces"]), "--corpus", str(files["hotpot_corpus"]), "--k", "2", "--k", "5"]
    payload, _ = assert_same_on_ray(args, tmp_path)
    assert payload["aggregate"]["cases"] == 9 and payload["config"]["corpus_checked"] is True
    assert payload["groups"]["question_type"]  # bridge / comparison groups


def test_corpus_label_exclusions_and_missing_sources(files, tmp_path):
    args = [str(files["broken_cases"]), str(files["enterprise_traces"]), "--corpus", str(files["corpus_without_faq2"])]
    payload, printed = assert_same_on_ray(args, tmp_path)
    assert "1 case(s) with label errors excluded from scoring: ent-001" in printed
    agg = payload["aggregate"]
    assert agg["cases"] == 15 and agg["label_excluded_cases"] == 1 and agg["missing_source_facts"] > 0
    assert payload["labels"]["excluded_cases"] == ["ent-001"]
    assert "ent-001" not in {row["case_id"] for row in payload["cases"]}


def test_lenient_and_strict_trace_problems(files, tmp_path):
    cases = str(ENTERPRISE / "cases.jsonl")
    lenient, printed = assert_same_on_ray([cases, str(files["messy_traces"]), "--lenient"], tmp_path / "lenient")
    assert "1 trace line(s) excluded (--lenient)" in printed
    reasons = [e["reason"] for e in lenient["exclusions"]]
    assert lenient["aggregate"]["excluded_trace_lines"] == 1 and "trace for an unknown case id" in reasons
    assert "duplicate trace (the last one is scored)" in reasons
    strict, printed = assert_same_on_ray([cases, str(files["duplicate_traces"]), "--strict"], tmp_path / "strict",
                                         expected_exit=1)
    assert "--strict: duplicate traces or traces for unknown case ids" in printed
    assert strict["aggregate"]["duplicate_traces"] == 1 and strict["aggregate"]["unknown_traces"] == 1


def test_an_unreachable_ray_address_is_one_error_naming_ray_start(files, tmp_path):
    done = subprocess.run([sys.executable, "-m", "hoprag.cli", "eval", str(ENTERPRISE / "cases.jsonl"),
                           str(files["enterprise_traces"]), "--executor", "ray:127.0.0.1:9"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "no Ray cluster answers at 127.0.0.1:9" in said and "ray start --head" in said
    assert "Traceback" not in done.stderr and not done.stdout.strip()


class FailingJudge:
    """A judge that fails on every claim (as a judge whose model cannot be reached would)."""

    model_id = "failing"
    prompt_version = "v0"

    def judge(self, claim: str, evidence_text: str):
        raise RuntimeError("judge down")


def test_a_failing_worker_is_one_error_that_names_what_failed(enterprise, files):
    from hoprag.evaluation.chain_eval import evaluate_chains
    from hoprag.io.traces import read_traces
    from hoprag.executors import ExecutorError, RayExecutor

    module = sys.modules[__name__]
    ray.cloudpickle.register_pickle_by_value(module)  # the workers cannot import this test file
    try:
        with pytest.raises(ExecutorError, match=r"a Ray worker failed \(RuntimeError: judge down\).*--executor local"):
            evaluate_chains(enterprise[1], read_traces(files["enterprise_traces"]), judge=FailingJudge(),
                            executor=RayExecutor(workers=1))
    finally:
        ray.cloudpickle.unregister_pickle_by_value(module)
