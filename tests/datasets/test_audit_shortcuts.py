"""Shortcut audit: the enterprise set is clean; planted single-document and metadata leaks are found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.audit import audit, key_entities, write_shortcut_record
from hoprag.datasets.schema import load_cases
from hoprag.ingest.loaders import load_documents
from hoprag.records import Document

pytestmark = pytest.mark.unit
DATA = Path(__file__).parents[2] / "data" / "enterprise"
CASES = load_cases(DATA / "cases.jsonl")
DOCS = load_documents(DATA / "corpus.jsonl")
BY_ID = {c.case_id: c for c in CASES}


def test_enterprise_has_no_shortcuts() -> None:
    report = audit(CASES, DOCS)
    assert report.findings == [] and report.flagged_cases == [] and report.notes == []
    assert key_entities(BY_ID["ent-001"]) == ["Project Orion"]


def test_planted_single_document_shortcut() -> None:
    leak = Document(id="memo-99", title="Weekly notes", text="Project Orion data falls under the seven years rule.",
                    source="intranet-memos")
    report = audit([BY_ID["ent-001"]], [*DOCS, leak])
    (finding,) = report.findings
    assert (finding.kind, finding.doc_id, finding.evidence) == ("single_document_answer", "memo-99", "seven years")
    assert "exclude this source" in finding.suggestion and "answer:seven years" in finding.found_by


def test_planted_title_url_and_metadata_leaks() -> None:
    titled = Document(id="memo-97", title="Orion retention is 7 years", text="Notes on Project Orion onboarding.")
    url = Document(id="memo-98", title="Onboarding", text="Project Orion kickoff notes.",
                   metadata={"url": "https://wiki.example/orion-7-years-retention"})
    nested = Document(id="memo-96", title="Ops", text="Project Orion runbook.", metadata={"tags": {"retention": "7 yrs"}})
    report = audit([BY_ID["ent-001"]], [*DOCS, titled, url, nested])
    got = {(f.kind, f.doc_id, f.field) for f in report.findings}
    assert got == {("metadata_leak", "memo-97", "title"), ("metadata_leak", "memo-98", "url"),
                   ("metadata_leak", "memo-96", "tags.retention")}


def test_planted_comparison_single_source_chain_and_query_leak(tmp_path: Path) -> None:
    both = Document(id="memo-95", title="Deals", text="Project Wren and Project Basalt both renewed this year.")
    report = audit([BY_ID["ent-006"]], [*DOCS, both])
    assert [(f.kind, f.doc_id) for f in report.findings] == [("single_document_comparison", "memo-95")]
    case = BY_ID["ent-014"]
    same_doc = {k: v.model_copy(update={"source_id": "catalog-3"}) for k, v in case.facts.items()}
    leaky = case.model_copy(update={"facts": same_doc, "query": case.query.replace("?", " (KR-West)?")})
    kinds = {f.kind for f in audit([leaky], DOCS).findings}
    assert {"single_source_chain", "query_leak"} <= kinds
    record = tmp_path / "eval4_shortcuts.jsonl"
    write_shortcut_record(record, report, snapshot="kestrel-docs-2026-06-30")
    row = json.loads(record.read_text().splitlines()[0])
    assert row["case_id"] == "ent-006" and row["snapshot"] == "kestrel-docs-2026-06-30"


def test_explanatory_single_document() -> None:
    case = BY_ID["ent-007"]
    everything = Document(id="memo-94", title="Summary", text="Project Orion. " + " ".join(case.reference_claims))
    kinds = [f.kind for f in audit([case], [*DOCS, everything]).findings]
    assert kinds == ["single_document_explanation"]
