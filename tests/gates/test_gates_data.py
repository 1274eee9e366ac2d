"""Data QA: PII patterns with checksums, dedup, schema, null rates and type flips on real corpora."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.gates.checks.data import IngestOutput, field_profile, schema_check, type_flips
from hoprag.gates.checks.dedup import find_duplicates
from hoprag.gates.checks.pii import iban_valid, luhn_valid, scan_pii, scan_text
from hoprag.gates.hooks import StageRunner
from hoprag.ingest.loaders import load_documents
from hoprag.jsonl import read_jsonl_dicts
from hoprag.records import Document

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


def test_checksums() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB82 WEST 1234 5698 7654 33")


def test_scan_reports_kind_and_offsets_only() -> None:
    text = ("Mail jane.doe@example.org or call +44 20 7946 0958. Card 4111 1111 1111 1111, "
            "not 4111 1111 1111 1112. IBAN GB82 WEST 1234 5698 7654 32. SSN 123-45-6789, NI AB 12 34 56 C. "
            "Founded 1990 2000 2010, ISBN 978-3-16-148410-0.")
    found = scan_text(text, "d1")
    assert [f.kind for f in found] == ["email", "phone", "card", "iban", "national_id", "national_id"]
    assert text[found[0].start:found[0].end] == "jane.doe@example.org"
    assert text[found[2].start:found[2].end] == "4111 1111 1111 1111"
    assert all(set(f.to_dict()) == {"kind", "doc_id", "start", "end"} for f in found)


def test_real_corpora() -> None:
    # the enterprise sample lists five role mailboxes (onboarding@, marine-se@, legal-ops@, ig@, archive-accounts@)
    enterprise = scan_pii(load_documents(ROOT / "data" / "enterprise" / "corpus.jsonl"))
    assert [f.kind for f in enterprise] == ["email"] * 5
    assert scan_pii(load_documents(ROOT / "tests" / "data" / "ingest_beir_corpus.jsonl")) == []


def test_pii_metric_never_holds_the_text() -> None:
    runner = StageRunner("r", lambda m: None)
    docs = [Document("d1", "t", "write to jane.doe@example.org today", source="s")]
    emitted = runner.observe("ingest", IngestOutput(docs))
    hits = next(m for m in emitted if m.name == "pii_hits")
    assert hits.value == 1 and hits.meta["locations"] == [{"kind": "email", "doc_id": "d1", "start": 9, "end": 29}]
    assert "jane" not in repr([m.meta for m in emitted])


def test_dedup_exact_and_near_on_real_passages() -> None:
    docs = load_documents(ROOT / "tests" / "data" / "ingest_beir_corpus.jsonl")
    base = docs[0]
    exact = Document("copy", base.title, "  " + base.text.upper().replace(" ", "  ") + " ")
    words = base.text.split()
    near = Document("near", base.title, " ".join(words[:-1]) + " extra")  # one word changed at the end
    report = find_duplicates(docs + [exact, near], threshold=0.8)
    assert report.exact == (("copy", base.id),)
    assert report.near == (("near", base.id),)
    assert report.duplicate_frac == pytest.approx(2 / (len(docs) + 2))
    assert find_duplicates(docs).duplicate_frac == 0.0


def test_schema_null_rates_and_type_flips() -> None:
    path = ROOT / "tests" / "data" / "ingest_docs.jsonl"
    raw = [obj for _, obj in read_jsonl_dicts(path)]
    docs = load_documents(path)
    flipped = [dict(r, timestamp=[r.get("timestamp")]) for r in raw]  # an exporter started writing lists
    flipped[0]["text"] = ""
    emitted = StageRunner("r", lambda m: None, {"baseline_profile": field_profile(raw),
                                                "required_fields": ("text", "source")}).observe(
        "ingest", IngestOutput(docs, flipped))
    values = {m.name: m for m in emitted}
    assert values["documents"].value == len(docs)
    assert values["schema_violations"].value == 1 and values["schema_violations"].meta["doc_ids"] == [docs[0].id]
    assert values["null_rate.text"].value == pytest.approx(1 / len(docs))
    assert values["type_flips"].value == 1 and values["type_flips"].meta["fields"] == ["timestamp"]
    assert type_flips(field_profile(raw), field_profile(raw)) == []
    assert schema_check(docs, {"run_id": "r", "stage": "ingest"})[1].value == 0
