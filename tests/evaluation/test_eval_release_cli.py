"""Release policy decisions, oracle refusal, HTML report, and the evaluation CLI commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.cli import app
from hoprag.datasets.schema import load_cases
from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.release import decide, load_policy, parse_policy, refuse_oracle
from hoprag.io.traces import write_traces
from hoprag.records import Answer, Citation, Claim, Evidence, Hit, HopStep, Trace
from hoprag.report.html import render_html

pytestmark = pytest.mark.unit
ROOT = Path(__file__).parents[2]
CASES_FILE = ROOT / "data" / "enterprise" / "cases.jsonl"
CASES = {c.case_id: c for c in load_cases(CASES_FILE)}
CASE = CASES["ent-003"]
C31, P11 = Hit("c31", "contract-31", 1.0, 1, "bm25", 380, 450), Hit("p11", "policy-11", 1.0, 1, "bm25", 500, 560)
TEXT31, TEXT11 = "Project Wren Silver support tier", "Silver tier critical incidents first response within 4 hours"


def good(case_id: str = "ent-003", latency: float = 40.0) -> Trace:
    s1 = HopStep("s1", 1, "q", "q", (C31,), ("c31",), cumulative_ms=10)
    s2 = HopStep("s2", 2, "Silver", "Silver", (P11,), ("p11",), ("s1",), cumulative_ms=latency)
    ev = (Evidence(C31, TEXT31, "", 1, "s1", ""), Evidence(P11, TEXT11, "", 2, "s2", ""))
    claims = (Claim(TEXT11, (Citation("p11", "policy-11", 2),)), Claim(TEXT31, (Citation("c31", "contract-31", 1),)))
    return Trace("r", case_id, "q", (s1, s2), ev, Answer("4 hours", claims), "sufficient", latency_ms=latency)


POLICY = {"version": 1, "k": 10, "critical": {"case_ids": ["ent-003"]},
          "min": {"chain_coverage@10": 1.0, "citation_support": 0.9}, "max": {"latency_ms_p95": 100}}


def test_policy_pass_and_fail() -> None:
    cases = [CASE]
    ok = decide(cases, evaluate_chains(cases, [good()]), parse_policy(POLICY))
    assert ok.passed and ok.reasons == [] and ok.policy_hash.startswith("sha256:")
    slow = decide(cases, evaluate_chains(cases, [good(latency=500.0)]), parse_policy(POLICY))
    assert not slow.passed and slow.reasons == ["max latency_ms_p95: 500.0 (needs 100)"]
    wrong = good()
    wrong = Trace(**{**wrong.__dict__, "answer": Answer("5 hours", wrong.answer.claims)})
    bad = decide(cases, evaluate_chains(cases, [wrong]), parse_policy(POLICY))
    assert "critical ent-003: wrong_answer (needs passed)" in bad.reasons
    with pytest.raises(InputError, match="unknown policy sections"):
        parse_policy({"mins": {}})
    with pytest.raises(InputError, match="not reported"):
        decide(cases, evaluate_chains(cases, [good()]), parse_policy({"min": {"magic": 1}}))
    oracle = Trace("r", "ent-003", "q", (HopStep("s1", 1, "q", "", (C31,), filters={"oracle": True}),))
    with pytest.raises(ConfigError, match="oracle ablation"):
        refuse_oracle([oracle])


def test_example_policy_loads() -> None:
    policy = load_policy(ROOT / "examples" / "release-policy.yaml")
    assert policy.k == 10 and policy.raw["timeouts"]["allowed_fallbacks"] == ["abstain", "partial"]


def test_html_is_self_contained() -> None:
    report = evaluate_chains([CASE, CASES["ent-014"]], [good()])
    html = render_html(report.to_json(), cases=[CASE], traces=report.traces)
    assert html.startswith("<!doctype html>") and "<svg" in html and "<script" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    for section in ("Per-hop recall", "Earliest failure", "Latency", "Worst", "missing trace"):
        assert section in html
    assert 'class="gold">contract-31' in html


def test_cli_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    traces = tmp_path / "eval4_traces.jsonl"
    write_traces(traces, [good()])
    corpus = ROOT / "data" / "enterprise" / "corpus.jsonl"
    record = tmp_path / "shortcuts.jsonl"
    res = runner.invoke(app, ["audit", str(CASES_FILE), str(corpus), "--fail-on-findings", "--out", str(record)])
    assert res.exit_code == 0 and "no shortcuts found in 16 cases" in res.output and record.exists()
    res = runner.invoke(app, ["chain-eval", str(CASES_FILE), str(traces), "--html", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    payload = json.loads((tmp_path / "r.json").read_text())
    assert payload["failures"]["passed"] == 1 and payload["failures"]["missing_trace"] == 15
    policy = tmp_path / "policy.yaml"
    policy.write_text("min:\n  chain_coverage@10: 0.9\n")
    res = runner.invoke(app, ["release", str(CASES_FILE), str(traces), "--policy", str(policy)])
    assert res.exit_code == 1 and "FAIL" in res.output and "chain_coverage@10" in res.output
    res = runner.invoke(app, ["export-trec", str(CASES_FILE), str(traces), "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r")])
    assert res.exit_code == 0 and (tmp_path / "r").read_text().splitlines()[0] == "ent-003 Q0 contract-31 1 2 hoprag"
    res = runner.invoke(app, ["split", str(CASES_FILE), "--by", "template", "--ratios", "0.5,0.25,0.25", "--out", str(tmp_path / "s")])
    assert res.exit_code == 0 and "sealed test: sha256:" in res.output.replace("\n", "")
    res = runner.invoke(app, ["leakage", *(str(tmp_path / "s" / f"{n}.jsonl") for n in ("train", "dev", "test"))])
    assert res.exit_code == 0 and "train|test" in res.output
    res = runner.invoke(app, ["compare", str(traces), str(traces), "--cases", str(CASES_FILE), "--resamples", "200"])
    assert res.exit_code == 0 and "chain_coverage@10" in res.output
    res = runner.invoke(app, ["synth", str(corpus), "--out", str(tmp_path / "syn.jsonl"), "--max", "3"])
    assert res.exit_code == 0 and len((tmp_path / "syn.jsonl").read_text().splitlines()) == 3
