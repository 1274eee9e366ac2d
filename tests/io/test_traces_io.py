"""The one trace I/O module (hoprag.io.traces): strict and lenient reads of the same damaged file, the
header, a cut-off last line, retried error traces, duplicates, the number rule, a foreign pipeline's
file, the writers; and no module or command reads or writes a traces file around it."""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from hoprag.errors import InputError
from hoprag.io.kinds import CASES_JSONL
from hoprag.io.traces import (
    NotTracesFileError,
    TracesHeader,
    append_trace,
    read_traces,
    read_traces_file,
    write_traces,
)
from hoprag.io.trace_resume import scan_traces_file
from hoprag.records import Answer, Trace

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
SRC = ROOT / "src" / "hoprag"
DATA = ROOT / "tests" / "data"

HEADER = ('{"hoprag_traces": 1, "run_id": "r1", "engine": "multihop", "config_hash": "h", '
          '"index_artifact_id": "a", "created": "2026-01-01T00:00:00Z"}')
TORN = '{"run_id": "r1", "case_id": "ent-008", "question": "q8", "answer": {"te'  # 71 bytes, no line end
#: one line per way a line can be wrong, between readable ones; the number is the line's
DAMAGED = [
    HEADER,                                                                                             # 1
    '{"run_id": "r1", "case_id": "ent-001", "question": "q1", "answer": {"text": "7 years"}}',          # 2 good
    '{"run_id": "r1", "case_id": "ent-002", "question": "q2", "answer": ',                              # 3 not JSON
    '{"run_id": "r1", "question": "q3", "answer": {"text": "x"}}',                                      # 4 no case_id
    '{"run_id": "r1", "case_id": "ent-004", "question": "q4", "latency_ms": NaN}',                      # 5 NaN
    '{"run_id": "r1", "case_id": "ent-005", "evidence": [{"hit": {"rank": 1}}]}',                       # 6 no doc_id
    '{"run_id": "r1", "case_id": 6, "question": "q6", "answer": {"text": "six"}}',                      # 7 good, id 6
    '{"run_id": "r1", "case_id": "ent-007", "question": "q7", "latency_ms": 1e400}',                    # 8 overflows
    TORN,                                                                                               # 9 cut off
]


def _write(path: Path, lines: list[str], *, end: str = "\n") -> Path:
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    return _write(tmp_path / "traces.jsonl", DAMAGED, end="")


def test_strict_refuses_the_first_bad_line_naming_it_and_the_fix(damaged: Path) -> None:
    with pytest.raises(InputError) as info:
        read_traces(damaged)
    assert (info.value.source, info.value.line) == (str(damaged), 3)
    assert str(info.value).startswith(f"{damaged}:3: malformed JSON") and ". Fix: make every line" in str(info.value)


def test_lenient_reads_the_same_file_and_reports_every_line_it_left_out(damaged: Path) -> None:
    read = read_traces_file(damaged, lenient=True)
    assert [t.case_id for t in read.traces] == ["ent-001", "6"]  # the numeric id read as its string
    source = str(damaged)
    assert [(e["line"], e["reason"]) for e in read.exclusions] == [
        (3, "malformed JSON (Expecting value at column 1)"),
        (4, "trace has no case_id"),
        (5, "NaN is not a finite number (field 'latency_ms')"),
        (6, "missing field 'doc_id'"),
        (8, "1e400 is too large for a number (it reads as infinity) (field 'latency_ms')"),
        (9, f"cut-off last line ({len(TORN)} bytes)"),
    ]
    assert {e["source"] for e in read.exclusions} == {source}
    assert read.exclusions[3]["case_id"] == "ent-005"
    assert read.torn is not None and (read.torn.line, read.torn.size) == (9, len(TORN))


def test_a_lenient_read_without_one_readable_trace_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [DAMAGED[3], DAMAGED[4]])
    with pytest.raises(InputError, match=r"no readable trace \(2 line\(s\) excluded, the first: line 1"):
        read_traces_file(path, lenient=True)


