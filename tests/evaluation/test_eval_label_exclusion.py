"""A case whose labels contradict their sources is excluded from scoring, counted and listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.labels import verify_labels
from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.ingest.loaders import load_documents

from chain_fixtures import broken, oracle_trace

pytestmark = pytest.mark.unit
DATA = Path(__file__).parents[2] / "data" / "enterprise"
CASES = load_cases(DATA / "cases.jsonl")
DOCS = load_documents(DATA / "corpus.jsonl")


def test_broken_label_is_excluded_not_scored() -> None:
    cases = [broken(CASES[0]), *CASES[1:]]
    traces = [oracle_trace(c) for c in CASES]
    labels = verify_labels(cases, DOCS)
    assert labels.excluded_cases == ["ent-001"]
    report = evaluate_chains(cases, traces, ks=(50,), label_report=labels)
    agg = report.aggregate
    assert agg["cases"] == 15 and agg["label_excluded_cases"] == 1 and agg["missing_source_facts"] == 0
    assert agg["unknown_traces"] == 0  # the excluded case's trace is not an unknown one
    assert agg["chain_coverage@50"] == 1.0
    assert "ent-001" not in {r["case_id"] for r in report.cases}
    (exclusion,) = [e for e in report.exclusions if e["case_id"] == "ent-001"]
    assert "span_mismatch (contract-14:orion-plan)" in exclusion["reason"]
    assert exclusion["problems"][0]["expected"].startswith("Projekt Orion")
    payload = report.to_json()
    assert payload["labels"]["excluded_cases"] == ["ent-001"]
    assert payload["config"]["labels_checked"] == {"documents": len(DOCS), "span_match": "exact"}


def test_without_a_label_report_every_case_is_scored() -> None:
    cases = [broken(CASES[0]), *CASES[1:]]
    report = evaluate_chains(cases, [oracle_trace(c) for c in CASES], ks=(50,))
    assert report.aggregate["cases"] == 16 and "label_excluded_cases" not in report.aggregate
    assert "labels" not in report.to_json()


def test_missing_source_is_listed_and_still_scored() -> None:
    docs = [d for d in DOCS if d.id != "faq-2"]
    labels = verify_labels(CASES, docs)
    assert labels.excluded_cases == [] and labels.missing_source_facts()
    report = evaluate_chains(CASES, [oracle_trace(c) for c in CASES], ks=(50,), label_report=labels,
                             corpus_ids={d.id for d in docs})
    assert report.aggregate["cases"] == 16
    assert report.aggregate["missing_source_facts"] == len(labels.missing_source_facts())


@pytest.mark.parametrize("command", ["eval", "chain-eval"])
def test_eval_corpus_excludes_and_lists_broken_labels(tmp_path: Path, command: str) -> None:
    import json

    from typer.testing import CliRunner

    from hoprag.cli import app
    from hoprag.datasets.schema import write_cases
    from hoprag.io.traces import write_traces

    cases_file, traces_file, out = tmp_path / "cases.jsonl", tmp_path / "traces.jsonl", tmp_path / "eval.json"
    write_cases(cases_file, [broken(CASES[0]), *CASES[1:]])
    write_traces(traces_file, [oracle_trace(c) for c in CASES])
    args = [command, str(cases_file), str(traces_file), "--k", "50", "--json", str(out)]
    result = CliRunner().invoke(app, [*args, "--corpus", str(DATA / "corpus.jsonl")])
    assert result.exit_code == 0, result.output
    assert "1 case(s) with label errors excluded from scoring: ent-001" in result.output
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert payload["aggregate"]["cases"] == 15 and payload["aggregate"]["label_excluded_cases"] == 1
    assert payload["labels"]["by_case"]["ent-001"][0]["kind"] == "span_mismatch"
    plain = CliRunner().invoke(app, args)  # without --corpus nothing is verified: all 16 scored
    assert plain.exit_code == 0 and json.loads(out.read_text(encoding="utf-8"))["aggregate"]["cases"] == 16
