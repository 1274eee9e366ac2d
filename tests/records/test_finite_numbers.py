"""Every reader refuses NaN, Infinity, numbers that overflow a float and whole numbers past 64 bits,
naming the file, the line and the field (hoprag.finite_numbers); valid numbers read as before."""

from __future__ import annotations

import ast
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.datasets.schema import Case, load_cases
from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.pools import read_judgments
from hoprag.io.traces import read_traces, trace_from_json_line
from hoprag.finite_numbers import DECODER, NumberError, bounded_int, finite_float, first_refused
from hoprag.gates.checks.feedback import read_feedback
from hoprag.gates.thresholds import load_thresholds
from hoprag.jsonl import parse_json
from hoprag.json_text import dumps_indented
from hoprag.trec import read_qrels, read_run

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
SRC = ROOT / "src" / "hoprag"
HUGE = "1" + "0" * 400  # 10**400: no float holds it
#: (JSON token as written, what the message quotes)
BAD = [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e400", "1e400"), (HUGE, "100000000000")]


def _trace_lines() -> list[str]:
    return (DATA / "eval_traces.jsonl").read_text(encoding="utf-8").splitlines()


def _with(path: Path, lines: list[str], number: int, old: str, new: str) -> Path:
    """``lines`` with the first ``old`` of line ``number`` (1-based) replaced by ``new``, written to ``path``."""
    changed = list(lines)
    assert old in changed[number - 1]
    changed[number - 1] = changed[number - 1].replace(old, new, 1)
    path.write_text("\n".join(changed) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("token", "shown"), BAD)
def test_a_trace_latency_that_is_no_finite_number_names_file_line_and_field(tmp_path: Path, token: str, shown: str) -> None:
    lines = _trace_lines()
    path = _with(tmp_path / "traces.jsonl", lines, 3, '"latency_ms": ', f'"latency_ms": {token}, "x": ')
    with pytest.raises(InputError) as info:
        read_traces(path)
    assert info.value.source == str(path) and info.value.line == 3
    assert info.value.field is not None and info.value.field.endswith("latency_ms")
    assert shown in str(info.value) and "Fix:" in str(info.value)


def test_a_hit_score_deep_in_a_trace_is_named_by_its_path(tmp_path: Path) -> None:
    path = _with(tmp_path / "traces.jsonl", _trace_lines(), 1, '"score": 7.2', '"score": NaN')
    with pytest.raises(InputError) as info:
        read_traces(path)
    assert (info.value.line, info.value.field) == (1, "steps[0].hits[0].score")


@pytest.mark.parametrize(("old", "field"), [('"rank": 1,', "rank"), ('"start": 384', "start")])
def test_whole_numbers_past_64_bits_are_refused_in_traces(tmp_path: Path, old: str, field: str) -> None:
    path = _with(tmp_path / "traces.jsonl", _trace_lines(), 1, old, old.replace(old.split(": ")[1].rstrip(","), "1" + "0" * 30))
    with pytest.raises(InputError) as info:
        read_traces(path)
    assert (info.value.line, info.value.field) == (1, field)
    assert "9,223,372,036,854,775,807" in str(info.value)


def test_a_number_given_as_text_is_held_to_the_same_rule(tmp_path: Path) -> None:
    path = _with(tmp_path / "traces.jsonl", _trace_lines(), 1, '"latency_ms": ', '"latency_ms": "Infinity", "x": ')
    with pytest.raises(InputError) as info:
        read_traces(path)
    assert (info.value.line, info.value.field) == (1, "latency_ms")


def test_the_fast_trace_reader_leaves_such_lines_to_the_one_that_names_them() -> None:
    trace = read_traces(DATA / "eval_traces.jsonl")[0]
    line = json.dumps({**trace.to_dict(), "plan": {"k": [1, 2.5, "x"]}})
    assert trace_from_json_line(line) == replace(trace, plan={"k": [1, 2.5, "x"]})
    assert '"score": 7.2' in line
    for old, bad in [('"score": 7.2', '"score": NaN'), ('"score": 7.2', '"score": 1e400'), ('"score": 7.2', f'"score": {HUGE}'),
                     ('"rank": 1,', '"rank": 99999999999999999999,')]:
        assert old in line and trace_from_json_line(line.replace(old, bad, 1)) is None
    assert trace_from_json_line(line[:-1] + ', "plan": {"w": Infinity}}') is None


@pytest.mark.parametrize(("token", "shown"), BAD)
def test_cases_refuse_them_anywhere_with_the_path(tmp_path: Path, token: str, shown: str) -> None:
    lines = (ROOT / "data" / "enterprise" / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join([*lines[:2], lines[2][:-1] + f', "metadata": {{"weight": {token}}}}}']) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_cases(path)
    assert (info.value.source, info.value.line, info.value.field) == (str(path), 3, "metadata.weight")
    assert shown in str(info.value)


def test_a_case_grade_past_64_bits_and_a_case_built_in_code_with_nan_are_refused(tmp_path: Path) -> None:
    line = (ROOT / "data" / "enterprise" / "cases.jsonl").read_text(encoding="utf-8").splitlines()[0]
    assert '"grade": 2' in line
    path = tmp_path / "cases.jsonl"
    path.write_text(line.replace('"grade": 2', '"grade": ' + "1" + "0" * 30, 1) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_cases(path)
    assert info.value.line == 1 and info.value.field is not None and info.value.field.endswith(".grade")
    with pytest.raises(ValueError, match=r"metadata\.x\[1\]: nan is not a finite number"):
        Case(case_id="a", query="q", metadata={"x": [1, math.nan]})


@pytest.mark.parametrize(("token", "shown"), BAD)
def test_feedback_events(tmp_path: Path, token: str, shown: str) -> None:
    path = tmp_path / "feedback.jsonl"
    path.write_text('{"run_id": "r", "type": "view", "citations": 2}\n'
                    f'{{"run_id": "r", "type": "thumbs", "value": "up", "ts": {token}}}\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_feedback(path)
    assert (info.value.line, info.value.field) == (2, "ts") and shown in str(info.value)


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_feedback_timestamps_outside_the_years_a_datetime_holds_in_utc(tmp_path: Path, ts: str) -> None:
    path = tmp_path / "feedback.jsonl"
    path.write_text(json.dumps({"run_id": "r", "type": "thumbs", "value": "up", "ts": ts}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="outside the years 1-9999 once converted to UTC") as info:
        read_feedback(path)
    assert (info.value.line, info.value.field) == (1, "ts")


def test_feedback_timestamps_at_the_edges_in_utc_are_kept(tmp_path: Path) -> None:
    from hoprag.gates.checks.feedback import window_start

    path = tmp_path / "feedback.jsonl"
    path.write_text("".join(json.dumps({"run_id": "r", "type": "thumbs", "value": "up", "ts": ts}) + "\n"
                            for ts in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z")), encoding="utf-8")
    first, last = read_feedback(path)
    assert (first.ts.year, last.ts.year) == (1, 9999)
    assert window_start(first.ts, "1w").year == 1  # the week holding 0001-01-01 starts before it: clamped


@pytest.mark.parametrize(("column", "value", "field"), [(5, "nan", "score"), (5, "inf", "score"), (5, "1e400", "score"),
                                                        (4, "1" + "0" * 30, "relevance")])
def test_trec_files(tmp_path: Path, column: int, value: str, field: str) -> None:
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d1 1 0.5 t\n" + (f"q1 Q0 d2 2 {value} t\n" if column == 5 else "q1 Q0 d2 2 0.4 t\n"))
    qrels.write_text("q1 0 d1 1\n" + (f"q1 0 d2 {value}\n" if column == 4 else "q1 0 d2 0\n"))
    with pytest.raises(InputError) as info:
        read_run(run) if column == 5 else read_qrels(qrels)
    assert info.value.line == 2 and info.value.field is not None and info.value.field.startswith(field)


def test_judgment_grades_past_64_bits(tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    path.write_text(json.dumps({"case_id": "c", "doc_id": "d", "grade": 10**30, "labeller": "a", "time": "t"}) + "\n")
    with pytest.raises(InputError) as info:
        read_judgments(path)
    assert (info.value.line, info.value.field) == (1, "grade")


@pytest.mark.parametrize("bound", [".inf", "-.inf", ".nan", "1.0e+400", HUGE])
def test_threshold_bounds(tmp_path: Path, bound: str) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text(f"retrieve:\n  nDCG@10: {{min: {bound}}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"thresholds.yaml: retrieve\.nDCG@10\.min: bound .*Fix: give a finite number"):
        load_thresholds(path)


def test_whole_file_json_counts_the_line() -> None:
    text = '{\n  "a": 1,\n  "b": [2,\n    NaN]\n}\n'
    with pytest.raises(InputError) as info:
        parse_json(text, source="f.json", fix="-")
    assert (info.value.line, info.value.field) == (4, "b[1]")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=5), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=20))
def test_finite_json_reads_exactly_as_json_loads_does(value) -> None:
    text = json.dumps(value)
    assert DECODER.decode(text) == json.loads(text)
    assert first_refused(value) is None


@settings(max_examples=100, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**63), 2**63 - 1))
def test_the_conversions_keep_every_number_in_range(number: float, whole: int) -> None:
    assert finite_float(number, "f") == number and finite_float(repr(number), "f") == number
    assert bounded_int(whole, "i") == whole and bounded_int(str(whole), "i") == whole
    with pytest.raises(NumberError):
        bounded_int(2**63, "i")


def test_the_report_writer_refuses_to_write_nan() -> None:
    assert dumps_indented({"a": [1.5, 2]}) == json.dumps({"a": [1.5, 2]}, indent=2)
    with pytest.raises(ValueError):
        dumps_indented({"a": [math.nan]})


#: modules that may call json.loads / json.load themselves: files hoprag wrote (index, store rows),
#: model replies, and the decoder itself. Any other reader goes through hoprag.jsonl or
#: hoprag.finite_numbers.loads, so user input is always read under the number rule.
OWN_FORMATS = {
    "finite_numbers.py", "jsonl.py", "index/graph_arrays.py", "index/bm25_arrays.py", "index/entity_graph.py",
    "index/tokenize.py", "index/staging.py", "index/graph_build.py", "index/graph_worker.py", "index/corpus_db.py", "index/pg_corpus.py", "store/run_store.py",
    "service/app.py", "service/streaming.py", "evaluation/model_judge.py", "llm/testing.py", "otel_import.py",
    "index/history.py", "index/snapshots.py", "index/graph_update.py",  # an index's own record of replaced versions
    "index/corpus_digest.py", "index/graph_fork.py",  # an index's saved hash state; a forked child's report over a pipe
    "index/graph_append.py",  # the index's own entity table, extended by an update
    "io/kinds.py", "datasets/splits.py",  # telling what a file is before it is overwritten; no value is used
}


def test_no_reader_of_user_input_bypasses_the_number_rule() -> None:
    found = set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("loads", "load")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "json"):
                found.add(path.relative_to(SRC).as_posix())
    assert found <= OWN_FORMATS, f"read user JSON through hoprag.jsonl or hoprag.finite_numbers.loads: {sorted(found - OWN_FORMATS)}"
