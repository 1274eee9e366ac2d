"""Judge calibration: kappa by hand and against sklearn, seeded bootstrap, enterprise examples, release refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.cli import app
from hoprag.datasets.schema import load_cases
from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.calibration import (
    agreement,
    bootstrap_kappa_ci,
    build_examples,
    calibrate,
    cohen_kappa,
    read_judgments,
)
from hoprag.evaluation.release import judge_calibration, parse_policy

pytestmark = pytest.mark.unit
ROOT = Path(__file__).parents[2]
CASES_FILE = ROOT / "data" / "enterprise" / "cases.jsonl"
CASES = load_cases(CASES_FILE)
TRACES = ROOT / "tests" / "data" / "eval_traces.jsonl"

# tp=4, fn=1, fp=2, tn=3: p_o = 7/10; human yes 5/10, judge yes 6/10
HUMAN = [True] * 5 + [False] * 5
JUDGE = [True, True, True, True, False, True, True, False, False, False]
KAPPA = (7 / 10 - (5 / 10 * 6 / 10 + 5 / 10 * 4 / 10)) / (1 - (5 / 10 * 6 / 10 + 5 / 10 * 4 / 10))  # = 0.4


def test_kappa_by_hand_and_against_sklearn() -> None:
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(KAPPA) == pytest.approx(0.4)
    result = agreement(HUMAN, JUDGE, resamples=200)
    assert result.confusion == {"tp": 4, "fn": 1, "fp": 2, "tn": 3} and result.accuracy == 0.7
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(sklearn_metrics.cohen_kappa_score(HUMAN, JUDGE))
    skewed = [True] * 8 + [False] * 2
    assert cohen_kappa(skewed, JUDGE) == pytest.approx(sklearn_metrics.cohen_kappa_score(skewed, JUDGE))


def test_kappa_is_undefined_when_both_raters_never_vary() -> None:
    assert cohen_kappa([True, True], [True, True]) is None and cohen_kappa([], []) is None
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)


def test_bootstrap_is_seeded() -> None:
    a = bootstrap_kappa_ci(HUMAN, JUDGE, resamples=300, seed=7)
    assert a == bootstrap_kappa_ci(HUMAN, JUDGE, resamples=300, seed=7)
    assert a[0] is not None and a[0] <= KAPPA <= a[1] and -1.0 <= a[0] and a[1] <= 1.0
    assert bootstrap_kappa_ci([], []) == (None, None)


def test_examples_have_both_labels_per_task_and_the_adjudicating_reviewers() -> None:
    built = build_examples(CASES)
    for task in ("claim_support", "faithfulness", "answer_equivalence"):
        labels = {e.label for e in built.examples if e.task == task}
        assert labels == {True, False}, task
    first = next(e for e in built.examples if e.case_id == "ent-001" and e.item == "alias:0")
    assert (first.claim, first.label, first.reviewer) == ("seven years", True, "adjudication:r1+r2")
    ent013 = next(e for e in built.examples if e.case_id == "ent-013")
    assert ent013.reviewer.count("+") == 1  # the rejecting reviewer is not credited with the label
    # no negative pairs a case with its own answer
    for e in built.examples:
        if e.item == "alias:other":
            case = next(c for c in CASES if c.case_id == e.case_id)
            assert e.claim not in case.answers + case.aliases


def test_human_labels_replace_derived_ones_and_ties_are_contested(tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    rows = [
        {"case_id": "ent-001", "item": "alias:2", "label": False, "reviewer": "r3"},
        {"case_id": "ent-002", "item": "alias:0", "label": True, "reviewer": "r3"},
        {"case_id": "ent-002", "item": "alias:0", "label": False, "reviewer": "r4"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    built = build_examples(CASES, read_judgments(path))
    relabelled = next(e for e in built.examples if (e.case_id, e.item) == ("ent-001", "alias:2"))
    assert relabelled.label is False and relabelled.reviewer == "r3"
    assert built.contested == ("ent-002/alias:0",)
    assert built.digest != build_examples(CASES).digest
    path.write_text(json.dumps({"case_id": "ent-001", "item": "alias:99", "label": True, "reviewer": "r3"}) + "\n")
    with pytest.raises(InputError, match="alias:99"):
        build_examples(CASES, read_judgments(path))
    path.write_text(json.dumps({"case_id": "ent-001", "item": "alias:0", "label": "yes", "reviewer": "r3"}) + "\n")
    with pytest.raises(InputError, match="'label' as true/false"):
        read_judgments(path)


def test_offline_judge_on_the_enterprise_set_gets_a_real_kappa_with_a_ci(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    res = CliRunner().invoke(app, ["judge", "calibrate", str(CASES_FILE), "--out", str(out), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert "overall" in res.output and "kappa=" in res.output and "95% CI [" in res.output
    record = json.loads(out.read_text(encoding="utf-8"))
    overall = record["overall"]
    assert record["judge"]["llm"] == "offline" and record["judge"]["prompt_version"] == "v1"
    assert record["examples_digest"].startswith("sha256:") and overall["n"] == sum(overall["confusion"].values())
    assert 0.0 < overall["kappa"] < 1.0 and overall["kappa_ci95"][0] <= overall["kappa"] <= overall["kappa_ci95"][1]
    assert set(record["tasks"]) == {"claim_support", "faithfulness", "answer_equivalence"}
    assert record["disagreements"]  # the token-overlap judge is not perfect, and says where
    assert calibrate(CASES, resamples=200)["overall"] == overall


def test_only_the_offline_judge_and_a_served_model_can_be_calibrated() -> None:
    with pytest.raises(ConfigError, match="--llm offline"):
        calibrate(CASES, llm="llamacpp:some-model.gguf")


def _policy(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_release_refuses_an_uncalibrated_judge_metric_unless_allowed(tmp_path: Path, capsys) -> None:
    from hoprag.cli import main

    runner = CliRunner()
    policy = _policy(tmp_path, "min:\n  citation_support: 0.5\n")
    with pytest.raises(SystemExit) as exited:
        main(["release", str(CASES_FILE), str(TRACES), "--policy", str(policy)])
    said = capsys.readouterr().err
    assert exited.value.code == 2 and "--allow-uncalibrated" in said and "citation_support" in said
    assert "Traceback" not in said
    res = runner.invoke(app, ["release", str(CASES_FILE), str(TRACES), "--policy", str(policy), "--allow-uncalibrated"])
    assert res.exit_code in (0, 1) and "policy sha256:" in res.output and "uncalibrated judge" in res.output
    # a policy without judge metrics needs no calibration
    plain = _policy(tmp_path, "min:\n  chain_coverage@10: 0.0\n")
    assert runner.invoke(app, ["release", str(CASES_FILE), str(TRACES), "--policy", str(plain)]).exit_code == 0


def test_release_reads_the_calibration_the_policy_names(tmp_path: Path) -> None:
    record = calibrate(CASES, resamples=100)
    (tmp_path / "cal.json").write_text(json.dumps(record), encoding="utf-8")
    policy = _policy(tmp_path, "calibration: cal.json\nmin:\n  citation_support: 0.0\n")
    res = CliRunner().invoke(app, ["release", str(CASES_FILE), str(TRACES), "--policy", str(policy),
                                   "--json", str(tmp_path / "d.json")])
    assert "calibrated: kappa=" in res.output, res.output
    meta = json.loads((tmp_path / "d.json").read_text())["judge_calibration"]
    assert meta["calibration_digest"] == record["examples_digest"] and meta["calibration_n"] == record["overall"]["n"]
    other = {**record, "judge": {**record["judge"], "llm": "openai:m", "model_id": "openai:m"}}
    (tmp_path / "cal.json").write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(ConfigError, match="release scores with the offline judge"):
        judge_calibration(parse_policy({"calibration": str(tmp_path / "cal.json")}))
    (tmp_path / "cal.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(InputError, match="not a calibration record"):
        judge_calibration(parse_policy({"calibration": str(tmp_path / "cal.json")}))


def test_the_example_policy_names_a_calibration_that_loads() -> None:
    from hoprag.evaluation.release import load_policy

    meta = judge_calibration(load_policy(ROOT / "examples" / "release-policy.yaml"))
    assert meta is not None and meta["calibration_kappa"] is not None


def test_eval_records_the_judge_calibration_in_every_judged_metric_meta(tmp_path: Path) -> None:
    import hashlib

    runner = CliRunner()
    calibration = tmp_path / "calibration.json"
    assert runner.invoke(app, ["judge", "calibrate", str(CASES_FILE), "--out", str(calibration),
                               "--resamples", "100"]).exit_code == 0
    record = json.loads(calibration.read_text(encoding="utf-8"))
    res = runner.invoke(app, ["eval", str(CASES_FILE), str(TRACES), "--judge-calibration", str(calibration),
                              "--json", str(tmp_path / "eval.json")])
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))["metric_meta"]
    assert set(meta) == {"citation_support", "claim_recall"}
    cited = meta["citation_support"]
    assert cited == meta["claim_recall"] and cited["calibration"] == "calibrated"
    assert cited["judge_model_id"] == "deterministic:token-containment+answer-f1>=0.5"
    assert cited["judge_prompt_version"] == "v1"
    assert (cited["calibration_kappa"], cited["calibration_kappa_ci95"], cited["calibration_n"]) == (
        record["overall"]["kappa"], record["overall"]["kappa_ci95"], record["overall"]["n"])
    assert cited["calibration_file_sha256"] == "sha256:" + hashlib.sha256(calibration.read_bytes()).hexdigest()[:16]
    assert cited["calibration_date"] == record["date"] and cited["calibration_digest"] == record["examples_digest"]
    assert "calibrated: kappa=" in " ".join(res.output.split())

    plain = runner.invoke(app, ["eval", str(CASES_FILE), str(TRACES), "--json", str(tmp_path / "plain.json")])
    meta = json.loads((tmp_path / "plain.json").read_text(encoding="utf-8"))["metric_meta"]
    assert meta["citation_support"] == {"calibration": "uncalibrated", "judge_model_id": "deterministic:token-containment",
                                        "judge_prompt_version": "v1"}
    assert "is uncalibrated" in " ".join(plain.output.split())


def test_eval_refuses_the_calibration_of_another_judge(tmp_path: Path, capsys) -> None:
    from hoprag.cli import main

    record = calibrate(CASES, resamples=50)
    other = tmp_path / "model.json"
    other.write_text(json.dumps({**record, "judge": {"llm": "openai:m", "model_id": "m", "prompt_version": "model-grader-v1"}}),
                     encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["eval", str(CASES_FILE), str(TRACES), "--judge-calibration", str(other)])
    said = capsys.readouterr().err
    assert exited.value.code == 2 and "calibration of judge 'm'" in said and "Traceback" not in said


def test_release_checks_of_judge_metrics_carry_the_judge_meta(tmp_path: Path) -> None:
    record = calibrate(CASES, resamples=100)
    (tmp_path / "cal.json").write_text(json.dumps(record), encoding="utf-8")
    runner = CliRunner()
    for body, expected in (("calibration: cal.json\nmin:\n  citation_support: 0.0\n", "calibrated"),
                           ("min:\n  citation_support: 0.0\n", "uncalibrated")):
        policy = _policy(tmp_path, body)
        extra = [] if expected == "calibrated" else ["--allow-uncalibrated"]
        res = runner.invoke(app, ["release", str(CASES_FILE), str(TRACES), "--policy", str(policy), *extra,
                                  "--json", str(tmp_path / "d.json")])
        assert res.exit_code in (0, 1), res.output
        decision = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
        (check,) = [c for c in decision["checks"] if c["check"] == "min citation_support"]
        assert check["judge"]["calibration"] == expected == decision["metric_meta"]["citation_support"]["calibration"]
        if expected == "calibrated":
            assert check["judge"]["calibration_kappa"] == record["overall"]["kappa"]
