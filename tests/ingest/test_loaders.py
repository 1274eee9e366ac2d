"""Loaders: every accepted corpus form, and every error naming file, line, field and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.errors import EmptyCorpusError, InputError, UnknownFormatError
from hoprag.ingest.loaders import iter_corpora, load_corpora, load_documents

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.unit


def test_enterprise_jsonl_keeps_every_field() -> None:
    docs = load_documents(DATA / "ingest_docs.jsonl")
    assert [d.id for d in docs] == ["policy-8-v1", "policy-8-v2", "contract-09", "ticket-1187"]
    contract = docs[2]
    assert contract.title == "Pilot Order Form - Project Orion (2024)"
    assert contract.text.startswith("PILOT ORDER FORM. This Pilot Order Form is entered into on 20 May 2024")
    assert contract.source == "contracts-repository"
    assert contract.version == "v1"
    assert contract.timestamp == "2024-05-20"
    assert contract.doc_type == "contract"
    assert contract.acl == "restricted"
    assert contract.metadata["counterparty"] == "Project Orion (code name)"
    assert contract.metadata["page_count"] == 4


def test_beir_jsonl_uses_underscore_id() -> None:
    docs = load_documents(DATA / "ingest_beir_corpus.jsonl")
    assert [d.id for d in docs] == ["31000", "31001", "31002", "31003"]
    assert docs[1].title == "Donnie Smith"
    assert docs[1].text.startswith('Donald W. "Donnie" Smith (born December 7, 1990')
    assert docs[1].source == "" and docs[1].metadata == {}


def test_json_array(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (DATA / "ingest_docs.jsonl").read_text(encoding="utf-8").splitlines()]
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(rows[:2]), encoding="utf-8")
    docs = load_documents(path)
    assert [d.id for d in docs] == ["policy-8-v1", "policy-8-v2"]
    assert docs[1].version == "v2"


def test_only_id_and_text_are_required(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": 7, "text": "Seven."}\n\n{"id": "b", "text": ""}\n', encoding="utf-8")
    docs = load_documents(path)
    assert [(d.id, d.title, d.text) for d in docs] == [("7", "", "Seven."), ("b", "", "")]


def test_folder_of_markdown_and_text_files() -> None:
    docs = load_documents(DATA / "ingest_docs")
    # sorted by relative path; the .csv is not a text document
    assert [d.id for d in docs] == ["inky_mark", "policies/retention"]
    inky, retention = docs
    assert inky.title == "inky_mark"  # .txt: the file stem
    assert retention.title == "Customer Data Retention Policy (POL-08)"  # .md: its first heading
    assert retention.text.startswith("# Customer Data Retention Policy (POL-08)\n\nCUSTOMER DATA RETENTION")
    assert {d.source for d in docs} == {"files"}
    assert retention.metadata == {"path": "policies/retention.md"}


def test_markdown_without_heading_uses_stem(tmp_path: Path) -> None:
    (tmp_path / "plain.md").write_text("No heading here.\nSecond line #not a heading\n", encoding="utf-8")
    assert load_documents(tmp_path)[0].title == "plain"


def test_load_corpora_concatenates_in_order() -> None:
    docs = load_corpora([DATA / "ingest_docs.jsonl", DATA / "ingest_beir_corpus.jsonl", DATA / "ingest_docs"])
    assert len(docs) == 4 + 4 + 2
    assert docs[0].id == "policy-8-v1" and docs[4].id == "31000" and docs[-1].id == "policies/retention"


# --- errors ---------------------------------------------------------------------------------------


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.jsonl: corpus not found.*Fix: pass a \.jsonl"):
        load_documents(tmp_path / "nope.jsonl")


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "A."}\n{"id": "b", "text": \n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}:2: malformed JSON")


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"title": "t", "text": "x"}', "id"),
        ('{"id": "a", "title": "t"}', "text"),
        ('{"id": "a", "text": 5}', "text"),
        ('{"id": ["a"], "text": "x"}', "id"),
        ('{"id": "  ", "text": "x"}', "id"),
        ('{"id": "a", "text": "x", "acl": ["public"]}', "acl"),
        ('{"id": "a", "text": "x", "metadata": "m"}', "metadata"),
    ],
)
def test_bad_field_names_line_field_and_fix(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "ok", "text": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_documents(path)
    err = info.value
    assert (err.source, err.line, err.field) == (str(path), 2, field)
    assert err.fix
    assert f"(field '{field}'). Fix: " in str(err)


def test_json_that_is_not_an_array(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"id": "a", "text": "x"}', encoding="utf-8")
    with pytest.raises(InputError, match="expected a JSON array of documents, got dict"):
        load_documents(path)


def test_json_array_record_number(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('[{"id": "a", "text": "x"}, {"id": "b"}]', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert (info.value.line, info.value.field) == (2, "text")


def test_malformed_json_array(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('[{"id": "a", "text": "x"},\n {"id": ]', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert info.value.line == 2 and "malformed JSON" in str(info.value)


def test_duplicate_ids_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"_id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.jsonl:3: duplicate document id 'a' \(first seen in record 1\)"):
        load_documents(path)


def test_duplicate_ids_across_corpora_name_both(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "x", "text": "x"}\n{"id": "contract-09", "text": "again"}\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_corpora([DATA / "ingest_docs.jsonl", other])
    message = str(info.value)
    assert message.startswith(f"{other}:2: duplicate document id 'contract-09' (already loaded from ")
    assert "ingest_docs.jsonl" in message and "prefix" in message


def test_same_stem_in_folder_is_a_duplicate(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\ntext", encoding="utf-8")
    (tmp_path / "a.txt").write_text("text", encoding="utf-8")
    with pytest.raises(InputError, match="duplicate document id 'a'"):
        load_documents(tmp_path)


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_empty_jsonl_is_empty_corpus(tmp_path: Path, content: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(EmptyCorpusError, match="the corpus has no documents.*Fix: add documents"):
        load_documents(path)


def test_empty_folder_and_empty_array(tmp_path: Path) -> None:
    (tmp_path / "only.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(EmptyCorpusError):
        load_documents(tmp_path)
    path = tmp_path / "c.json"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(EmptyCorpusError):
        load_documents(path)
    with pytest.raises(EmptyCorpusError, match="no corpus was given"):
        load_corpora([])


def test_unknown_suffix(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("id,text\n", encoding="utf-8")
    with pytest.raises(UnknownFormatError, match=r"unsupported corpus file type '\.csv'.*Fix: use \.jsonl"):
        load_documents(path)


def test_non_utf8_file(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin\.txt: corpus document is not UTF-8 text \(byte 0xE9 at byte "
                                         r"offset 3.*Fix: it looks like latin-1"):
        load_documents(tmp_path)


def test_iter_corpora_streams_and_fails_where_the_bad_record_is(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "c"}\n', encoding="utf-8")
    stream = iter_corpora([path])
    assert [next(stream).id, next(stream).id] == ["a", "b"]  # read before the bad line is reached
    with pytest.raises(InputError, match=r"c\.jsonl:3.*missing document text"):
        next(stream)


def test_iter_corpora_checks_every_path_before_reading(tmp_path: Path) -> None:
    good = tmp_path / "c.jsonl"
    good.write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="corpus not found"):
        iter_corpora([good, tmp_path / "missing.jsonl"])  # raised by the call, before any document
    (tmp_path / "c.csv").write_text("id,text\n", encoding="utf-8")
    with pytest.raises(UnknownFormatError):
        iter_corpora([good, tmp_path / "c.csv"])


def test_iter_corpora_yields_what_load_corpora_returns(tmp_path: Path) -> None:
    paths = [DATA / "ingest_docs.jsonl", DATA / "ingest_docs"]
    assert list(iter_corpora(paths)) == load_corpora(paths)
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "x", "text": "x"}\n', encoding="utf-8")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    stream = iter_corpora([other, empty])
    assert next(stream).id == "x"
    with pytest.raises(EmptyCorpusError, match="empty.jsonl: the corpus has no documents"):
        next(stream)
