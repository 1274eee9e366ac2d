"""``hoprag ARGV`` in the test's own process, through the console entry point and its one error boundary
(:mod:`hoprag.cli_boundary`): the exit code, stdout and stderr, as a user's shell would see them."""

from __future__ import annotations

import signal

from hoprag.cli import main


def run_hoprag(argv: list[str], capsys, *, timeout: int | None = None) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``hoprag ARGV``; with ``timeout`` a command that blocks longer
    fails the test (TimeoutError) instead of hanging the suite."""

    def too_slow(*_):
        raise TimeoutError(f"{argv} blocked for {timeout} s")

    previous = signal.signal(signal.SIGALRM, too_slow) if timeout else None
    if timeout:
        signal.alarm(timeout)
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        if timeout:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_cli(argv: list[str], capsys, *, timeout: int | None = None) -> tuple[int, str]:
    """Exit code and everything printed (stdout, then stderr) of ``hoprag ARGV``."""
    code, out, err = run_hoprag(argv, capsys, timeout=timeout)
    return code, out + err
