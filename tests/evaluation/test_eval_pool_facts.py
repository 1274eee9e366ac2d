"""Pool judgments back into case facts on the enterprise set: spans at the passage's offsets in its source,
labeller and time kept, and every fact verified by the label audit against the corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.datasets.labels import verify_labels
from hoprag.datasets.schema import load_cases
from hoprag.errors import InputError
from hoprag.evaluation.pools import build_pool, import_judgments, write_pool
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.ingest.loaders import load_corpora, load_documents

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).parents[2] / "data" / "enterprise"
CORPUS = ENTERPRISE / "corpus.jsonl"
ORION = "Project Orion acquires Plan KP-214 (Tern Pro) for 400 aerial sensor units"


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pool-facts")
    build_index(load_corpora([CORPUS]), root / "index", IndexConfig())
    cases = [c for c in load_cases(ENTERPRISE / "cases.jsonl") if c.case_id in ("ent-001", "ent-003")]
    return write_pool(build_pool(load_index(root / "index"), cases, depth=10, seed=1), root / "pool")


def _annotation(pool_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (pool_dir / "annotation.jsonl").read_text(encoding="utf-8").splitlines()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _judgments(pool_dir: Path) -> list[dict]:
    """ana and ben agree contract-14 is relevant and quote one passage; ana finds faq-2 relevant without
    quoting; every other pooled document of ent-001 ana grades 0; ent-003 gets only zeros."""
    rows = []
    for row in _annotation(pool_dir):
        grade = 1 if row["case_id"] == "ent-001" and row["doc_id"] in ("contract-14", "faq-2") else 0
        judgment = {"case_id": row["case_id"], "doc_id": row["doc_id"], "grade": grade, "labeller": "ana",
                    "time": "2026-11-30T09:00:00Z"}
        if row["doc_id"] == "contract-14" and row["case_id"] == "ent-001":
            judgment["passage"] = ORION
        rows.append(judgment)
    rows.append({"case_id": "ent-001", "doc_id": "contract-14", "grade": 2, "labeller": "ben",
                 "time": "2026-11-30T10:30:00Z", "passage": ORION})
    return rows


def test_relevant_judgments_become_facts_the_label_audit_verifies(pool_dir: Path, tmp_path: Path) -> None:
    assert {r["doc_id"] for r in _annotation(pool_dir) if r["case_id"] == "ent-001"} >= {"contract-14", "faq-2"}
    judgments = _write(tmp_path / "j.jsonl", _judgments(pool_dir))
    result = import_judgments(pool_dir, judgments, tmp_path / "qrels.txt", cases_out=tmp_path / "facts.jsonl",
                              rule="max")
    assert result.cases_written == 1  # ent-003 has no relevant pair
    (case,) = load_cases(tmp_path / "facts.jsonl")
    documents = {d.id: d for d in load_documents(CORPUS)}
    assert case.case_id == "ent-001" and case.query.startswith("Under the current retention policy")
    assert set(case.facts) == {"pool:contract-14", "pool:faq-2"}
    orion = case.facts["pool:contract-14"]
    (span,) = orion.spans  # two labellers quoting one passage give one span
    assert orion.source_id == "contract-14" and orion.grade == 2 and span.text == ORION
    assert documents["contract-14"].text[span.start:span.end] == ORION and span.start > 0
    (whole,) = case.facts["pool:faq-2"].spans
    assert (whole.start, whole.end, whole.text) == (0, len(documents["faq-2"].text), documents["faq-2"].text)
    assert case.metadata["fact_provenance"]["pool:contract-14"] == [
        {"labeller": "ana", "time": "2026-11-30T09:00:00Z", "grade": 1},
        {"labeller": "ben", "time": "2026-11-30T10:30:00Z", "grade": 2}]
    report = verify_labels([case], documents)
    assert report.errors == [] and report.spans_checked == 2
    assert [p.kind for p in report.warnings] == ["no_chain"]  # facts are added, never chained


def test_with_the_cases_file_the_case_is_kept_whole_and_still_verifies(pool_dir: Path, tmp_path: Path) -> None:
    judgments = _write(tmp_path / "j.jsonl", _judgments(pool_dir))
    original = {c.case_id: c for c in load_cases(ENTERPRISE / "cases.jsonl")}
    import_judgments(pool_dir, judgments, tmp_path / "qrels.txt", cases_out=tmp_path / "facts.jsonl",
                     cases=list(original.values()))
    (case,) = load_cases(tmp_path / "facts.jsonl")
    before = original["ent-001"]
    assert case.valid_chains == before.valid_chains and case.answers == before.answers
    assert set(case.facts) == set(before.facts) | {"pool:contract-14", "pool:faq-2"}
    assert case.facts["pool:contract-14"].grade == 2  # majority tie (1 vs 2) goes to the higher grade
    report = verify_labels([case], load_documents(CORPUS))
    assert report.errors == [] and report.spans_checked == sum(len(f.spans) for f in case.facts.values())


def test_a_quoted_passage_not_in_the_document_is_refused_naming_the_judgment(pool_dir: Path, tmp_path: Path) -> None:
    rows = _judgments(pool_dir)
    rows[-1]["passage"] = ORION.replace("400", "500")
    judgments = _write(tmp_path / "j.jsonl", rows)
    with pytest.raises(InputError, match=rf"judgment {len(rows)} quotes a passage that is not in document 'contract-14'"):
        import_judgments(pool_dir, judgments, tmp_path / "qrels.txt", cases_out=tmp_path / "facts.jsonl")
    assert not (tmp_path / "facts.jsonl").exists() and not (tmp_path / "qrels.txt").exists()
    rows[-1]["passage"] = ""
    with pytest.raises(InputError, match="judgment field 'passage'"):
        import_judgments(pool_dir, _write(tmp_path / "j.jsonl", rows), tmp_path / "qrels.txt")


def test_cli_pool_import_cases_out_then_audit(pool_dir: Path, tmp_path: Path, capsys) -> None:
    judgments = _write(tmp_path / "j.jsonl", _judgments(pool_dir))
    facts = tmp_path / "out" / "facts.jsonl"
    main(["pool-import", str(pool_dir), str(judgments), "--out", str(tmp_path / "qrels.txt"), "--cases-out", str(facts),
          "--cases", str(ENTERPRISE / "cases.jsonl")])
    said = " ".join(capsys.readouterr().out.split())
    assert "1 case(s) with their relevant judged documents as facts" in said and facts.is_file()
    main(["audit", str(facts), str(CORPUS), "--json", str(tmp_path / "audit.json")])
    audit = json.loads((tmp_path / "audit.json").read_text(encoding="utf-8"))
    labels = audit["labels"]
    assert labels["errors"] == 0 and labels["spans_checked"] == 8 and labels["excluded_cases"] == [], labels
    with pytest.raises(SystemExit) as exited:
        main(["pool-import", str(pool_dir), str(judgments), "--out", str(tmp_path / "q.txt"),
              "--cases", str(ENTERPRISE / "cases.jsonl")])
    assert exited.value.code == 2 and "--cases is only read with --cases-out" in capsys.readouterr().err