def test_the_header_is_read_apart_and_written_first(tmp_path: Path) -> None:
    header = TracesHeader(run_id="r1", engine="multihop", config_hash="h", index_artifact_id="a",
                          created="2026-01-01T00:00:00Z")
    trace = Trace(run_id="r1", case_id="ent-001", question="q1", answer=Answer(text="7 years"))
    path = tmp_path / "t.jsonl"
    assert write_traces(path, [trace], header=header) == 1
    first, second = path.read_text(encoding="utf-8").splitlines()
    assert first == HEADER  # key order and spelling as hoprag run has always written them
    assert second == json.dumps(trace.to_dict(), ensure_ascii=False)
    read = read_traces_file(path)
    assert read.headers == (header,) and read.traces == (trace,)
    appended = tmp_path / "appended.jsonl"
    append_trace(appended, header)
    append_trace(appended, trace)
    assert appended.read_bytes() == path.read_bytes()  # the run's appends write the same bytes
    only_header = _write(tmp_path / "h.jsonl", [HEADER])
    assert read_traces_file(only_header).traces == () and read_traces_file(only_header).headers == (header,)


def test_a_torn_last_line_is_named_with_its_fix_excluded_when_lenient_and_kept_for_a_resume(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [HEADER, DAMAGED[1], TORN], end="")
    with pytest.raises(InputError) as info:
        read_traces(path)
    assert str(info.value).startswith(f"{path}:3: the last line is cut off ({len(TORN)} bytes without a line end")
    assert "hoprag run INDEX CASES --out" in str(info.value) and "hoprag eval --lenient" in str(info.value)
    assert [t.case_id for t in read_traces_file(path, lenient=True).traces] == ["ent-001"]
    state = scan_traces_file(path)
    assert state.case_ids == {"ent-001"} and state.torn is not None and state.torn.line == 3


def test_a_run_killed_while_writing_its_header_leaves_a_file_a_resume_takes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(HEADER[:40], encoding="utf-8")
    state = scan_traces_file(path)  # not refused as "not a traces file"
    assert state.case_ids == frozenset() and state.headers == () and state.torn is not None and state.torn.offset == 0
    with pytest.raises(InputError, match=r":1: the last line is cut off \(40 bytes"):
        read_traces(path)
    with pytest.raises(InputError, match=r"no readable trace \(1 line\(s\) excluded, the first: line 1, cut-off last line"):
        read_traces_file(path, lenient=True)


def _trace(case_id: str, answer: str, error: str | None = None) -> str:
    return json.dumps({"run_id": "r", "case_id": case_id, "question": "q?", "answer": {"text": answer},
                       "stop_reason": "error" if error else "sufficient", "error": error})


def test_an_error_trace_followed_by_its_retry_is_left_out_and_a_real_duplicate_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [
        HEADER,
        _trace("a", "", "IndexLoadError: x"), _trace("b", "one"), _trace("a", "retried"),  # a: retried
        _trace("b", "two"),  # b: a real duplicate: both read, the evaluation scores the last and reports it
        _trace("c", "", "TimeoutError: y"),  # c: an error nothing followed
    ])
    for read in (read_traces_file(path), read_traces_file(path, lenient=True)):
        assert [(t.case_id, t.answer.text) for t in read.traces] == [("b", "one"), ("a", "retried"), ("b", "two"),
                                                                      ("c", "")]
        assert read.exclusions == ()
    state = scan_traces_file(path)
    assert state.case_ids == {"a", "b", "c"} and state.errored == {"c"}


@pytest.mark.parametrize(("value", "said"), [
    ("NaN", "NaN is not a finite number"), ("-Infinity", "-Infinity is not a finite number"),
    ("1e400", "1e400 is too large for a number"),
])
def test_a_number_that_is_not_finite_is_refused_naming_file_line_and_field(tmp_path: Path, value, said) -> None:
    path = _write(tmp_path / "t.jsonl", [DAMAGED[1], f'{{"case_id": "c2", "steps": [{{"step_id": "s1", '
                                                     f'"issued_query": "q", "latency_ms": {value}}}]}}'])
    with pytest.raises(InputError) as info:
        read_traces(path)
    assert str(info.value).startswith(f"{path}:2: {said}") and "(field 'steps[0].latency_ms')" in str(info.value)
    (excluded,) = read_traces_file(path, lenient=True).exclusions
    assert excluded["line"] == 2 and excluded["reason"].startswith(said)


