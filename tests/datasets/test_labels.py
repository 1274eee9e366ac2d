"""Label verification on a planted set: every problem is reported by case and fact id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.cli import app
from hoprag.datasets.labels import read_cases_checked, verify_labels
from hoprag.datasets.schema import load_cases
from hoprag.ingest.loaders import load_documents

pytestmark = pytest.mark.unit
DATA = Path(__file__).parents[2] / "data" / "enterprise"
REMOVED_DOC = "faq-2"  # dropped from the planted corpus


def raw_cases() -> dict[str, dict]:
    lines = (DATA / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {d["case_id"]: d for d in map(json.loads, lines)}


def plant(tmp_path: Path) -> tuple[Path, Path, set[tuple[str, str, str | None]]]:
    """Write a planted cases file and corpus; return them and the expected (case, kind, fact) triples."""
    cases = raw_cases()
    expected: set[tuple[str, str, str | None]] = set()
    # one word of a labelled sentence differs from the document
    span = cases["ent-001"]["facts"]["contract-14:orion-plan"]["spans"][0]
    span["text"] = span["text"].replace("acquires", "acquired")
    expected.add(("ent-001", "span_mismatch", "contract-14:orion-plan"))
    # a chain naming a fact that is not defined
    cases["ent-002"]["valid_chains"][0].append("ghost:fact")
    expected.add(("ent-002", "undefined_fact", "ghost:fact"))
    # a fact whose source document does not exist
    fact_id = next(iter(cases["ent-003"]["facts"]))
    cases["ent-003"]["facts"][fact_id]["source_id"] = "memo-404"
    expected.add(("ent-003", "missing_source", fact_id))
    # offsets past the end of the document
    fact_id4 = next(iter(cases["ent-004"]["facts"]))
    cases["ent-004"]["facts"][fact_id4]["spans"][0].update(start=90_000, end=90_010)
    expected.add(("ent-004", "span_out_of_range", fact_id4))
    # an edge to an undefined fact, and an empty chain
    cases["ent-005"]["edges"].append({"from": next(iter(cases["ent-005"]["facts"])), "to": "nowhere"})
    expected.add(("ent-005", "undefined_fact", "nowhere"))
    cases["ent-006"]["valid_chains"].append([])
    expected.add(("ent-006", "empty_chain", None))
    # a reversed span
    fact_id9 = next(iter(cases["ent-009"]["facts"]))
    first = cases["ent-009"]["facts"][fact_id9]["spans"][0]
    first["start"], first["end"] = first["end"], first["start"]
    expected.add(("ent-009", "invalid_span", fact_id9))
    # whitespace differs: an error when exact (the default), fine with --span-match whitespace
    fact_id12 = next(iter(cases["ent-012"]["facts"]))
    span12 = cases["ent-012"]["facts"][fact_id12]["spans"][0]
    span12["text"] = span12["text"].replace(" ", "  ", 1)
    expected.add(("ent-012", "span_mismatch", fact_id12))
    # a back edge making a dependency cycle
    edge = cases["ent-016"]["edges"][0]
    cases["ent-016"]["edges"].append({"from": edge["to"], "to": edge["from"]})
    expected.add(("ent-016", "dependency_cycle", edge["from"]))
    # a document removed from the corpus: every fact citing it has a missing source
    for cid, case in cases.items():
        for fid, fact in case["facts"].items():
            if fact["source_id"] == REMOVED_DOC:
                expected.add((cid, "missing_source", fid))
        for d in case["distractors"]:
            if d["source_id"] == REMOVED_DOC:
                expected.add((cid, "missing_distractor", None))
    cases_file = tmp_path / "planted.jsonl"
    lines = [json.dumps(c, ensure_ascii=False) for c in cases.values()]
    lines.append(lines[-1])  # the last case twice
    expected.add(("ent-016", "duplicate_case_id", None))
    cases_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = tmp_path / "corpus.jsonl"
    kept = [line for line in (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
            if json.loads(line)["id"] != REMOVED_DOC]
    corpus.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return cases_file, corpus, expected


def triples(report) -> set[tuple[str, str, str | None]]:
    return {(p.case_id, p.kind, p.fact_id) for p in report.problems}


def test_enterprise_labels_match_their_sources() -> None:
    report = verify_labels(load_cases(DATA / "cases.jsonl"), load_documents(DATA / "corpus.jsonl"))
    assert report.problems == () and report.spans_checked == 89 and report.excluded_cases == []


def test_every_planted_problem_is_reported_by_case_and_fact(tmp_path: Path) -> None:
    cases_file, corpus, expected = plant(tmp_path)
    cases, load_problems = read_cases_checked(cases_file)
    assert len(cases) == 16  # broken references are removed for checking, the duplicate line is not kept
    report = verify_labels(cases, load_documents(corpus), problems=load_problems)
    assert triples(report) == expected
    mismatch = next(p for p in report.problems if p.case_id == "ent-001")
    assert "acquired" in mismatch.expected and "acquires" in mismatch.found
    assert "re-extract the span from the source" in mismatch.fix and mismatch.field == "facts.contract-14:orion-plan.spans[0]"
    assert "occurs nowhere" in mismatch.fix
    assert "different whitespace" in next(p.fix for p in report.problems if p.case_id == "ent-012")
    assert next(p for p in report.problems if p.case_id == "ent-002").field == "valid_chains[0]"
    # errors exclude a case from scoring; a missing source is listed but does not
    errors = {cid for cid, kind, _ in expected if kind not in ("missing_source", "missing_distractor")}
    assert set(report.excluded_cases) == errors
    assert {"case_id": "ent-003", "fact_id": next(iter(raw_cases()["ent-003"]["facts"])), "source_id": "memo-404"} in report.missing_source_facts()


def test_whitespace_comparison_is_an_option(tmp_path: Path) -> None:
    cases_file, corpus, _ = plant(tmp_path)
    cases, _ = read_cases_checked(cases_file)
    lenient = verify_labels(cases, load_documents(corpus), span_match="whitespace")
    assert ("ent-012", "span_mismatch") not in {(p.case_id, p.kind) for p in lenient.problems}
    assert ("ent-001", "span_mismatch") in {(p.case_id, p.kind) for p in lenient.problems}


def test_audit_cli_names_every_problem(tmp_path: Path) -> None:
    cases_file, corpus, expected = plant(tmp_path)
    out_json = tmp_path / "audit.json"
    result = CliRunner().invoke(app, ["audit", str(cases_file), str(corpus), "--json", str(out_json),
                                      "--out", str(tmp_path / "shortcuts.jsonl"), "--fail-on-findings"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    payload = json.loads(out_json.read_text(encoding="utf-8"))
    listed = {(p["case_id"], p["kind"], p["fact_id"]) for ps in payload["labels"]["by_case"].values() for p in ps}
    assert listed == expected
    assert set(payload["flagged_cases"]) >= {cid for cid, _, _ in expected}
    for cid, kind, fact in expected:
        assert cid in result.output and kind in result.output
        if fact:
            assert fact in result.output
    assert "excluded from scoring (label errors)" in result.output


def test_audit_flags_a_corpus_without_the_cases_documents(tmp_path: Path) -> None:
    empty = tmp_path / "other.jsonl"
    empty.write_text(json.dumps({"id": "x-1", "title": "Other", "text": "Unrelated text."}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["audit", str(DATA / "cases.jsonl"), str(empty), "--out", str(tmp_path / "s.jsonl")])
    assert result.exit_code == 0, result.output
    assert "flagged 16 of 16 cases" in result.output and "missing_source" in result.output


def test_a_broken_fact_is_named_and_the_rest_of_the_case_still_checked(tmp_path: Path) -> None:
    case = raw_cases()["ent-001"]
    facts = list(case["facts"])
    case["facts"][facts[0]]["spans"][0]["start"] = -4  # not a valid offset
    del case["facts"][facts[1]]["spans"][0]["text"]  # a span without its text
    span = case["facts"][facts[2]]["spans"][0]
    span["text"] = span["text"].upper()  # a later fact is still compared with its source
    bare = {"case_id": "bare-1", "query": "Which plan?", "facts": {"f": {"source_id": "catalog-3"}}}
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(case) + "\n" + json.dumps(bare) + "\n" + '{"case_id": "q-1", "query": " "}\n', encoding="utf-8")
    cases, problems = read_cases_checked(path)
    report = verify_labels(cases, load_documents(DATA / "corpus.jsonl"), problems=problems)
    got = {(p.case_id, p.kind, p.fact_id) for p in report.problems}
    assert {("ent-001", "invalid_case", facts[0]), ("ent-001", "invalid_case", facts[1]),
            ("ent-001", "span_mismatch", facts[2]), ("bare-1", "no_chain", None), ("q-1", "invalid_case", None)} <= got
    assert report.excluded_cases == ["ent-001", "q-1"]  # no_chain is a warning
    assert [c.case_id for c in cases] == ["ent-001", "bare-1"]
