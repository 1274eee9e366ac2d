"""Write a directory beside its target and swap it into place once it is complete.

:func:`build_index` writes into ``.<name>.building-<pid>-<id>`` next to ``<name>``; only a finished
build is renamed onto the target, so a build killed at any point leaves the previous index as it
was. An existing target is replaced by an atomic exchange of the two directories where the kernel
offers one (Linux ``renameat2(RENAME_EXCHANGE)``), otherwise by two renames. Staging directories
left by killed builds are removed by the next build of the same target.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import uuid
from pathlib import Path

from hoprag.errors import InputError

__all__ = ["check_target", "commit", "discard", "open_stage"]

_BUILDING = "building"
_REPLACED = "replaced"


def _sibling(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _is_index(directory: Path, manifest: str) -> bool:
    try:
        data = json.loads((directory / manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "artifact_id" in data and "config_hash" in data


def check_target(target: Path, *, manifest: str, own_files: frozenset[str]) -> None:
    """Refuse a target that is a file, or a non-empty directory that is not an index (replacing it
    would delete what it holds)."""
    if target.exists() and not target.is_dir():
        raise InputError(
            "the index output is an existing file, and an index is a directory", source=str(target),
            fix="pass a directory path to --out (a new one, or an existing index to rebuild)",
        )
    if not target.is_dir() or _is_index(target, manifest):
        return
    foreign = sorted(p.name for p in target.iterdir() if p.name not in own_files)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", …" if len(foreign) > 3 else "")
        raise InputError(
            f"the index output is a directory that holds other files ({shown}), not an index; building "
            "there would replace them", source=str(target),
            fix="pass a new or empty directory to --out, or an existing index directory to rebuild",
        )


def open_stage(target: Path) -> Path:
    """Clean up after killed builds of ``target``, then create and return a fresh staging directory."""
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(target)
    stage = _sibling(target, _BUILDING)
    stage.mkdir()
    return stage


def discard(stage: Path) -> None:
    shutil.rmtree(stage, ignore_errors=True)


def commit(stage: Path, target: Path) -> None:
    """Put the complete ``stage`` at ``target``; a previous ``target`` is replaced, then removed."""
    if not target.exists():
        os.rename(stage, target)
        return
    if _exchange(stage, target):
        discard(stage)  # now holds the previous index
        return
    old = _sibling(target, _REPLACED)
    os.rename(target, old)
    os.rename(stage, target)
    shutil.rmtree(old, ignore_errors=True)


_PATTERN = r"^\.{name}\.({building}|{replaced})-(\d+)-[0-9a-f]+$"


def clean_stale(target: Path) -> list[Path]:
    """Remove staging directories of ``target`` whose process is gone; returns what was removed.

    A previous index caught between the two renames of a fallback swap is put back first."""
    pattern = re.compile(_PATTERN.format(name=re.escape(target.name), building=_BUILDING, replaced=_REPLACED))
    removed: list[Path] = []
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return removed
    for path in siblings:
        match = pattern.match(path.name)
        if not match or not path.is_dir() or _alive(int(match.group(2))):
            continue
        if match.group(1) == _REPLACED and not target.exists():
            os.rename(path, target)
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another build in this process (a failed one removes its own stage)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux ``renameat2``); ``False`` where that is not offered."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(b))
