"""The ``hoprag`` program freezes what the command left out of the collector's reach as it ends; callers
in a process that goes on (tests, scripts) call ``main`` and keep their collector as it was."""

from __future__ import annotations

import gc
import tomllib
from pathlib import Path

import pytest

from hoprag import cli

ROOT = Path(__file__).resolve().parents[2]


def test_the_console_script_is_program() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["hoprag"] == "hoprag.cli:program"


def test_program_freezes_after_the_command_even_when_it_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append("freeze"))

    def exits(argv=None) -> None:
        frozen.append("command")
        raise SystemExit(2)

    monkeypatch.setattr(cli, "main", exits)
    with pytest.raises(SystemExit) as exc:
        cli.program()
    assert exc.value.code == 2 and frozen == ["command", "freeze"]


def test_main_leaves_the_collector_alone(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(gc, "freeze", lambda: pytest.fail("main froze the caller's objects"))
    try:
        cli.main(["--help"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    assert "Usage" in capsys.readouterr().out
