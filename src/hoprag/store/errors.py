"""The store's one error type, and how a database failure becomes a message a user can act on.

Importable without SQLAlchemy, so a missing ``hoprag[gates]`` extra is itself a clear error.
"""

from __future__ import annotations

from hoprag.errors import HopragError

__all__ = ["StoreError", "describe_failure", "first_line"]

RECOVERY = ("`hoprag runs list` shows what the store holds, runs left failed or incomplete included, and "
            "`hoprag runs rm --failed` removes those")


class StoreError(HopragError):
    """The run store cannot be reached, or it lacks what was asked for.

    ``reason`` is the database's own one-line reason when there is one; ``disconnected`` says the
    connection was lost (the write in flight was rolled back as a whole).
    """

    def __init__(self, message: str, *, reason: str | None = None, disconnected: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.disconnected = disconnected


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an error's text (a database message's first line never holds the SQL)."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]


def _action(statement: str | None) -> str:
    """What a statement was doing, from its first words: ``writing to table 'traces'``."""
    words = (statement or "").replace("\n", " ").replace('"', "").split()
    if not words:
        return "connecting"
    verb = words[0].upper()
    after = {w.upper(): i for i, w in reversed(list(enumerate(words)))}
    if verb == "INSERT" and "INTO" in after and after["INTO"] + 1 < len(words):
        return f"writing to table '{words[after['INTO'] + 1]}'"
    if verb == "UPDATE" and len(words) > 1:
        return f"updating table '{words[1]}'"
    if verb == "DELETE" and "FROM" in after and after["FROM"] + 1 < len(words):
        return f"deleting from table '{words[after['FROM'] + 1]}'"
    if verb == "SELECT" and "FROM" in after and after["FROM"] + 1 < len(words):
        return f"reading table '{words[after['FROM'] + 1].rstrip(',')}'"
    return f"running {verb}"


def describe_failure(original: BaseException, *, display_url: str, statement: str | None,
                     is_disconnect: bool, busy_timeout_s: float | None = None) -> StoreError:
    """One :class:`StoreError` for a database failure: what happened, where, and the fix."""
    reason = first_line(original)
    action = _action(statement)
    lowered = reason.lower()
    if is_disconnect:
        return StoreError(
            f"lost the connection to the run store {display_url} while {action}: {reason}. Nothing of that "
            "write was kept (each write is one transaction). Fix: check that the database server is running "
            f"and reachable (--store or HOPRAG_STORE), then run the command again; {RECOVERY}",
            reason=reason, disconnected=True)
    if "database is locked" in lowered or "database is busy" in lowered:
        waited = f" for {busy_timeout_s:g} s" if busy_timeout_s else ""
        return StoreError(
            f"the SQLite run store {display_url} stayed locked by another writer{waited} while {action}. "
            "Fix: wait for the other hoprag process to finish and run the command again, or use a "
            "PostgreSQL store (--store postgresql://…) for many concurrent writers", reason=reason)
    if statement is None or _looks_unreachable(lowered):  # no statement: it failed while connecting
        return StoreError(
            f"cannot reach the run store {display_url} while {action}: {reason}. Fix: check the URL given with "
            "--store or HOPRAG_STORE and that the database server is running and reachable; " + RECOVERY,
            reason=reason, disconnected=True)
    return StoreError(
        f"the run store {display_url} failed while {action}: {reason}. Fix: check that --store or "
        "HOPRAG_STORE points at a hoprag run store you may write to, and that the disk or server has room",
        reason=reason)


_UNREACHABLE = ("connection refused", "could not connect", "connection failed", "connection is bad",
                "server closed the connection", "no route to host", "timeout expired", "terminating connection",
                "the database system is shutting down")


def _looks_unreachable(lowered: str) -> bool:
    return any(marker in lowered for marker in _UNREACHABLE)
