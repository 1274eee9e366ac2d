"""Safe resume: the run header, refusing foreign files and other configurations, torn-line repair, the lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hoprag.errors import InputError
from hoprag.io.traces import NotTracesFileError, read_traces, read_traces_file
from hoprag.locks import FileLockedError, exclusive_lock, lock_path
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.batch import questions_from_cases, run_questions

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[1] / "data"
ENTERPRISE_CASES = Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl"


@pytest.fixture()
def questions(hotpot_slice):
    return questions_from_cases(hotpot_slice.cases)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_first_line_is_the_run_header_and_every_reader_skips_it(hotpot_index, questions, tmp_path):
    out = tmp_path / "traces.jsonl"
    summary = run_questions(make_engine("multihop", hotpot_index), questions, out,
                            index_artifact_id=hotpot_index.manifest.artifact_id)
    header, *traces = _lines(out)
    engine = make_engine("multihop", hotpot_index)
    assert header["hoprag_traces"] == 1 and header["run_id"] == summary.run_id
    assert header["engine"] == "multihop" and header["config_hash"] == engine.config_hash
    assert header["index_artifact_id"] == hotpot_index.manifest.artifact_id and header["created"].endswith("Z")
    assert [t["case_id"] for t in traces] == [q.case_id for q in questions]
    assert [t.case_id for t in read_traces(out)] == [q.case_id for q in questions]
    read = read_traces_file(out, lenient=True)
    assert len(read.traces) == len(questions) and read.exclusions == ()
    assert not lock_path(out).exists()  # released on exit


@pytest.mark.parametrize(
    "second, differs",
    [
        ({"engine": "single"}, "engine multihop in the file, single in this run"),
        ({"k": 3}, "config hash"),
        ({"artifact": "another-index"}, "index artifact"),
    ],
)
def test_resume_with_another_engine_config_or_index_is_refused(hotpot_index, questions, tmp_path, second, differs):
    out = tmp_path / "traces.jsonl"
    artifact = hotpot_index.manifest.artifact_id
    run_questions(make_engine("multihop", hotpot_index), questions[:2], out, index_artifact_id=artifact)
    before = out.read_bytes()
    engine = make_engine(second.get("engine", "multihop"), hotpot_index, k=second.get("k"))
    with pytest.raises(InputError) as info:
        run_questions(engine, questions, out, index_artifact_id=second.get("artifact", artifact))
    message = str(info.value)
    assert differs in message and "--no-resume" in message and "--out" in message
    if "k" in second:  # both hashes are named
        first_hash = make_engine("multihop", hotpot_index).config_hash
        assert first_hash in message and engine.config_hash in message
    assert out.read_bytes() == before
    again = run_questions(engine, questions, out, resume=False, index_artifact_id=second.get("artifact", artifact))
    assert again.written == len(questions) and len(_lines(out)) == 1 + len(questions)


def test_resuming_an_old_file_without_header_checks_the_traces_own_engine(hotpot_index, questions, tmp_path):
    out = tmp_path / "old.jsonl"
    run_questions(make_engine("multihop", hotpot_index), questions[:2], out)
    out.write_text("\n".join(out.read_text().splitlines()[1:]) + "\n")  # as an older hoprag wrote it
    with pytest.raises(InputError, match="engine multihop in the file, single in this run"):
        run_questions(make_engine("single", hotpot_index), questions, out)
    summary = run_questions(make_engine("multihop", hotpot_index), questions, out)
    assert summary.resumed == 2 and summary.written == len(questions) - 2


@pytest.mark.parametrize("resume", [True, False])
@pytest.mark.parametrize(
    "content, reason",
    [
        (ENTERPRISE_CASES.read_bytes(), "this is a cases file"),
        ((DATA / "ingest_docs.jsonl").read_bytes(), "not a traces file"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50, "binary file"),
        (b"not json at all\n", "not a traces file"),
    ],
    ids=["cases", "corpus", "binary", "text"],
)
def test_an_out_that_is_not_a_traces_file_is_refused_and_never_touched(
    hotpot_index, questions, tmp_path, content, reason, resume
):
    out = tmp_path / "typo.jsonl"
    out.write_bytes(content)
    with pytest.raises(NotTracesFileError) as info:
        run_questions(make_engine("single", hotpot_index), questions, out, resume=resume)
    assert reason in str(info.value) and "--out" in str(info.value)
    assert out.read_bytes() == content


def test_a_torn_last_line_is_dropped_on_resume_and_said_so(hotpot_index, questions, tmp_path):
    out = tmp_path / "traces.jsonl"
    engine = make_engine("multihop", hotpot_index)
    first = run_questions(engine, questions[:3], out)
    complete = out.read_bytes()
    out.write_bytes(complete[:-7])  # the last trace lost its last bytes and its line end
    torn_at = complete[:-1].rfind(b"\n") + 1
    with pytest.raises(InputError, match=r":4: the last line is cut off .*--lenient"):
        read_traces(out)
    read = read_traces_file(out, lenient=True)
    assert len(read.traces) == 2 and read.exclusions[0]["line"] == 4
    summary = run_questions(engine, questions, out)
    assert summary.run_id == first.run_id and summary.resumed == 2 and summary.written == len(questions) - 2
    (note,) = summary.notes
    assert "line 4" in note and f"{len(complete) - 7 - torn_at} bytes" in note
    ids = [t.case_id for t in read_traces(out)]
    assert sorted(ids) == sorted(q.case_id for q in questions) and len(ids) == len(set(ids))


def test_a_broken_line_before_the_last_is_an_error_naming_it(hotpot_index, questions, tmp_path):
    out = tmp_path / "traces.jsonl"
    engine = make_engine("single", hotpot_index)
    run_questions(engine, questions[:3], out)
    lines = out.read_text().splitlines()
    lines[2] = lines[2][:40]
    out.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as info:
        run_questions(engine, questions, out)
    assert ":3:" in str(info.value) and "line 3" in str(info.value) and "--no-resume" in str(info.value)


def test_a_complete_last_record_without_line_end_gets_one(hotpot_index, questions, tmp_path):
    out = tmp_path / "traces.jsonl"
    engine = make_engine("single", hotpot_index)
    run_questions(engine, questions[:2], out)
    out.write_bytes(out.read_bytes().rstrip(b"\n"))
    summary = run_questions(engine, questions, out)
    assert summary.resumed == 2 and "line end" in summary.notes[0]
    assert len(read_traces(out)) == len(questions)


def test_a_second_writer_is_stopped_naming_the_pid(hotpot_index, questions, tmp_path):
    out = tmp_path / "traces.jsonl"
    with exclusive_lock(out, fix="wait"):
        with pytest.raises(FileLockedError) as info:
            run_questions(make_engine("single", hotpot_index), questions, out)
    assert info.value.pid == os.getpid() and f"PID {os.getpid()}" in str(info.value) and "--out" in str(info.value)
    assert not out.exists()


def test_a_lock_left_by_a_dead_process_does_not_block(hotpot_index, questions, tmp_path):
    out = tmp_path / "traces.jsonl"
    script = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.write(fd, str(os.getpid()).encode())\n"
        "os._exit(0)\n"  # dies holding the lock, leaving the file behind
    )
    subprocess.run([sys.executable, "-c", script, str(lock_path(out))], check=True, timeout=30)
    assert lock_path(out).exists()
    summary = run_questions(make_engine("single", hotpot_index), questions, out)
    assert summary.written == len(questions) and not lock_path(out).exists()


def test_numeric_case_ids_of_foreign_traces_match_their_string(tmp_path):
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.chain_eval import evaluate_chains

    cases = [c.model_copy(update={"case_id": str(n)}) for n, c in enumerate(load_cases(ENTERPRISE_CASES)[:3], start=1)]
    path = tmp_path / "foreign.jsonl"
    path.write_text('{"case_id": 1, "answer": {"text": "x"}}\n{"case_id": 2.0, "evidence": []}\n')
    report = evaluate_chains(cases, read_traces(path), ks=(2,))
    assert report.aggregate["unknown_traces"] == 0 and report.aggregate["missing_traces"] == 1


def test_duplicates_and_unknown_ids_are_named_in_the_warnings(tmp_path):
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.chain_eval import evaluate_chains

    cases = load_cases(ENTERPRISE_CASES)
    path = tmp_path / "dups.jsonl"
    rows = [{"case_id": "ent-001", "answer": {"text": "a"}}, {"case_id": "ent-002"}, {"case_id": "ent-001"},
            {"case_id": "ent-001"}, {"case_id": "nope-9"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = evaluate_chains(cases, read_traces(path), ks=(2,))
    assert report.duplicate_case_ids == ("ent-001",) and report.unknown_case_ids == ("nope-9",)
    duplicates, unknown = report.trace_warnings()
    assert duplicates.startswith("2 duplicate trace(s) for 1 case(s) (ent-001)") and "last trace" in duplicates
    assert "nope-9" in unknown and report.has_trace_problems


def test_a_cases_file_given_as_traces_is_refused_with_the_fix():
    with pytest.raises(NotTracesFileError, match=r"cases file, not traces.*CASES TRACES"):
        read_traces(ENTERPRISE_CASES)
    with pytest.raises(NotTracesFileError):
        read_traces_file(ENTERPRISE_CASES, lenient=True)
