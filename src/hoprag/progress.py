"""Rich progress bars for long steps, and a no-op when output is not a terminal or quiet is set."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress

console = Console(stderr=True)


def _bar(**options: bool) -> Progress:
    """rich's bar (description, bar, done/total, time), imported when one is shown: a quiet run does
    not load rich.progress."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, **options)


@contextmanager
def progress_bar(description: str, total: int | None = None, *, quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    """Yield ``update(done, total)``; renders a bar on stderr unless quiet."""
    if quiet:
        yield lambda done, total: None
        return
    with _bar(transient=False) as bar:
        task = bar.add_task(description, total=total)

        def update(done: int, total_now: int) -> None:
            bar.update(task, completed=done, total=total_now)

        yield update


@contextmanager
def staged_progress(description: str, *, quiet: bool = False) -> Iterator[Callable[[str, int, int], None]]:
    """Yield ``update(stage, done, total)`` for builders that report named stages."""
    if quiet:
        yield lambda stage, done, total: None
        return
    with _bar() as bar:
        tasks: dict[str, int] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(f"{description} · {stage}", total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update
