"""Bad values for the label, leakage and alias options end in one clear message, never a traceback."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from hoprag.cli import main

pytestmark = pytest.mark.unit
ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("label-cli")
    shutil.copy(ROOT / "data" / "enterprise" / "cases.jsonl", root / "cases.jsonl")
    shutil.copy(ROOT / "data" / "enterprise" / "corpus.jsonl", root / "corpus.jsonl")
    shutil.copy(ROOT / "tests" / "data" / "2wiki_dev_slice.json", root / "wiki.json")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (root / "not-json.jsonl").write_text("this is not json\n", encoding="utf-8")
    (root / "traces.jsonl").write_text('{"case_id": "ent-001", "question": "q"}\n', encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "cases.jsonl", "corpus.jsonl", "--span-match", "fuzzy"],
        ["audit", "binary.bin", "corpus.jsonl"],
        ["eval", "cases.jsonl", "traces.jsonl", "--corpus", "binary.bin"],
        ["eval", "cases.jsonl", "traces.jsonl", "--corpus", "corpus.jsonl", "--span-match", "loose"],
        ["chain-eval", "cases.jsonl", "traces.jsonl", "--corpus", "missing.jsonl"],
        ["leakage", "cases.jsonl", "cases.jsonl", "--evidence-threshold", "0"],
        ["leakage", "cases.jsonl", "cases.jsonl", "--paraphrase-threshold", "1.5"],
        ["import", "hotpotqa", "wiki.json", "--out", "imp", "--aliases", "not-json.jsonl"],
        ["import", "2wiki", "wiki.json", "--out", "imp", "--aliases", "missing.jsonl"],
        ["import", "2wiki", "wiki.json", "--out", "imp", "--aliases", "not-json.jsonl"],
        ["import", "2wiki", "wiki.json", "--out", "imp", "--aliases", "binary.bin"],
    ],
)
def test_bad_values_are_refused_cleanly(work: Path, argv: list[str], capsys, monkeypatch) -> None:
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "argv", ["hoprag", *argv])
    with pytest.raises(SystemExit) as exit_info:
        main()
    text = capsys.readouterr()
    assert exit_info.value.code == 2, text
    assert "Traceback" not in text.out + text.err
