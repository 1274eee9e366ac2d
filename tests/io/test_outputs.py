"""The output guard (hoprag.io.outputs): atomic writes, inputs never replaced, other kinds kept."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from hoprag.errors import InputError
from hoprag.io.kinds import CASES_JSONL, HTML_REPORT, JSON_DOCUMENT, TRACES_JSONL, TREC_QRELS, TREC_RUN, describe
from hoprag.io.outputs import atomic_writer, check_output, check_output_dir, guarding, open_for_append, write_text

pytestmark = pytest.mark.unit

CASE = '{"case_id": "q1", "query": "Who founded Kestrel Dynamics?", "answers": ["Ada"]}\n'
TRACE = '{"case_id": "q1", "question": "Who founded Kestrel Dynamics?", "steps": [], "answer": "Ada"}\n'


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    report = tmp_path / "report.json"
    report.write_text('{\n  "aggregate": {}\n}\n', encoding="utf-8")
    with pytest.raises(RuntimeError):
        with atomic_writer(report, JSON_DOCUMENT) as handle:
            handle.write('{\n  "half": ')
            raise RuntimeError("disk full, say")
    assert report.read_text(encoding="utf-8") == '{\n  "aggregate": {}\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    report = tmp_path / "report.json"
    report.write_text("{}\n", encoding="utf-8")
    report.chmod(0o640)
    write_text(report, '{\n  "x": 1\n}\n', JSON_DOCUMENT)
    assert oct(report.stat().st_mode & 0o777) == oct(0o640)


def test_an_input_is_refused_by_path_by_symlink_and_by_hard_link(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(CASE, encoding="utf-8")
    (tmp_path / "link").symlink_to(cases)
    os.link(cases, tmp_path / "hard")
    with guarding([cases]):
        for target in (cases, tmp_path / "link", tmp_path / "hard", tmp_path / "." / "cases.jsonl"):
            with pytest.raises(InputError, match="replace the input"):
                write_text(target, "{}", JSON_DOCUMENT)
    assert cases.read_text(encoding="utf-8") == CASE


def test_outside_a_command_the_kind_check_still_holds(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(CASE, encoding="utf-8")
    with pytest.raises(InputError, match="holds a cases file .*--force"):
        write_text(cases, "{}", JSON_DOCUMENT)
    with guarding([], force=True):
        write_text(cases, "{}\n", JSON_DOCUMENT)
    assert cases.read_text(encoding="utf-8") == "{}\n"


def test_in_place_rewrites_are_only_those_declared(tmp_path):
    traces = tmp_path / "traces.jsonl"
    traces.write_text(TRACE, encoding="utf-8")
    with guarding([traces], in_place=[traces]):
        write_text(traces, TRACE, TRACES_JSONL)
    with guarding([traces]):
        with pytest.raises(InputError):
            write_text(traces, TRACE, TRACES_JSONL)


def test_an_empty_file_is_replaced_and_a_directory_refused(tmp_path):
    empty = tmp_path / "out.json"
    empty.touch()
    write_text(empty, "{}\n", JSON_DOCUMENT)
    with pytest.raises(InputError, match="is a directory"):
        check_output(tmp_path, JSON_DOCUMENT, what="--json")


def test_devices_are_written_in_place_not_replaced(tmp_path):
    write_text("/dev/null", "{}\n", JSON_DOCUMENT)
    assert Path("/dev/null").is_char_device()


def test_appending_checks_once_then_appends(tmp_path):
    record = tmp_path / "shortcuts.jsonl"
    with open_for_append(record, TRACES_JSONL) as handle:
        handle.write(TRACE)
    with open_for_append(record, TRACES_JSONL) as handle:
        handle.write(TRACE)
    assert record.read_text(encoding="utf-8") == TRACE * 2


def test_an_output_folder_that_holds_an_input_is_refused_when_replaced_whole(tmp_path):
    (tmp_path / "ix").mkdir()
    corpus = tmp_path / "ix" / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "x"}\n', encoding="utf-8")
    with guarding([corpus]):
        check_output_dir(tmp_path / "ix", what="--out")  # writing into it is fine
        with pytest.raises(InputError, match="holds the input"):
            check_output_dir(tmp_path / "ix", what="--out", replaces_whole=True)


@pytest.mark.parametrize(("head", "kind"), [
    (CASE, "cases file"), (TRACE, "traces file"), ('{"hoprag_traces": 1, "run_id": "r"}\n', "traces file"),
    ('{\n  "aggregate": {}\n}\n', "JSON document"), ("q1 0 d1 1\nq1 0 d2 0\n", "TREC qrels"),
    ("q1 Q0 d1 1 3.5 tag\n", "TREC run"), ("<!doctype html><html>", "HTML page"),
    ("just some notes\n", "another kind"),
])
def test_a_file_is_named_by_what_it_looks_like(head, kind):
    assert kind in describe(head)


def test_trec_kinds_tell_qrels_from_runs():
    assert TREC_QRELS.matches("q1 0 d1 1\n") and not TREC_QRELS.matches("q1 Q0 d1 1 3.5 tag\n")
    assert TREC_RUN.matches("q1 Q0 d1 1 3.5 tag\n") and not TREC_RUN.matches("q1 0 d1 1\n")
    assert HTML_REPORT.matches("\n<!DOCTYPE html>") and CASES_JSONL.matches(CASE)


# Writers a user's files reach: every one goes through hoprag.io.outputs. Files written inside a folder
# hoprag owns (an index being built in its staging folder, the run store's own database, temporary files
# of forked workers) are not a user's outputs.
OWN_FOLDERS = ("index/", "store/", "forks.py", "executors.py", "io/outputs.py", "gates/staged_run.py")


def test_no_module_writes_a_user_file_without_the_guard():
    root = Path(__file__).parents[2] / "src" / "hoprag"
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(OWN_FOLDERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            modes = [a.value for a in node.args[:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
            method = isinstance(node.func, ast.Attribute)  # Path.write_text, not our own write_text()
            writes = (method and name in ("write_text", "write_bytes")) or (name in ("open", "fdopen") and
                                                              any(set(str(m)) & set("wax") for m in modes))
            if writes:
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, f"write through hoprag.io.outputs (atomic_writer, write_text, open_for_append): {offenders}"
