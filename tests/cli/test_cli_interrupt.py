"""Ctrl-C inside a command: one line saying what happened and what is kept, exit 130, no traceback
(typer turns the interrupt into a silent return code; the boundary must still say it)."""

from __future__ import annotations

import pytest
import typer

from hoprag.cli_boundary import RESUMING, interrupted_message, run_app

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
    # `work` does not resume: the line names it and promises no resume
    assert "`hoprag work` interrupted before it finished" in err and "resumes" not in err
    assert "Fix: run the same command again; it starts over" in " ".join(err.split())


@pytest.mark.parametrize("command", ["run", "index", "eval", "feedback import"])
def test_the_line_names_the_command_and_promises_a_resume_only_where_it_resumes(command, capsys) -> None:
    app = typer.Typer()
    feedback = typer.Typer()
    app.add_typer(feedback, name="feedback")

    def stop(path: str, out: str = typer.Option("", "--out")) -> None:
        raise KeyboardInterrupt

    app.command("run")(stop)
    app.command("index")(stop)
    app.command("eval")(stop)
    feedback.command("import")(stop)
    with pytest.raises(SystemExit) as stopped:
        run_app(app, [*command.split(), "arg", "--out", "x"])
    assert stopped.value.code == 130
    err = " ".join(capsys.readouterr().err.split())
    assert f"`hoprag {command}` interrupted" in err and "Fix: run the same command again" in err
    assert ("resumes where it stopped" in err) == (f"hoprag {command}" in RESUMING)
    assert interrupted_message(f"hoprag {command}") in err
