"""Grouped splits keep every shared key value in one partition; sealed hashes; leakage report."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.leakage import leakage_report, shingles, jaccard
from hoprag.datasets.schema import load_cases
from hoprag.datasets.splits import grouped_split, groups_of, key_values, verify_sealed, write_split
from hoprag.errors import ConfigError

pytestmark = pytest.mark.unit
CASES = load_cases(Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl")


def test_groups_by_template() -> None:
    groups = groups_of(CASES, ["template"])
    # acquired-plan-retention is shared by ent-001, ent-011, ent-013; tier-critical-response by ent-003, ent-016
    as_ids = sorted(sorted(CASES[i].case_id for i in g) for g in groups)
    assert ["ent-001", "ent-011", "ent-013"] in as_ids and ["ent-003", "ent-016"] in as_ids
    assert len(groups) == 13


def test_split_keeps_groups_and_is_seeded(tmp_path: Path) -> None:
    result = grouped_split(CASES, ["template"], [0.5, 0.25, 0.25], seed=7)
    assert sum(len(v) for v in result.partitions.values()) == 16
    where = {c.case_id: name for name, cs in result.partitions.items() for c in cs}
    assert where["ent-001"] == where["ent-011"] == where["ent-013"]
    assert where["ent-003"] == where["ent-016"]
    again = grouped_split(CASES, ["template"], [0.5, 0.25, 0.25], seed=7)
    assert {n: [c.case_id for c in v] for n, v in again.partitions.items()} == {n: [c.case_id for c in v] for n, v in result.partitions.items()}
    assert [len(result.partitions[n]) for n in ("train", "dev", "test")] == [8, 4, 4]
    manifest = write_split(result, tmp_path)
    assert manifest["partitions"]["test"]["sealed"] and manifest["partitions"]["test"]["sha256"].startswith("sha256:")
    assert verify_sealed(tmp_path) == {"test": True}
    path = tmp_path / "test.jsonl"
    path.write_text(path.read_text().replace("?", "??", 1))
    assert verify_sealed(tmp_path) == {"test": False}
    report = leakage_report(result.partitions)
    for entry in report["pairs"].values():
        assert entry["templates"] == [] and entry["seeds"] == []


def test_entity_key_joins_and_errors() -> None:
    everything = grouped_split(CASES, ["source_family", "entity", "template"], seed=7)
    assert everything.groups == 1 and everything.largest_group == 16  # comparisons chain every entity together
    assert key_values(CASES[3], "entity") == ["project orion", "project halyard"]
    with pytest.raises(ConfigError, match="unknown split key 'colour'"):
        grouped_split(CASES, ["colour"])
    with pytest.raises(ConfigError, match="sum to 1"):
        grouped_split(CASES, ["template"], [0.5, 0.5, 0.5])


def test_leakage_finds_shared_values_and_near_duplicates() -> None:
    a, b = CASES[0], CASES[10]  # ent-001 (Orion) and ent-011 (Basalt): same template and family
    twin = a.model_copy(update={"case_id": "ent-001b", "query": a.query.replace("customer data", "the customer data")})
    report = leakage_report({"train": [a], "test": [b, twin]})
    entry = report["pairs"]["train|test"]
    assert entry["templates"] == ["acquired-plan-retention"] and entry["source_families"] == ["retention-policies"]
    assert "skyline telemetry" in entry["bridge_entities"] or entry["bridge_entities"]
    (dup,) = entry["near_duplicates"]
    assert (dup["a"], dup["b"]) == ("ent-001", "ent-001b")
    assert dup["jaccard"] == pytest.approx(jaccard(shingles(a.query), shingles(twin.query)), abs=1e-4)
    shared = leakage_report({"train": [a], "test": [a]})
    assert shared["shared_case_ids"] == {"ent-001": ["train", "test"]}
