"""Every class of bad importer input raises an InputError naming the file, place, field and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.errors import InputError, UnknownFormatError

DATA = Path(__file__).parents[1] / "data"

pytestmark = pytest.mark.unit


def _hotpot_records() -> list[dict]:
    return json.loads((DATA / "hotpotqa_dev_slice.json").read_text(encoding="utf-8"))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownFormatError) as info:
        import_dataset("squad", [DATA / "hotpotqa_dev_slice.json"])
    assert "'squad'" in str(info.value)
    assert "hotpotqa, musique, 2wiki, beir" in str(info.value)


def test_no_files_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no hotpotqa files given"):
        import_dataset("hotpotqa", [])
    with pytest.raises(InputError, match="absent.json: hotpotqa file not found"):
        import_dataset("hotpotqa", [tmp_path / "absent.json"])


def test_malformed_json_array_names_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.json", '[{"_id": "a",\n "question": }]')
    with pytest.raises(InputError) as info:
        import_dataset("hotpotqa", [path])
    assert f"{path}:2: malformed JSON" in str(info.value)
    assert "line 2, column 14" in str(info.value)


def test_malformed_jsonl_line_names_line_and_column(tmp_path: Path) -> None:
    good = (DATA / "musique_dev_slice.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path = _write(tmp_path, "broken.jsonl", good + "\n" + good[:40] + "\n")
    with pytest.raises(InputError) as info:
        import_dataset("musique", [path])
    assert f"{path}:2: malformed JSON" in str(info.value)
    assert "column" in str(info.value)


@pytest.mark.parametrize("content", ["", "  \n", "[]"])
def test_empty_file_or_no_records(tmp_path: Path, content: str) -> None:
    path = _write(tmp_path, "empty.json", content)
    with pytest.raises(InputError) as info:
        import_dataset("2wiki", [path])
    assert str(path) in str(info.value)
    assert "empty" in str(info.value) or "no records" in str(info.value)
    assert "Fix: give a 2wiki file with at least one record" in str(info.value)


def test_missing_required_field_names_record_field_and_fix(tmp_path: Path) -> None:
    records = _hotpot_records()
    del records[1]["answer"]
    path = _write(tmp_path, "h.json", json.dumps(records))
    with pytest.raises(InputError) as info:
        import_dataset("hotpotqa", [path])
    assert str(info.value) == (
        f"{path}: record 2: missing required field (field 'answer'). "
        "Fix: every hotpotqa record needs 'answer' (a string)"
    )


def test_missing_field_in_jsonl_names_the_line(tmp_path: Path) -> None:
    lines = (DATA / "musique_dev_slice.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[2])
    del record["question_decomposition"]
    path = _write(tmp_path, "m.jsonl", lines[0] + "\n\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError) as info:
        import_dataset("musique", [path])
    assert f"{path}:3: record 2: missing required field (field 'question_decomposition')" in str(info.value)


@pytest.mark.parametrize(
    ("mutate", "message", "field"),
    [
        (lambda r: r.update(context="not a list"), "'context' is str, expected a list", "context"),
        (lambda r: r["context"].append(["Title only"]), "context[10] is not [title, [sentences]]", "context"),
        (lambda r: r["supporting_facts"].append(["Taylor Kemp", "0"]), "supporting_facts[2] is not", "supporting_facts"),
        (lambda r: r.update(question="  "), "cannot build a case: query is empty", None),
    ],
)
def test_mistyped_fields(tmp_path: Path, mutate, message: str, field: str | None) -> None:
    record = _hotpot_records()[2]
    mutate(record)
    path = _write(tmp_path, "h.json", json.dumps([record]))
    with pytest.raises(InputError) as info:
        import_dataset("hotpotqa", [path])
    assert message in str(info.value) and "record 1" in str(info.value)
    if field:
        assert f"(field '{field}')" in str(info.value)
    assert "Fix:" in str(info.value)


def test_bad_2wiki_evidence_and_musique_paragraph(tmp_path: Path) -> None:
    wiki = json.loads((DATA / "2wiki_dev_slice.json").read_text(encoding="utf-8"))[2]
    wiki["evidences"].append(["only", "two"])
    path = _write(tmp_path, "w.json", json.dumps([wiki]))
    with pytest.raises(InputError, match=r"evidences\[2\] is not \[subject, relation, object\]"):
        import_dataset("2wiki", [path])
    music = json.loads((DATA / "musique_dev_slice.jsonl").read_text(encoding="utf-8").splitlines()[0])
    del music["paragraphs"][3]["paragraph_text"]
    path = _write(tmp_path, "m.jsonl", json.dumps(music) + "\n")
    with pytest.raises(InputError, match=r"paragraphs\[3\] lacks a string 'paragraph_text'"):
        import_dataset("musique", [path])


def test_beir_layout_and_qrels_errors(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text((DATA / "beir_slice" / "corpus.jsonl").read_text(encoding="utf-8"))
    (folder / "queries.jsonl").write_text((DATA / "beir_slice" / "queries.jsonl").read_text(encoding="utf-8"))
    with pytest.raises(InputError, match="no qrels/test.tsv or qrels/dev.tsv"):
        import_dataset("beir", [folder])
    (folder / "qrels").mkdir()
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t1001\tone\n")
    with pytest.raises(InputError) as info:
        import_dataset("beir", [folder])
    assert "dev.tsv:2: score 'one' is not an integer (field 'score')" in str(info.value)
    (folder / "qrels" / "dev.tsv").write_text("q1\t1001\n")
    with pytest.raises(InputError, match="dev.tsv:1: expected 3 tab-separated columns, got 2"):
        import_dataset("beir", [folder])
    with pytest.raises(InputError, match="BEIR corpus file missing"):
        import_dataset("beir", [folder / "queries.jsonl", folder / "qrels" / "dev.tsv"])
    (folder / "corpus.jsonl").write_text('{"_id": "1", "text": "a"}\n{"_id": "1", "text": "b"}\n')
    (folder / "qrels" / "dev.tsv").write_text("q1\t1\t1\n")
    with pytest.raises(InputError, match="corpus.jsonl:2: duplicate corpus _id '1'"):
        import_dataset("beir", [folder])


def test_beir_unknown_corpus_id_is_a_warned_missing_fact(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (folder / name).write_text((DATA / "beir_slice" / name).read_text(encoding="utf-8"))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n5a8638945542994775f6072d\t9999\t2\n")
    result = import_dataset("beir", [folder])
    [case] = result.cases
    assert case.facts["missing:9999"].spans == [] and case.facts["missing:9999"].grade == 2
    assert "not in the corpus" in case.warnings[0]
    assert result.stats["skipped"] == 2
