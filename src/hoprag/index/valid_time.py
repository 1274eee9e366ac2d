"""When a document is valid: the instants ``--as-of`` compares, read from dates as users write them.

A document's **valid time** is the half-open interval ``[start, until)`` during which it is the text in
force (:mod:`hoprag.index.snapshots` selects the documents valid at an instant):

- ``start``: the document's own ``metadata.valid_from``, else ``metadata.effective_date``, else its
  ``timestamp`` (the first of them that reads as a date); a document without any is valid from the
  beginning — or, when an update added it, from the time of that update (:mod:`hoprag.index.history`);
- ``until``: its own ``metadata.valid_until`` (a date is inclusive: the document is valid through that
  day), else open; an update that replaces or deletes it ends it earlier
  (:mod:`hoprag.index.history`).

Contract terms (``term_start``/``term_end``) are what a contract says, not when the document holds,
and are not read. A field that does not read as a date is skipped, as if absent.

Dates are ISO dates (``2025-06-30``) or date-times (``2025-06-30T12:00:00Z``, ``+02:00`` offsets); a
date means its first instant, 00:00 UTC, and a date-time without an offset is UTC.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from hoprag.errors import ConfigError

__all__ = ["own_interval", "parse_as_of", "parse_instant", "show", "snapshot_date", "to_text"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_IN_ID = re.compile(r"(\d{4}-\d{2}-\d{2})(?!.*\d{4}-\d{2}-\d{2})")
_AS_OF_FIX = "give an ISO date (2025-06-30) or date and time (2025-06-30T12:00:00Z) to --as-of"


def parse_instant(text: Any, *, end_of_day: bool = False) -> datetime | None:
    """The UTC instant ``text`` names (a date: 00:00 of that day, or of the next with ``end_of_day``);
    ``None`` when it is not an ISO date or date-time."""
    if not isinstance(text, str) or not text.strip():
        return None
    value = text.strip()
    try:
        if _DATE.match(value):
            day = date.fromisoformat(value) + (timedelta(days=1) if end_of_day else timedelta())
            return datetime.combine(day, time(), tzinfo=timezone.utc)
        moment = datetime.fromisoformat(value)
    except (ValueError, OverflowError):
        return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def parse_as_of(text: str, *, flag: str = "--as-of") -> datetime:
    """The instant an ``--as-of`` value names, or one message with the fix."""
    moment = parse_instant(text)
    if moment is None:
        raise ConfigError(f"{flag} '{text}' is not a date. Fix: {_AS_OF_FIX}")
    return moment


def own_interval(timestamp: Any, metadata: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    """``(start, until)`` from a document's own fields (``None``: open at that end)."""
    start = None
    for value in (metadata.get("valid_from"), metadata.get("effective_date"), timestamp):
        start = parse_instant(value)
        if start is not None:
            break
    return start, parse_instant(metadata.get("valid_until"), end_of_day=True)


def snapshot_date(snapshot_id: str) -> datetime | None:
    """The date a corpus snapshot's name ends with (``kestrel-docs-2026-06-30`` → 2026-06-30), if any."""
    found = _IN_ID.search(snapshot_id or "")
    return parse_instant(found.group(1)) if found else None


def to_text(moment: datetime) -> str:
    """The stored form of an instant: ISO 8601 in UTC, sortable as text."""
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def show(moment: datetime) -> str:
    """An instant as a message shows it: the date alone when it is a day's first instant."""
    moment = moment.astimezone(timezone.utc)
    return moment.date().isoformat() if moment.time() == time() else to_text(moment)
