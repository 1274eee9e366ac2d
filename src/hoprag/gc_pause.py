"""Reading and scoring many records with Python's cyclic garbage collector paused.

Loading 10,000 cases and traces builds millions of small containers (records, tuples, dicts, lists)
that stay alive until the evaluation ends. Each allocation burst makes the collector walk every
container the process holds, looking for reference cycles these trees of records never form: at
10,000 cases that walking was about half of ``hoprag eval``'s CPU time. Reference counting still
frees everything as usual while the collector is paused; only garbage caught in a cycle waits for
the next collection, which runs as soon as the outermost pause ends. The collector has one switch
per process, so a pause in one thread holds for all of them until it ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; a nested block, or one entered while the collector
    is already off (the caller's choice), leaves it as it found it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
