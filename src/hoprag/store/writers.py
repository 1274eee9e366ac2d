"""Who writes a run, and whether that writer is still alive.

A run is created ``running`` with its writer, ``host:pid:start`` (``start`` is the process start
time in clock ticks where the OS tells it, so a recycled pid is not mistaken for the writer). A
``running`` run whose writer process is gone is *incomplete*: it will never be finished. A writer
on another host cannot be checked from here and counts as alive.
"""

from __future__ import annotations

import os
import socket

__all__ = ["current_writer", "writer_gone"]


def _stat_fields(pid: int) -> list[str]:
    """Fields 3… of ``/proc/PID/stat`` (Linux); empty where the OS does not tell."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return []
    # the command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'
    return stat[stat.rfind(")") + 2:].split()


def _process_start(pid: int) -> str | None:
    """The process start time in clock ticks since boot (field 22), or None where unknown."""
    fields = _stat_fields(pid)
    return fields[19] if len(fields) > 19 else None


def current_writer() -> str:
    """This process as a writer: ``host:pid:start``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start(pid) or ''}"


def writer_gone(writer: str | None) -> bool:
    """True only when it is certain: the writer ran on this host and its process no longer runs."""
    if not writer or os.name != "posix":  # os.kill(pid, 0) would terminate a process on Windows
        return False
    host, _, rest = writer.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process with that pid: alive, but is it ours?
        pass
    except OSError:
        return False
    fields = _stat_fields(pid)
    if fields and fields[0] == "Z":  # exited, not yet reaped by its parent
        return True
    now = _process_start(pid)
    return bool(start and now and now != start)