def test_a_foreign_pipelines_traces_read_as_before() -> None:
    path = DATA / "eval4_foreign_traces.jsonl"
    with pytest.raises(InputError) as info:
        read_traces(path)
    assert (info.value.line, info.value.field) == (2, "doc_id") and "trace 'ent-003' is missing a field" in str(info.value)
    read = read_traces_file(path, lenient=True)
    assert [t.case_id for t in read.traces] == ["ent-014", "ent-404"]
    assert read.exclusions == ({"source": str(path), "line": 2, "case_id": "ent-003", "reason": "missing field 'doc_id'"},)
    first = read.traces[0]
    assert [e.chunk_id for e in first.evidence] == ["catalog-3", "policy-14-v2"]  # a document id stands for its chunk
    assert first.answer.text == "KR-West" and read.headers == ()


def test_a_cases_file_is_refused_as_traces_in_both_modes() -> None:
    for lenient in (False, True):
        with pytest.raises(NotTracesFileError, match=r"cases file, not traces"):
            read_traces_file(ROOT / "data" / "enterprise" / "cases.jsonl", lenient=lenient)


def test_the_writer_goes_through_the_output_guard(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    shutil.copy(ROOT / "data" / "enterprise" / "cases.jsonl", cases)
    before = cases.read_bytes()
    assert CASES_JSONL.matches(before.decode("utf-8"))
    with pytest.raises(InputError, match=r"holds a cases file .*--force"):
        write_traces(cases, [Trace(run_id="r", case_id="c1", question="q")])
    assert cases.read_bytes() == before


# ------------------------------------------------------------------ nothing goes around the one module

#: modules that build a Trace from their own storage (database rows hoprag wrote) or from objects a
#: caller hands over (the MCP server's evaluate tool), not from a traces file
DATABASE_READERS = {"service/records.py", "store/run_store.py", "service/mcp_server.py"}


def _source(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def test_no_module_reads_or_writes_a_traces_file_around_hoprag_io_traces() -> None:
    found: dict[str, set[str]] = {"Trace.from_dict": set(), "header key": set(), "TRACES_JSONL": set()}
    for path in SRC.rglob("*.py"):
        name = _source(path)
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Attribute) and node.attr == "from_dict" and isinstance(node.value, ast.Name)
                    and node.value.id == "Trace"):
                found["Trace.from_dict"].add(name)
            if isinstance(node, ast.Constant) and node.value == "hoprag_traces":
                found["header key"].add(name)
            if isinstance(node, ast.Name) and node.id == "TRACES_JSONL":
                found["TRACES_JSONL"].add(name)
    assert found["Trace.from_dict"] <= {"io/traces.py"} | DATABASE_READERS, found["Trace.from_dict"]
    assert found["header key"] <= {"io/kinds.py"}, found["header key"]
    # the output kind names a traces file: io.traces writes it, cli_io declares the commands that do
    assert found["TRACES_JSONL"] <= {"io/kinds.py", "io/traces.py", "cli_io.py"}, found["TRACES_JSONL"]


def _reads_traces(example: str) -> list[str]:
    """The traces files an example command line from the command table reads (not writes)."""
    words = shlex.split(example)[1:]
    return [w for i, w in enumerate(words) if re.fullmatch(r"traces[\w-]*\.jsonl", w) and words[i - 1] != "--out"]


def _commands_reading_traces() -> list[str]:
    from hoprag.cli_io import COMMAND_IO

    return sorted(path for path, io in COMMAND_IO.items() if _reads_traces(io.example))


@pytest.mark.integration
@pytest.mark.parametrize("command", _commands_reading_traces())
def test_every_command_that_reads_traces_reads_them_through_the_one_reader(command, tmp_path, monkeypatch, capsys):
    """Each command's own example, run on traces whose last line is cut off, says what the one reader says."""
    from hoprag.cli import main
    from hoprag.cli_io import COMMAND_IO

    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "data" / "enterprise" / "cases.jsonl", tmp_path / "cases.jsonl")
    (tmp_path / "release.yaml").write_text("min:\n  chain_coverage@5: 0.0\n", encoding="utf-8")
    example = COMMAND_IO[command].example
    damaged = (DATA / "eval_traces.jsonl").read_text(encoding="utf-8") + TORN
    for name in _reads_traces(example):
        (tmp_path / name).write_text(damaged, encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(shlex.split(example)[1:])
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert re.search(r"traces[\w-]*\.jsonl:5: the last line is cut off", " ".join(err.split())), err
    assert "Traceback" not in err
