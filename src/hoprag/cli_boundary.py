"""The command line's one error boundary: every way a command can end becomes an exit code and at
most one message, never a traceback (unless ``--debug`` or ``HOPRAG_DEBUG=1`` asks for it)."""

from __future__ import annotations

import os
import re
import sys

import typer
from rich.console import Console

from hoprag.errors import HopragError

__all__ = ["DEBUG_ENV", "RESUMING", "interrupted_message", "run_app"]

err = Console(stderr=True)


def _expand_variadic_k(argv: list[str]) -> list[str]:
    """Let ``--cutoff 2 5 10`` mean ``--cutoff 2 --cutoff 5 --cutoff 10`` (and accept ``--cutoff 2,5,10``);
    the same for ``--k``."""
    expanded: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in ("--k", "--cutoff") and i + 1 < len(argv):
            i += 1
            values = []
            while i < len(argv) and re.fullmatch(r"\d+(,\d+)*", argv[i]):
                values.extend(argv[i].split(","))
                i += 1
            if not values:
                expanded.append(token)
                continue
            for value in values:
                expanded.extend([token, value])
            continue
        expanded.append(token)
        i += 1
    return expanded


DEBUG_ENV = "HOPRAG_DEBUG"


def _debug_requested(argv: list[str]) -> tuple[bool, list[str]]:
    """``--debug`` anywhere before ``--`` (or ``HOPRAG_DEBUG=1``) lets tracebacks through."""
    cut = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:cut]
    if debug:
        argv = [a for a in argv[:cut] if a != "--debug"] + argv[cut:]
    env = os.environ.get(DEBUG_ENV, "").strip().lower()
    return debug or env in ("1", "true", "yes", "on"), argv


def _command_name(argv: list[str], app: typer.Typer | None = None) -> str:
    """``hoprag run`` or, for a command of a group, ``hoprag feedback import``."""
    groups = {g.name for g in app.registered_groups} if app is not None else {"feedback", "runs", "judge"}
    words = [a for a in argv if not a.startswith("-")][:2]
    if len(words) == 2 and words[0] not in groups:
        words = words[:1]
    return "hoprag " + " ".join(words) if words else "hoprag"


def _usage_error_types() -> tuple[type[BaseException], ...]:
    """typer raises its own vendored click's exceptions; a plain click may be installed beside it."""
    types: list[type[BaseException]] = []
    try:
        from typer._click.exceptions import ClickException as VendoredClickException

        types.append(VendoredClickException)
    except ImportError:  # an older typer runs on the real click
        pass
    try:
        import click

        types.append(click.ClickException)
    except ImportError:
        pass
    return tuple(types)


def _exit_types() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    exits: list[type[BaseException]] = [typer.Exit]
    aborts: list[type[BaseException]] = [typer.Abort]
    # only code that imported a plain click can raise its exceptions: asked when one is raised, so a
    # command that never loads click does not pay for its import at start
    click = sys.modules.get("click")
    if click is not None:
        exits.append(click.exceptions.Exit)
        aborts.append(click.exceptions.Abort)
    return tuple(exits), tuple(aborts)


#: commands that pick up where an interrupted run of theirs stopped, and what they keep
RESUMING = {"hoprag run": "the traces written so far are kept in --out"}


def interrupted_message(command: str) -> str:
    """What Ctrl-C inside ``command`` (``"hoprag eval"``) leaves, and a resume promised only where it holds."""
    if command in RESUMING:
        return (f"`{command}` interrupted; {RESUMING[command]}. "
                "Fix: run the same command again: it resumes where it stopped")
    return (f"`{command}` interrupted before it finished. "
            "Fix: run the same command again; it starts over (it does not resume)")



def _fail(message: str, code: int) -> None:
    from rich.markup import escape

    from hoprag.security.boundary import shown

    # escaped: a fix such as pip install 'hoprag[dense]' must not be read as rich markup; every
    # message passes the redaction boundary: a password in a URL it quotes is never printed
    err.print(f"[red]error:[/] {escape(shown(message, 'cli-error'))}", soft_wrap=True)
    raise SystemExit(code)


def _validation_message(exc: Exception) -> str:
    """One line for a pydantic ValidationError: each field, what was wrong with it, the fix
    (:mod:`hoprag.validation_messages`, the translator every reader uses)."""
    from hoprag.validation_messages import describe

    message, fix = describe(exc, what="setting", fix="pass a value in the allowed range (see --help)")
    return f"{message}. Fix: {fix}"


