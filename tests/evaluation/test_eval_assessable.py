"""Failure classes are counted only where the traces carry the fields they need: a recorded pipeline
that extracts no bridges and cites nothing gets no wrong_bridge_extraction and no citation_failure,
and the JSON, the table and the HTML name the classes not assessed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hoprag
from hoprag.cli import app
from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.failures import diagnose, missing_fields, not_assessable_note
from hoprag.io.traces import read_traces
from hoprag.records import Trace

pytestmark = pytest.mark.unit

CASES_FILE = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"
CASES = {c.case_id: c for c in load_cases(CASES_FILE)}
ALL_THREE = {"wrong_bridge_extraction": ["bridge state"], "unsupported_composition": ["citations"],
             "citation_failure": ["citations"]}


def record(path: Path, *, bridges: bool, cites: bool) -> list[Trace]:
    """ent-003: Wren's tier found, the follow-up asks for the wrong thing; ent-014: the whole chain and
    the right answer (document-level ids, as a pipeline that knows documents records them)."""
    recorder = hoprag.Recorder(path, replace=True)
    with recorder.case("ent-003", CASES["ent-003"].query) as r:
        r.retrieval(CASES["ent-003"].query, ["contract-31", "faq-10"])
        r.retrieval("Wren Labs critical response", ["faq-10"], bridge="Wren Labs" if bridges else None)
        r.answer("8 hours", citations=["faq-10"] if cites else ())
    with recorder.case("ent-014", CASES["ent-014"].query) as r:
        r.retrieval(CASES["ent-014"].query, ["catalog-3", "policy-14-v2"])
        r.answer("KR-West", citations=["catalog-3", "policy-14-v2"] if cites else ())
    return read_traces(path)


def test_a_pipeline_without_bridges_or_citations_is_not_charged_with_them(tmp_path: Path) -> None:
    traces = record(tmp_path / "t.jsonl", bridges=False, cites=False)
    cases = [CASES["ent-003"], CASES["ent-014"]]
    # judged alone (every class assessed) these two would be a wrong bridge and a citation failure
    assert [diagnose(c, t).failure for c, t in zip(cases, traces)] == ["wrong_bridge_extraction", "citation_failure"]
    assert missing_fields(traces) == {"bridge state", "citations"}
    report = evaluate_chains(cases, traces, ks=(5,))
    rows = {r["case_id"]: r for r in report.cases}
    assert rows["ent-003"]["failure"] == "hop2_retrieval_miss" and "not assessable" in rows["ent-003"]["failure_detail"]
    assert rows["ent-014"]["passed"] and rows["ent-014"]["citation_support"] is None
    assert report.not_assessable == ALL_THREE
    assert report.failures == {"missing_corpus_fact": 0, "hop1_retrieval_miss": 0, "hop2_retrieval_miss": 1,
                               "selection_loss": 0, "wrong_answer": 0, "missing_trace": 0, "pipeline_error": 0,
                               "passed": 1, "failed": 1}


def test_the_same_pipeline_with_bridges_and_citations_is_assessed_in_full(tmp_path: Path) -> None:
    traces = record(tmp_path / "t.jsonl", bridges=True, cites=True)
    report = evaluate_chains([CASES["ent-003"], CASES["ent-014"]], traces, ks=(5,))
    assert report.not_assessable == {} and missing_fields(traces) == frozenset()
    assert [r["failure"] for r in report.cases] == ["wrong_bridge_extraction", None]
    assert report.failures["citation_failure"] == 0 and report.to_json()["not_assessable"] == {}


def test_a_set_is_assessed_where_any_trace_carries_the_field() -> None:
    case = CASES["ent-003"]
    single_shot = Trace("r", case.case_id, case.query)  # no follow-up, no answer: nothing to lack
    assert missing_fields([single_shot, None]) == frozenset()
    assert not_assessable_note({}) == ""
    assert not_assessable_note(ALL_THREE) == ("not assessable: wrong_bridge_extraction (traces carry no bridge state); "
                                              "unsupported_composition, citation_failure (traces carry no citations)")


def test_eval_table_json_and_html_say_what_was_not_assessed(tmp_path: Path) -> None:
    traces_file = tmp_path / "t.jsonl"
    record(traces_file, bridges=False, cites=False)
    result = CliRunner().invoke(app, ["eval", str(CASES_FILE), str(traces_file), "--json", str(tmp_path / "r.json"),
                                      "--html", str(tmp_path / "r.html")], terminal_width=200)
    assert result.exit_code == 0, result.output
    note = not_assessable_note(ALL_THREE)
    assert note in " ".join(result.output.split())
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["not_assessable"] == ALL_THREE
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert note in html and "wrong bridge extraction" not in html and "citation failure" not in html
    assert "hop2 retrieval miss" in html


def test_a_release_demanding_attribution_is_not_passed_by_traces_that_cite_nothing(tmp_path: Path) -> None:
    from hoprag.evaluation.release import decide, parse_policy

    cases = [CASES["ent-014"]]  # (ent-003's wrong answer would fail the release on its own)
    policy = {"critical": {"case_ids": ["ent-014"]}}
    plain = evaluate_chains(cases, record(tmp_path / "plain.jsonl", bridges=False, cites=False), ks=(10,))
    assert decide(cases, plain, parse_policy(policy)).passed  # chain and answer right: attribution not asked for
    strict = decide(cases, plain, parse_policy({**policy, "critical_attribution": True}))
    assert strict.reasons == ["critical ent-014: attribution not assessable (traces carry no citations) (needs passed)"]
    cited = evaluate_chains(cases, record(tmp_path / "cited.jsonl", bridges=True, cites=True), ks=(10,))
    assert decide(cases, cited, parse_policy({**policy, "critical_attribution": True})).passed


def test_compare_judges_both_runs_on_the_classes_both_can_show(tmp_path: Path) -> None:
    from hoprag.evaluation.compare import compare_runs

    cases = [CASES["ent-003"], CASES["ent-014"]]
    citing = record(tmp_path / "a.jsonl", bridges=True, cites=True)
    # run A cites on ent-003 but not on ent-014: alone, ent-014 is a citation failure
    citing[1] = Trace(**{**citing[1].__dict__, "answer": type(citing[1].answer)("KR-West")})
    assert evaluate_chains(cases, citing).cases[1]["failure"] == "citation_failure"
    plain = record(tmp_path / "b.jsonl", bridges=False, cites=False)  # run B cites nothing
    result = compare_runs(cases, citing, plain, k=5, resamples=50)
    assert result.a.not_assessable == result.b.not_assessable == ALL_THREE
    assert [r["passed"] for r in result.a.cases] == [r["passed"] for r in result.b.cases] == [False, True]
    pass_rate = next(r for r in result.rows if r["metric"] == "pass_rate")
    assert pass_rate["diff"] == 0.0 and result.to_json()["not_assessable"] == ALL_THREE
