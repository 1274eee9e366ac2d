"""Values derived from a case (and its trace) computed once per evaluation, not once per measure.

Every measure is a pure function of ``(case, trace, k)``, so several measures of one case derive
the same things again: the fact layers, the chains' layer sets, the facts grouped by source, the
attribution of the answer. Inside :func:`evaluation_memo` (entered by the runners), :func:`memoized`
keeps each such value for the duration of the block, keyed by the *identity* of the objects it was
derived from; each entry holds those objects, so an id cannot be reused while the block lasts.
Outside a block (a measure called on its own, another thread) every call computes afresh, so the
results never depend on whether the memo is on. Derived values are shared: callers must not mutate
them. Cases and traces are not modified while an evaluation runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_ACTIVE: ContextVar[dict[tuple[Any, ...], tuple[tuple[object, ...], Any]] | None] = ContextVar(
    "hoprag_evaluation_memo", default=None
)


@contextmanager
def evaluation_memo() -> Iterator[None]:
    """Keep derived values for the block (a nested block shares the outer one's memo)."""
    if _ACTIVE.get() is not None:
        yield
        return
    token = _ACTIVE.set({})
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def memoized(name: str, objects: tuple[object, ...], compute: Callable[[], T]) -> T:
    """``compute()`` once per ``(name, objects)`` inside :func:`evaluation_memo`, else every call."""
    memo = _ACTIVE.get()
    if memo is None:
        return compute()
    key = (name, id(objects[0])) if len(objects) == 1 else (name, *map(id, objects))
    entry = memo.get(key)
    if entry is not None:  # the entry holds its objects, so no other object can have their ids
        return entry[1]
    value = compute()
    memo[key] = (objects, value)
    return value
