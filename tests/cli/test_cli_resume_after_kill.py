"""A real `hoprag run` killed with SIGKILL half-way, its last line torn, then resumed: one trace per case.

The HotpotQA dev slice's five questions are asked 20 times each (distinct case ids), so the run
lasts long enough to be caught mid-way; it is then stopped (SIGSTOP, still holding its lock) while
a second writer is turned away naming its PID, and killed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.datasets.schema import write_cases
from hoprag.index.store import build_index

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "data"
REPEATS = 20


def hoprag(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """A real ``hoprag`` process (for the runs that are killed, locked out and resumed)."""
    return subprocess.run([sys.executable, "-m", "hoprag.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture()
def cli(capsys, monkeypatch):
    """``hoprag`` in this process, through the CLI's entry point (for the cheap commands)."""

    def call(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        from hoprag.cli import main

        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["hoprag", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)

    return call


def _trace_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("resume-kill")
    slice_ = import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"])
    build_index(slice_.documents, root / "index")
    cases = [c.model_copy(update={"case_id": f"{c.case_id}-{i}"}) for i in range(REPEATS) for c in slice_.cases]
    write_cases(root / "cases.jsonl", cases)
    write_cases(root / "five.jsonl", slice_.cases)
    return root


def test_a_killed_run_with_a_torn_last_line_resumes_to_exactly_one_trace_per_case(work, cli):
    out = work / "traces.jsonl"
    total = REPEATS * 5
    first = subprocess.Popen(
        [sys.executable, "-m", "hoprag.cli", "run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q"],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while _trace_lines(out) < 10 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.01)
        assert first.poll() is None, "the run ended before it could be interrupted"
        first.send_signal(signal.SIGSTOP)  # frozen half-way, holding its lock, until it is killed

        second = hoprag("run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q", cwd=work)
        assert second.returncode == 2 and "Traceback" not in second.stderr
        assert f"PID {first.pid}" in second.stderr and "another --out" in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    written = _trace_lines(out) - 1  # the header
    assert 0 < written < total, "killed half-way"

    data = out.read_bytes()
    if not data.endswith(b"\n"):  # the kill itself cut a write
        data = data[: data.rfind(b"\n") + 1]
    out.write_bytes(data[:-6])  # a torn write: the last trace loses its end
    torn_line = data[:-1].count(b"\n") + 1

    strict = cli("eval", "cases.jsonl", "traces.jsonl", "--k", "2", cwd=work)
    assert strict.returncode == 2 and f"traces.jsonl:{torn_line}: the last line is cut off" in strict.stderr
    for command in ("eval", "chain-eval"):
        lenient = cli(command, "cases.jsonl", "traces.jsonl", "--k", "2", "--lenient", cwd=work)
        assert lenient.returncode == 0, lenient.stderr
        assert "1 trace line(s) excluded" in " ".join(lenient.stderr.split())

    resumed = hoprag("run", "index", "cases.jsonl", "--out", "traces.jsonl", "-q", cwd=work)
    assert resumed.returncode == 0, resumed.stderr
    message = " ".join(resumed.stderr.split())
    assert f"dropped the cut-off last line {torn_line}" in message
    assert f"({written - 1} already done" in " ".join(resumed.stdout.split())

    header, *traces = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert header["hoprag_traces"] == 1 and header["engine"] == "multihop"
    ids = [t["case_id"] for t in traces]
    expected = {json.loads(line)["case_id"] for line in (work / "cases.jsonl").read_text().splitlines()}
    assert len(ids) == total and set(ids) == expected  # every case exactly once
    assert {t["run_id"] for t in traces} == {header["run_id"]}
    assert not (work / "traces.jsonl.lock").exists()


def test_strict_eval_exits_1_on_duplicates_and_names_them(work, cli):
    from hoprag.index.store import load_index
    from hoprag.pipeline.factory import make_engine
    from hoprag.pipeline.batch import Question, run_questions

    cases = [json.loads(line) for line in (work / "five.jsonl").read_text(encoding="utf-8").splitlines()]
    engine = make_engine("single", load_index(work / "index"))
    run_questions(engine, [Question(c["case_id"], c["query"]) for c in cases], work / "five-traces.jsonl")
    lines = (work / "five-traces.jsonl").read_text(encoding="utf-8").splitlines()
    (work / "dups.jsonl").write_text("\n".join(lines + lines[1:3]) + "\n", encoding="utf-8")
    dup_ids = [json.loads(line)["case_id"] for line in lines[1:3]]
    for command in ("eval", "chain-eval"):
        loose = cli(command, "five.jsonl", "dups.jsonl", "--k", "2", cwd=work)
        assert loose.returncode == 0
        warning = " ".join(loose.stderr.split())
        assert "2 duplicate trace(s) for 2 case(s)" in warning and all(i in warning for i in dup_ids)
        assert "the last trace of each case is scored" in warning
        strict = cli(command, "five.jsonl", "dups.jsonl", "--k", "2", "--strict", cwd=work)
        assert strict.returncode == 1 and "--strict" in strict.stderr and "Traceback" not in strict.stderr


def test_a_cases_file_as_out_or_as_traces_is_refused(work, cli):
    before = (work / "cases.jsonl").read_bytes()
    typo = cli("run", "index", "cases.jsonl", "--out", "cases.jsonl", "-q", cwd=work)
    assert typo.returncode == 2 and "would replace the input" in typo.stderr  # the output guard, before any work
    again = cli("run", "index", "cases.jsonl", "--out", "cases.jsonl", "--no-resume", "-q", cwd=work)
    assert again.returncode == 2 and (work / "cases.jsonl").read_bytes() == before
    swapped = cli("eval", "cases.jsonl", "cases.jsonl", cwd=work)
    assert swapped.returncode == 2 and "CASES TRACES" in " ".join(swapped.stderr.split())
    assert "Traceback" not in typo.stderr + again.stderr + swapped.stderr
