"""`hoprag run` over the enterprise cases writes no email address unless --no-redact is given."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).resolve().parents[2] / "data" / "enterprise"
EMAILS = sorted({m.casefold() for m in re.findall(r"[\w.+%-]+@[\w-]+(?:\.[\w-]+)+",
                                                     (ENTERPRISE / "corpus.jsonl").read_text(encoding="utf-8"))})


def hoprag(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hoprag.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_run_redacts_by_default_and_keeps_raw_text_only_with_no_redact(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hoprag.cli import app
    from hoprag.index.store import build_index
    from hoprag.ingest.loaders import load_documents

    build_index(load_documents(ENTERPRISE / "corpus.jsonl"), tmp_path / "idx")
    cases = str(ENTERPRISE / "cases.jsonl")
    done = hoprag("run", "idx", cases, "--out", "red.jsonl", "--quiet", cwd=tmp_path)  # as a user runs it
    assert done.returncode == 0, done.stderr
    result = CliRunner().invoke(app, ["run", str(tmp_path / "idx"), cases, "--out", str(tmp_path / "raw.jsonl"),
                                      "--quiet", "--no-redact"])
    assert result.exit_code == 0, result.output
    red = (tmp_path / "red.jsonl").read_text(encoding="utf-8")
    raw = (tmp_path / "raw.jsonl").read_text(encoding="utf-8")
    assert [e for e in EMAILS if e in red.casefold()] == []
    assert "legal-ops@kestrel-dynamics.example" in raw and "<EMAIL_1>" in red
    traces = [json.loads(line) for line in red.splitlines() if '"case_id"' in line]
    assert len(traces) == 16 and all(t["redacted"] for t in traces)
    assert sum(t["redactions"].get("email", 0) for t in traces) > 0


def test_help_says_what_is_redacted_and_what_is_not() -> None:
    from typer.testing import CliRunner

    from hoprag.cli import app

    def help_text(command: str) -> str:  # the help's words, without rich's box borders between wrapped lines
        output = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
        return " ".join(output.replace("│", " ").split())

    run_help, ask_help = help_text("run"), help_text("ask")
    assert "--no-redact" in run_help and "placeholders" in run_help
    assert "not redacted" in ask_help
