"""Text from the corpus or the user that looks like rich markup ("[/]", "[red]") is printed as it
is: never parsed as a style, never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOCS = [
    {"id": "brackets", "title": "Array [/] notation",
     "text": "The [/bold] tag and [red]colour[/red] codes appear in the Zephyr manual, which Ada Quill wrote."},
    {"id": "quill", "title": "Ada Quill", "text": "Ada Quill was born in [Lisbon] in 1901 and wrote the Zephyr manual."},
]


def hoprag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoprag.cli", *args], capture_output=True, text=True,
                          env={"COLUMNS": "200", "PATH": ""}, timeout=120)


def test_markup_like_text_in_documents_and_questions_is_printed_verbatim(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    built = hoprag("index", str(corpus), "--out", str(tmp_path / "ix"), "--quiet")
    assert built.returncode == 0, built.stderr
    found = hoprag("search", str(tmp_path / "ix"), "[/] Zephyr manual [red]")
    assert found.returncode == 0, found.stderr
    assert "Array [/] notation" in found.stdout and "[red]colour[/red]" in found.stdout
    asked = hoprag("ask", str(tmp_path / "ix"), "Where was the [/bold] writer of the Zephyr manual born?")
    assert asked.returncode == 0, asked.stderr
    assert "Traceback" not in asked.stderr and "[/bold] writer" in asked.stderr  # the progress lines quote it
    assert "[/bold] tag" in asked.stdout or "[Lisbon]" in asked.stdout  # evidence text shown as written
