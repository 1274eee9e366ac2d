"""Rich progress bars for long steps, and a no-op when output is not a terminal or quiet is set."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)


@contextmanager
def progress_bar(description: str, total: int | None = None, *, quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    """Yield ``update(done, total)``; renders a bar on stderr unless quiet."""
    if quiet:
        yield lambda done, total: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as bar:
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
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        tasks: dict[str, int] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(f"{description} · {stage}", total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update