def _plain_usage(exc: BaseException) -> None:
    """A usage error whose value failed typer's pydantic coercion says so in plain words, with the fix
    (click's usage line and "Invalid value for '--k':" stay as they are)."""
    from hoprag.validation_messages import is_validation_error, problems

    cause = exc.__cause__
    if cause is None or not is_validation_error(cause) or not hasattr(exc, "message"):
        return
    found = problems(cause, fix="see the option in --help")
    if found:
        exc.message = f"{found[0].wrong}. Fix: {found[0].fix}"  # type: ignore[attr-defined]


def _options_of(app: typer.Typer, command: str) -> set[str]:
    """The option names (``--out``) of ``command`` (``"hoprag feedback import"``); empty when unknown."""
    try:
        from typer.main import get_command

        found = get_command(app)
        for word in command.split()[1:]:
            found = found.commands[word]  # type: ignore[attr-defined]
        return {opt for param in found.params for opt in getattr(param, "opts", ())}
    except Exception:  # only a message depends on it: never let it hide the error being reported
        return set()


def _with_fix(message: str, command: str) -> str:
    """``message`` with a fix: a refusal whose own words give none points at the command's --help,
    which lists every option and its valid values (the house rule: every message ends with the fix)."""
    if "Fix:" in message or "fix:" in message:
        return message
    return f"{message.rstrip().rstrip('.')}. Fix: see `{command} --help` for the values it takes"


def _disk_full_line(exc: BaseException, app: typer.Typer, args: list[str]) -> str | None:
    """The one message for a full disk anywhere in ``exc``'s chain (:mod:`hoprag.disk_full`), else None."""
    from hoprag.disk_full import disk_full, disk_full_message

    if disk_full(exc) is None:
        return None
    options = _options_of(app, _command_name(args, app))
    flag = next((f for f in ("--out", "--store") if f in options), None)
    return disk_full_message(exc, out_flag=flag)


def run_app(app: typer.Typer, argv: list[str] | None = None) -> None:
    """Run ``app`` on ``argv`` (default: the process's arguments) inside the CLI's one error boundary.

    Usage errors print click's usage line and exit 2; a :class:`HopragError` prints its message
    (what was wrong, the fix) and exits 2, or with the error's own ``exit_code`` (3: a run left error
    traces); anything unexpected prints one line naming the command and exits 1, with the traceback
    only under ``--debug`` or ``HOPRAG_DEBUG=1``.
    """
    debug, args = _debug_requested(list(sys.argv[1:] if argv is None else argv))
    args = _expand_variadic_k(args)
    from hoprag.commands import old_spelling

    args = old_spelling(args)
    try:
        code = app(args=args, standalone_mode=False, prog_name="hoprag")
    except HopragError as exc:
        if debug:
            raise
        full = _disk_full_line(exc, app, args)
        if full:
            _fail(full, 2)
        _fail(_with_fix(str(exc), _command_name(args, app)), int(getattr(exc, "exit_code", 2)))
    except _exit_types()[0] as exc:
        raise SystemExit(getattr(exc, "exit_code", 0)) from None
    except _exit_types()[1]:
        _fail("aborted", 1)
    except KeyboardInterrupt:
        _fail(interrupted_message(_command_name(args, app)), 130)
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): nothing left to tell anyone
        sys.stderr.close()
        raise SystemExit(141) from None
    except _usage_error_types() as exc:
        _plain_usage(exc)
        exc.show()  # type: ignore[attr-defined]
        raise SystemExit(getattr(exc, "exit_code", 2)) from None
    except Exception as exc:
        if debug:
            raise
        full = _disk_full_line(exc, app, args)
        if full:
            _fail(full, 2)
        if type(exc).__name__ == "ValidationError" and type(exc).__module__.startswith("pydantic"):
            _fail(_validation_message(exc), 2)
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)):
            where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
            _fail(f"{exc.strerror or type(exc).__name__}:{where}. Fix: check the path and its permissions", 2)
        if isinstance(exc, OSError) and exc.errno is not None:
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            _fail(f"{exc.strerror or exc}{where}. Fix: check the disk, the path and its permissions", 2)
        detail = " ".join(str(exc).split())[:300]
        _fail(
            f"`{_command_name(args, app)}` failed unexpectedly ({type(exc).__name__}: {detail}). "
            f"Re-run with --debug (or {DEBUG_ENV}=1) to see the traceback, and report it",
            1,
        )
    if code == 130:  # typer turns Ctrl-C inside a command into this return code, silently
        _fail(interrupted_message(_command_name(args, app)), 130)
    if isinstance(code, int) and code:
        raise SystemExit(code)
