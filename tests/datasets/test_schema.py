from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.schema import Case, dataset_version, load_cases, write_cases
from hoprag.errors import InputError

pytestmark = pytest.mark.unit

ENTERPRISE = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"


def test_enterprise_cases_load_unchanged_with_the_full_schema():
    cases = load_cases(ENTERPRISE)
    raw = [json.loads(line) for line in ENTERPRISE.read_text().splitlines()]
    assert len(cases) == 16
    for case, source in zip(cases, raw):
        dumped = json.loads(case.to_json())
        for key, value in source.items():
            if key == "facts":  # facts may gain optional keys (e.g. title: null); every given one is kept
                for fact_id, fact in value.items():
                    assert {k: dumped["facts"][fact_id][k] for k in fact} == fact, (case.case_id, fact_id)
            else:
                assert dumped[key] == value, (case.case_id, key)
    explanatory = [c for c in cases if c.answer_type == "explanatory"]
    assert explanatory and all(c.reference_claims for c in explanatory)
    contested = [c for c in cases if c.uncertain]
    assert [c.case_id for c in contested] == ["ent-013"] and len(contested[0].adjudication) == 3
    assert all(len(c.valid_chains) >= 1 and c.required_facts == c.valid_chains[0] for c in cases)


def test_fact_layers_are_graph_depth():
    case = load_cases(ENTERPRISE)[0]  # ent-001: code name -> plan -> family -> policy
    layers = case.fact_layers()
    assert layers["contract-14:orion-plan"] == 1 and layers["memo-4:orion-plan"] == 1
    assert layers["catalog-3:kp214-family"] == 2 and layers["faq-2:kp214-family"] == 2
    assert layers["policy-8-v2:skyline-retention"] == 3


def test_round_trip_and_content_hash(tmp_path):
    cases = load_cases(ENTERPRISE)
    out = tmp_path / "cases.jsonl"
    assert write_cases(out, cases) == 16
    assert load_cases(out) == cases
    assert dataset_version(out) == dataset_version(out) and dataset_version(out).startswith("sha256:")
    assert dataset_version(out) != dataset_version(ENTERPRISE)


def write(tmp_path: Path, *objects: dict) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


GOOD = {"case_id": "c1", "query": "q?", "facts": {"f1": {"source_id": "d1"}}, "required_facts": ["f1"]}


def test_chain_naming_an_unknown_fact_names_file_line_and_field(tmp_path):
    bad = dict(GOOD, case_id="c2", valid_chains=[["f1", "f9"]])
    with pytest.raises(InputError) as info:
        load_cases(write(tmp_path, GOOD, bad))
    assert "cases.jsonl:2" in str(info.value) and "f9" in str(info.value) and "'c2'" in str(info.value)


def test_missing_field_and_wrong_type(tmp_path):
    with pytest.raises(InputError, match=r"cases.jsonl:1.*field 'query'"):
        load_cases(write(tmp_path, {"case_id": "c1"}))
    with pytest.raises(InputError, match=r"field 'facts.f1.spans.0.start'"):
        load_cases(write(tmp_path, dict(GOOD, facts={"f1": {"source_id": "d", "spans": [{"start": "x", "end": 1, "text": ""}]}})))
    with pytest.raises(InputError, match="unknown|Extra inputs"):
        load_cases(write(tmp_path, dict(GOOD, surprise=1)))


def test_duplicate_case_ids(tmp_path):
    with pytest.raises(InputError, match=r"duplicate case_id 'c1' \(first on line 1\)"):
        load_cases(write(tmp_path, GOOD, GOOD))


def test_required_facts_default_to_the_first_chain():
    case = Case.model_validate({"case_id": "c", "query": "q", "facts": {"a": {"source_id": "d"}}, "valid_chains": [["a"]]})
    assert case.required_facts == ["a"]
