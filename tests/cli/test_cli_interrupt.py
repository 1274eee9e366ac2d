"""Ctrl-C inside a command: one line saying what happened and what is kept, exit 130, no traceback
(typer turns the interrupt into a silent return code; the boundary must still say it)."""

from __future__ import annotations

import pytest
import typer

from hoprag.cli_boundary import INTERRUPTED, run_app

pytestmark = pytest.mark.unit


def test_an_interrupted_command_says_so_and_exits_130(capsys) -> None:
    app = typer.Typer()

    @app.command()
    def work() -> None:
        raise KeyboardInterrupt

    @app.command()
    def other() -> None:
        pass

    with pytest.raises(SystemExit) as stopped:
        run_app(app, ["work"])
    assert stopped.value.code == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err
    assert INTERRUPTED.startswith("interrupted; what was written so far is kept")
