"""Every refusal is one line in the house words: exit 2, what was wrong, "Fix:", no traceback, no pydantic.

Each row is an input a user really gives (a byte that is not UTF-8, a typo in an enum-like flag, a
NaN, an empty name, a JSON object where an id belongs, a malformed URL, an alias bomb, a manifest
of the wrong shape, an over-long question) and is run through the console entry point, so the
error boundary (:mod:`hoprag.cli_boundary`) and the translator of validation errors
(:mod:`hoprag.validation_messages`) are both on the path.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hoprag.cli import app, main
from hoprag.cli_io import command_paths

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data" / "enterprise"
PYTHON_WORDS = ("Input should be", "validation error for", "Value error,", "type=", "Traceback", "errors.pydantic.dev",
                "Field required", "Extra inputs are not permitted", "unable to parse", "UnboundLocalError",
                "failed unexpectedly")
BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + "".join(f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi")))


def _command(*words: str) -> list[str]:
    """The command's words as the CLI spells them now (``split`` may live in the ``cases`` group)."""
    paths = {path for path, _ in command_paths(app)}
    joined = " ".join(words)
    if joined in paths:
        return list(words)
    grouped = next((p for p in paths if p.endswith(" " + joined)), None)
    return grouped.split() if grouped else list(words)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    # a note before the error (a renamed command's new name) is not part of the refusal
    first = next((i for i, line in enumerate(lines) if line.startswith("error:")), 0)
    return int(stopped.value.code), lines[first:]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hoprag.index.store import build_index
    from hoprag.ingest.loaders import load_documents

    root = tmp_path_factory.mktemp("messages")
    build_index(load_documents(DATA / "corpus.jsonl"), root / "index")
    shutil.copytree(root / "index", root / "bad-index")
    manifest = json.loads((root / "bad-index" / "manifest.json").read_text(encoding="utf-8"))
    manifest["chunk_count"] = {"not": "a number"}
    (root / "bad-index" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    cases = (DATA / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    (root / "cases.jsonl").write_text("\n".join(cases[:6]) + "\n", encoding="utf-8")
    bad_case = json.loads(cases[0])
    bad_case["answers"] = "7 years"  # a string where a list belongs
    (root / "bad-cases.jsonl").write_text(json.dumps(bad_case) + "\n", encoding="utf-8")
    (root / "a-file").write_text("x", encoding="utf-8")
    (root / "feedback.jsonl").write_text(
        json.dumps({"type": "thumbs", "run_id": {"id": "r1"}, "trace_id": "t1", "value": "up"}) + "\n", encoding="utf-8")
    (root / "bomb.yaml").write_text(BOMB + "retrieve:\n  nDCG@10: {min: *i}\n", encoding="utf-8")
    (root / "policy.yaml").write_text("k: 0\nuncertain: maybe\n", encoding="utf-8")
    (root / "traces.jsonl").write_text("", encoding="utf-8")
    return root


ROWS: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "ask: a byte that is not UTF-8": (
        lambda w: ["ask", str(w / "index"), "who \udcff founded Kestrel?"], "not UTF-8 text"),
    "ask: an over-long question": (
        lambda w: ["ask", str(w / "index"), "why " * 3000], "11,999 characters long; a question may hold at most 10,000"),
    "ask: --base-url with a broken IPv6 host": (
        lambda w: ["ask", str(w / "index"), "who?", "--llm", "openai:m", "--base-url", "http://[::1/v1"],
        "--base-url 'http://[::1/v1' is not a URL that can be read"),
    "ask: --base-url without a scheme": (
        lambda w: ["ask", str(w / "index"), "who?", "--llm", "openai:m", "--base-url", "localhost:8080/v1"],
        "is not an http(s) URL"),
    "search: an enum-like typo": (
        lambda w: ["search", str(w / "index"), "who", "--mode", "dnse"], "did you mean dense?"),
    "search: a manifest of the wrong shape": (
        lambda w: ["search", str(w / "bad-index"), "who"], "unreadable manifest (invalid manifest: chunk_count: must be"),
    "demo: --out is a file": (
        lambda w: ["demo", "--out", str(w / "a-file"), "-q"], "directory"),
    "baseline: an empty --name": (
        lambda w: ["baseline", "--run", "r1", "--name", "", "--store", str(w / "store.db")], "--name is empty"),
    "feedback import: run_id given as a JSON object": (
        lambda w: ["feedback", "import", str(w / "feedback.jsonl"), "--store", str(w / "store.db")],
        "run_id must be text, got a mapping"),
    "split: a NaN ratio": (
        lambda w: [*_command("split"), str(w / "cases.jsonl"), "--ratios", "nan,0.5,0.5", "--out", str(w / "s1")],
        "ratios must be finite, non-negative and sum to 1"),
    "split: --seal names no partition": (
        lambda w: [*_command("split"), str(w / "cases.jsonl"), "--seal", "tset", "--out", str(w / "s2")],
        "did you mean test?"),
    "run: a case of the wrong shape": (
        lambda w: ["run", str(w / "index"), str(w / "bad-cases.jsonl"), "--out", str(w / "t.jsonl")],
        "must be a list (got '7 years') (field 'answers')"),
    "gate: an alias bomb in the thresholds": (
        lambda w: ["gate", "--run", "r1", "--thresholds", str(w / "bomb.yaml"), "--store", str(w / "store.db")],
        "YAML aliases (*name) are expanded"),
    "release: a policy of the wrong shape": (
        lambda w: ["release", str(w / "cases.jsonl"), str(w / "traces.jsonl"), "--policy", str(w / "policy.yaml")],
        "invalid policy"),
}


@pytest.mark.parametrize("row", sorted(ROWS))
def test_a_refusal_is_one_line_with_the_fix(row: str, work: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOPRAG_STORE", str(work / "store.db"))
    argv, words = ROWS[row]
    code, lines = _run(argv(work), capsys)
    text = " ".join(lines)
    assert code == 2, (row, lines)
    assert len(lines) == 1, (row, lines)
    assert words in text and "Fix: " in text, (row, text)
    assert not any(w in text for w in PYTHON_WORDS), (row, text)
    assert len(text) < 800, (row, len(text))


@pytest.mark.parametrize(("argv", "words"), [
    (["search", "IDX", "who", "--k", "abc"], "must be a whole number (got 'abc'). Fix: give a whole number"),
    (["search", "IDX", "who", "--k", "0"], "must be at least 1 (got '0'). Fix: give a value at least 1"),
    (["serve", "IDX", "--port", "70000"], "must be at most 65535"),
])
def test_usage_errors_keep_clicks_usage_line_in_plain_words(argv, words, work: Path, capsys) -> None:
    argv = [str(work / "index") if a == "IDX" else a for a in argv]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert stopped.value.code == 2
    assert "Usage:" in err or "Try 'hoprag" in err  # click's usage line stays
    assert words in err and not any(w in err for w in PYTHON_WORDS), err
