"""End to end through the real CLI: gate-run, baseline, gate exit codes, diff, trec-eval, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = ROOT / "thresholds.yaml"


def hoprag(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "hoprag.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.integration
@pytest.mark.slow
def test_ci_like_gate_flow(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    imported = hoprag("import", "hotpotqa", *sorted((ROOT / "data" / "hotpotqa").glob("*.json")),
                      "--out", tmp_path / "hp", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    run = hoprag("gate-run", tmp_path / "hp" / "corpus.jsonl", "--cases", tmp_path / "hp" / "cases.jsonl",
                 "--out", tmp_path / "run1", "--engine", "single", "--engine", "multihop", "--embedder", "hash",
                 "--run-id", "base-1", "--store", store, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "base-1"
    assert json.loads((tmp_path / "run1" / "index" / "run.json").read_text())["run_id"] == "base-1"

    no_base = hoprag("gate", "--run", "base-1", "--thresholds", THRESHOLDS, "--store", store, cwd=tmp_path)
    assert no_base.returncode == 2 and "no baseline 'default'" in no_base.stderr and "hoprag gate baseline" in no_base.stderr

    frozen = hoprag("baseline", "--run", "base-1", "--store", store, cwd=tmp_path)
    assert frozen.returncode == 0 and "reference batch" in frozen.stdout
    clean = hoprag("gate", "--run", "base-1", "--thresholds", THRESHOLDS, "--store", store, "--json", cwd=tmp_path)
    report = json.loads(clean.stdout)
    assert clean.returncode == 0 and report["blocked"] is False and report["blocking_failures"] == 0
    assert report["warnings"] >= 0 and report["baseline_run"] == "base-1"

    # the enterprise sample carries five role mailboxes: the blocking PII gate must stop it
    ent = ROOT / "data" / "enterprise"
    second = hoprag("gate-run", ent / "corpus.jsonl", "--cases", ent / "cases.jsonl", "--out", tmp_path / "run2",
                    "--embedder", "hash", "--run-id", "ent-1", "--store", store, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    blocked = hoprag("gate", "--run", "ent-1", "--thresholds", THRESHOLDS, "--store", store, cwd=tmp_path)
    assert blocked.returncode == 1
    assert "pii_hits" in blocked.stdout and "BLOCKED" in blocked.stdout
    assert "centroid_drift" in blocked.stdout  # measured against the frozen reference batch

    diff = hoprag("diff", "base-1", "ent-1", "--json", "--store", store, cwd=tmp_path)
    rows = {(r["stage"], r["metric"]): r for r in json.loads(diff.stdout)}
    assert rows[("ingest", "pii_hits")]["a"] == 0 and rows[("ingest", "pii_hits")]["b"] == 5
    assert {r["stage"] for r in rows.values()} == {"ingest", "chunk", "embed", "index", "retrieve", "generate", "feedback"}


@pytest.mark.integration
def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("retrieve:\n  nDCG@10x: {min: 0.1}\n", encoding="utf-8")
    result = hoprag("gate", "--run", "x", "--thresholds", bad, "--store", tmp_path / "s.db", cwd=tmp_path)
    assert result.returncode == 2 and "unknown metric 'nDCG@10x'" in result.stderr and "P@<k>" in result.stderr
    missing = hoprag("gate", "--run", "x", "--thresholds", tmp_path / "none.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "thresholds file not found" in missing.stderr
    unknown_run = hoprag("gate", "--run", "x", "--thresholds", THRESHOLDS, "--store", tmp_path / "s.db", cwd=tmp_path)
    assert unknown_run.returncode == 2 and "no run 'x'" in unknown_run.stderr
    down = hoprag("diff", "a", "b", "--store", "postgresql://u:pw@127.0.0.1:1/db", cwd=tmp_path)
    assert down.returncode == 2 and "cannot open the run store" in down.stderr and "pw" not in down.stderr


@pytest.mark.integration
def test_trec_eval_cli_matches_library(real_trec_pair: tuple[Path, Path, int], tmp_path: Path) -> None:
    from hoprag.evaluation.measures.documents import retrieval_measures
    from hoprag.trec import read_qrels, read_run

    qrels, run, _ = real_trec_pair
    result = hoprag("trec-eval", qrels, run, "-m", "P@5", "-m", "RR", "-m", "nDCG@10", "-m", "R@100", "--json",
                    "--per-query", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    expected = retrieval_measures(read_qrels(qrels), read_run(run), ["P@5", "RR", "nDCG@10", "R@100"])
    assert payload["aggregate"] == expected.aggregate and payload["queries"] == expected.queries
    assert len(payload["per_query"]["RR"]) == expected.queries
    text = hoprag("trec-eval", qrels, run, "-m", "nDCG@10", cwd=tmp_path)
    assert text.stdout.strip().startswith("nDCG@10\tall\t")
    wrong = hoprag("trec-eval", qrels, run, "-m", "NDCG10", cwd=tmp_path)
    assert wrong.returncode == 2 and "valid: P@k" in wrong.stderr


@pytest.mark.integration
def test_feedback_import_cli(tmp_path: Path) -> None:
    result = hoprag("feedback", "import", ROOT / "tests" / "data" / "gates_feedback.jsonl", "--store", tmp_path / "s.db",
                    cwd=tmp_path)
    assert result.returncode == 0 and "run run-fb: 13 new event(s)" in result.stdout
