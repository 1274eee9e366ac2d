"""How many CPU cores this process may use: the one count every parallel part sizes itself by."""

from __future__ import annotations

import os

__all__ = ["available_cores"]


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)
