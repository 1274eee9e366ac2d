"""Fuzz every record loader: any bytes end in a result or a HopragError naming the file, nothing else.

Each loader gets raw bytes and records of its own bundled fixture damaged by
:mod:`fuzz_strategies`; where a loader's output is consumed at once (traces by the evaluator,
feedback by its metrics, imported cases by the writer), the consumer runs too, since a record that
loads but then crashes the command is the same traceback to the user.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_strategies import DATA, FUZZ, JSON_JUNK, ROOT, ends_cleanly, json_bytes, jsonl_bytes, keys_of, read_jsonl
from hypothesis import given
from hypothesis import strategies as st

from hoprag.datasets.importers import import_dataset
from hoprag.datasets.passages import load_passage_corpus
from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.io.traces import read_traces, read_traces_file
from hoprag.gates.checks.feedback import feedback_metrics, read_feedback
from hoprag.ingest.loaders import load_documents
from hoprag.trec import read_qrels, read_run

pytestmark = pytest.mark.unit

CASES = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")[:4]
DOCS = read_jsonl(DATA / "ingest_docs.jsonl") + read_jsonl(DATA / "ingest_beir_corpus.jsonl", 3)
CASE_ROWS = read_jsonl(ROOT / "data" / "enterprise" / "cases.jsonl", 3)
TRACES = read_jsonl(DATA / "eval_traces.jsonl") + read_jsonl(DATA / "eval4_foreign_traces.jsonl")
FEEDBACK = read_jsonl(DATA / "gates_feedback.jsonl")
HOTPOT = json.loads((DATA / "hotpotqa_dev_slice.json").read_text(encoding="utf-8"))[:2]
TWOWIKI = json.loads((DATA / "2wiki_dev_slice.json").read_text(encoding="utf-8"))[:2]
MUSIQUE = read_jsonl(DATA / "musique_dev_slice.jsonl", 2)
PASSAGES = json.loads((DATA / "passages_list.json").read_text(encoding="utf-8"))
PASSAGE_DICT = json.loads((DATA / "passages_dict.json").read_text(encoding="utf-8"))
BEIR = DATA / "beir_slice"


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def _check(work: Path, name: str, data: bytes, load: Callable[[Path], Any]) -> None:
    path = work / name
    path.write_bytes(data)
    ends_cleanly(lambda: load(path), path.name)


def _traces_then_eval(path: Path) -> None:
    evaluate_chains(CASES, read_traces(path), ks=(2, 5))


def _lenient_then_eval(path: Path) -> None:
    evaluate_chains(CASES, read_traces_file(path, lenient=True).traces, ks=(2, 5))


def _feedback(path: Path) -> None:
    feedback_metrics(read_feedback(path), {"run_id": "fuzz", "stage": "feedback", "window": "1d"})


def _importer(fmt: str) -> Callable[[Path], Any]:
    def run(path: Path) -> None:
        result = import_dataset(fmt, [path])
        for case in result.cases:  # what write_import does with every case
            case.to_json()

    return run


# (file name, loader, records of the fixture, JSON array (True) or JSONL (False))
RECORD_LOADERS = [
    pytest.param("corpus.jsonl", load_documents, DOCS, False, id="corpus-jsonl"),
    pytest.param("corpus.json", load_documents, DOCS, True, id="corpus-json"),
    pytest.param("passages.json", load_passage_corpus, PASSAGES, True, id="passages-json"),
    pytest.param("passages.jsonl", load_passage_corpus, PASSAGES, False, id="passages-jsonl"),
    pytest.param("cases.jsonl", load_cases, CASE_ROWS, False, id="cases"),
    pytest.param("traces.jsonl", _traces_then_eval, TRACES, False, id="traces"),
    pytest.param("traces-lenient.jsonl", _lenient_then_eval, TRACES, False, id="traces-lenient"),
    pytest.param("feedback.jsonl", _feedback, FEEDBACK, False, id="feedback"),
    pytest.param("hotpot.json", _importer("hotpotqa"), HOTPOT, True, id="hotpotqa"),
    pytest.param("twowiki.json", _importer("2wiki"), TWOWIKI, True, id="2wiki"),
    pytest.param("musique.jsonl", _importer("musique"), MUSIQUE, False, id="musique"),
]


@pytest.mark.parametrize(("name", "load", "records", "array"), RECORD_LOADERS)
@FUZZ
@given(data=st.data())
def test_damaged_records(work: Path, name: str, load: Callable[[Path], Any], records: list[Any], array: bool,
                         data: st.DataObject) -> None:
    strategy = json_bytes(records, keys_of(records)) if array else jsonl_bytes(records, keys_of(records))
    _check(work, name, data.draw(strategy, label="file"), load)


@FUZZ
@given(data=st.data())
def test_damaged_passage_dict(work: Path, data: st.DataObject) -> None:
    strategy = json_bytes([], keys_of([PASSAGE_DICT]), whole=PASSAGE_DICT)
    _check(work, "passages_dict.json", data.draw(strategy, label="file"), load_passage_corpus)


@pytest.mark.parametrize(("name", "load", "records", "array"), RECORD_LOADERS)
@FUZZ
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes(work: Path, name: str, load: Callable[[Path], Any], records: list[Any], array: bool,
                         raw: bytes) -> None:
    _check(work, name, raw, load)


@pytest.mark.parametrize(("name", "load", "records", "array"), RECORD_LOADERS)
def test_known_json_junk(work: Path, name: str, load: Callable[[Path], Any], records: list[Any], array: bool) -> None:
    for junk in JSON_JUNK:
        good = json.dumps(records[0], ensure_ascii=False)
        _check(work, name, f"{good}\n{junk}\n".encode(), load)
        _check(work, name, junk.encode(), load)


BEIR_PARTS = {
    "corpus.jsonl": read_jsonl(BEIR / "corpus.jsonl", 4),
    "queries.jsonl": read_jsonl(BEIR / "queries.jsonl"),
}


@pytest.mark.parametrize("part", ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"])
@FUZZ
@given(data=st.data())
def test_beir_folder_with_one_damaged_file(work: Path, part: str, data: st.DataObject) -> None:
    folder = work / "beir"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    for real in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (folder / real).write_bytes((BEIR / real).read_bytes())
    if part in BEIR_PARTS:
        records = BEIR_PARTS[part]
        raw = data.draw(jsonl_bytes(records, keys_of(records)) | st.binary(max_size=100), label=part)
    else:
        raw = data.draw(_tsv_bytes(3), label=part)
    (folder / part).write_bytes(raw)
    ends_cleanly(lambda: import_dataset("beir", [folder]), Path(part).name, "beir")


_TOKENS = st.sampled_from(["q1", "Q0", "d1", "0", "1", "-1", "2.5", "nan", "inf", "-inf", "1e400", "9" * 5000,
                           "²", "١", "", " ", "x\u00a0y", "query-id", "corpus-id", "score"])


def _tsv_bytes(columns: int, sep: str = "\t") -> st.SearchStrategy[bytes]:
    row = st.lists(_TOKENS | st.text(max_size=5), min_size=0, max_size=columns + 2).map(sep.join)
    lines = st.lists(row, min_size=0, max_size=4).map(lambda ls: "\n".join(ls) + "\n")
    return lines.map(lambda t: t.encode("utf-8", "surrogatepass")) | st.binary(max_size=80)


@pytest.mark.parametrize(("name", "load", "columns"), [
    pytest.param("qrels.txt", read_qrels, 4, id="trec-qrels"),
    pytest.param("run.txt", read_run, 6, id="trec-run"),
])
@FUZZ
@given(data=st.data())
def test_trec_files(work: Path, name: str, load: Callable[[Path], Any], columns: int, data: st.DataObject) -> None:
    _check(work, name, data.draw(_tsv_bytes(columns, " "), label="file"), load)
