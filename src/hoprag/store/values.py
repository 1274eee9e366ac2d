"""Values as the store writes and reads them: UTC datetimes, JSON both back-ends accept."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import numpy as np

__all__ = ["json_safe", "utc"]


def utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive value (SQLite drops the zone) is read as UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def json_safe(value: Any) -> Any:
    """JSON that PostgreSQL accepts: non-finite floats become strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        return json_safe(value.item())
    return value
