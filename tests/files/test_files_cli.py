"""Each command that reads a user's file, given a bad one: exit 2, one clear message, no traceback.

The commands run in-process through :func:`hoprag.cli.main` (the console entry point) so the table
stays fast; the real-process path is covered by the CLI suites.
"""

from __future__ import annotations

import gzip
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.index.store import build_index
from hoprag.ingest.loaders import load_documents

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ENTERPRISE = ROOT / "data" / "enterprise"

# What each kind of bad file must be called (the corpus readers accept a folder of .md/.txt files,
# so a folder given as a corpus is an empty corpus, not a misplaced directory).
EXPECT = {
    "latin1": r"is not UTF-8 text \(byte 0xE9 at byte offset \d+, line 1\). Fix: it looks like latin-1/cp1252",
    "directory": r"is a directory, not a file\. Fix: pass one of the files inside it \(notes\.json\)",
    "empty": r"file is empty",
    "binary": r"is a binary file, not text \(a NUL byte at byte offset 3",
}
EXPECT_CORPUS = {**EXPECT, "directory": r"the corpus has no documents", "empty": r"the corpus has no documents"}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("badfiles")
    shutil.copy(ENTERPRISE / "cases.jsonl", root / "cases.jsonl")
    shutil.copy(ENTERPRISE / "corpus.jsonl", root / "corpus.jsonl")
    shutil.copy(DATA / "eval_traces.jsonl", root / "traces.jsonl")
    build_index(load_documents(root / "corpus.jsonl"), root / "index")
    return root


def bad_file(root: Path, kind: str, suffix: str) -> Path:
    """A file of ``kind`` named like the real one (so the loader takes it for what it claims to be)."""
    path = root / f"bad-{kind}{suffix}"
    if kind == "latin1":
        path.write_bytes('{"case_id": "Café"}\n'.encode("latin-1"))
    elif kind == "directory":
        path.mkdir(exist_ok=True)
        (path / "notes.json").write_text("[]")  # not .md/.txt: a corpus folder without documents
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(gzip.compress(b'{"case_id": "x"}\n', mtime=0))
    return path


# command name -> (argv builder taking the work dir and the bad file, suffix, which expectations)
COMMANDS: dict[str, tuple[Callable[[Path, Path], list[str]], str, dict[str, str]]] = {
    "import": (lambda w, bad: ["import", "hotpotqa", str(bad), "--out", str(w / "imp")], ".json", EXPECT),
    "index": (lambda w, bad: ["index", str(bad), "--out", str(w / "idx-new"), "--quiet"], ".jsonl", EXPECT_CORPUS),
    "run": (lambda w, bad: ["run", str(w / "index"), str(bad), "--out", str(w / "t.jsonl"), "--quiet"],
            ".jsonl", EXPECT),
    "eval cases": (lambda w, bad: ["eval", str(bad), str(w / "traces.jsonl")], ".jsonl", EXPECT),
    "eval traces": (lambda w, bad: ["eval", str(w / "cases.jsonl"), str(bad)], ".jsonl", EXPECT),
    "audit cases": (lambda w, bad: ["audit", str(bad), str(w / "corpus.jsonl"), "--out", str(w / "s.jsonl")],
                    ".jsonl", EXPECT),
    "audit corpus": (lambda w, bad: ["audit", str(w / "cases.jsonl"), str(bad), "--out", str(w / "s.jsonl")],
                     ".jsonl", EXPECT_CORPUS),
    "gate-run cases": (lambda w, bad: ["gate-run", str(w / "corpus.jsonl"), "--cases", str(bad), "--out",
                                       str(w / "gate"), "--embedder", "hash", "--store", str(w / "store.db")],
                       ".jsonl", EXPECT),
    "gate-run corpus": (lambda w, bad: ["gate-run", str(bad), "--cases", str(w / "cases.jsonl"), "--out",
                                        str(w / "gate"), "--embedder", "hash", "--store", str(w / "store.db")],
                        ".jsonl", EXPECT_CORPUS),
    "feedback import": (lambda w, bad: ["feedback", "import", str(bad), "--store", str(w / "store.db")],
                        ".jsonl", EXPECT),
}


@pytest.mark.parametrize("kind", list(EXPECT))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_file_exits_2_with_one_clear_message(work: Path, command: str, kind: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    build, suffix, expect = COMMANDS[command]
    bad = bad_file(work, kind, suffix)
    with pytest.raises(SystemExit) as exit_info:
        main(build(work, bad))
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert exit_info.value.code == 2, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    assert bad.name in errors[0]
    assert re.search(expect[kind], " ".join(output.split())), output


# Every other argument that names a file to read, with the two mistakes most often made with it.
MORE: dict[str, Callable[[Path, Path], list[str]]] = {
    "import --corpus": lambda w, bad: ["import", "hotpotqa", str(DATA / "hotpotqa_dev_slice.json"), "--corpus",
                                       str(bad), "--out", str(w / "imp2")],
    "chain-eval": lambda w, bad: ["chain-eval", str(w / "cases.jsonl"), str(bad)],
    "compare": lambda w, bad: ["compare", str(w / "traces.jsonl"), str(bad), "--cases", str(w / "cases.jsonl")],
    "release --policy": lambda w, bad: ["release", str(w / "cases.jsonl"), str(w / "traces.jsonl"), "--policy",
                                        str(bad)],
    "export-trec": lambda w, bad: ["export-trec", str(bad), str(w / "traces.jsonl"), "--qrels", str(w / "q.txt"),
                                   "--run", str(w / "r.txt")],
    "split": lambda w, bad: ["split", str(bad), "--out", str(w / "split")],
    "leakage": lambda w, bad: ["leakage", str(w / "cases.jsonl"), str(bad)],
    "trec-eval qrels": lambda w, bad: ["trec-eval", str(bad), str(w / "traces.jsonl")],
    "gate-run --feedback": lambda w, bad: ["gate-run", str(w / "corpus.jsonl"), "--cases", str(w / "cases.jsonl"),
                                           "--out", str(w / "gate2"), "--embedder", "hash", "--feedback", str(bad),
                                           "--store", str(w / "store2.db")],
}


@pytest.mark.parametrize("kind", ["latin1", "directory"])
@pytest.mark.parametrize("command", list(MORE))
def test_every_other_file_argument(work: Path, command: str, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    bad = bad_file(work, kind, ".yaml" if "policy" in command else ".jsonl" if "trec" not in command else ".txt")
    with pytest.raises(SystemExit) as exit_info:
        main(MORE[command](work, bad))
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert exit_info.value.code == 2, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and bad.name in errors[0], output
    assert re.search(EXPECT[kind], " ".join(output.split())), output


@pytest.mark.parametrize("argv", [["search", "{f}", "q"], ["ask", "{f}", "a question"],
                                  ["run", "{f}", "{cases}", "--out", "{out}"]])
def test_a_file_given_as_the_index(work: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    values = {"f": str(work / "corpus.jsonl"), "cases": str(work / "cases.jsonl"), "out": str(work / "t2.jsonl")}
    with pytest.raises(SystemExit) as exit_info:
        main([a.format(**values) for a in argv])
    output = " ".join((capsys.readouterr().err).split())
    assert exit_info.value.code == 2
    assert "corpus.jsonl: is a file, not an index directory. Fix: pass the directory `hoprag index` wrote" in output
