"""A report broken down by chain hops (the shortest valid chain) and by the answer kind the question asks for:
in the JSON's groups, the HTML report and the printed table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.cli import app
from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.chain_scoring import answer_kind, hop_count
from hoprag.records import Trace
from tests.chain_fixtures import oracle_trace

pytestmark = pytest.mark.unit

CASES = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"


@pytest.fixture(scope="module")
def cases():
    return {c.case_id: c for c in load_cases(CASES)}


def test_hop_count_is_the_shortest_valid_chain(cases) -> None:
    assert hop_count(cases["ent-005"]) == 3  # chains of 4, 4, 4 and 3 facts
    assert hop_count(cases["ent-014"]) == 2
    assert hop_count(cases["ent-004"]) == 6


def test_answer_kind_reads_the_question(cases) -> None:
    assert answer_kind(cases["ent-007"]) == "explanatory"  # "Explain how ...": an explanatory case
    assert answer_kind(cases["ent-011"]) == "number"  # "How long is ..."
    assert answer_kind(cases["ent-004"]) == "person"  # "Whose records ..."


def test_groups_by_chain_hops(cases) -> None:
    chosen = [cases[i] for i in ("ent-003", "ent-009", "ent-010", "ent-011", "ent-014")]
    # two of the three 2-hop cases and one of the two 3-hop cases retrieve their chain; the rest nothing
    traces = [oracle_trace(cases["ent-003"]), oracle_trace(cases["ent-009"]), oracle_trace(cases["ent-010"]),
              Trace(run_id="r", case_id="ent-011", question="q"), Trace(run_id="r", case_id="ent-014", question="q")]
    report = evaluate_chains(chosen, traces, ks=(5,))
    hops = report.groups["chain_hops"]
    assert {name: g["cases"] for name, g in hops.items()} == {"2": 3, "3": 2}
    assert hops["2"]["chain_coverage@5"] == pytest.approx(2 / 3)
    assert hops["3"]["chain_coverage@5"] == pytest.approx(1 / 2)
    assert sum(g["cases"] for g in report.groups["answer_kind"].values()) == 5
    assert all(row["chain_hops"] in (2, 3) for row in report.cases)


def test_eval_prints_and_writes_the_slices(tmp_path: Path, cases) -> None:
    chosen = [cases[i] for i in ("ent-003", "ent-010", "ent-007")]
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("".join(json.dumps(c.model_dump(mode="json")) + "\n" for c in chosen), encoding="utf-8")
    traces_file = tmp_path / "traces.jsonl"
    traces_file.write_text("".join(json.dumps(oracle_trace(c).to_dict()) + "\n" for c in chosen), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", str(cases_file), str(traces_file), "--json", str(tmp_path / "r.json"),
                                      "--html", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert "by chain hops:" in result.output and "by answer kind:" in result.output
    groups = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["groups"]
    assert set(groups["chain_hops"]) == {"2", "3", "5"}
    assert groups["answer_kind"]["explanatory"]["cases"] == 1
    assert "by chain hops" in (tmp_path / "r.html").read_text(encoding="utf-8")
