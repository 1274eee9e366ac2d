"""Search an index as of a date: the documents valid then, ranked exactly as a rebuild of them ranks.

``hoprag search|ask|run INDEX … --as-of DATE`` call :func:`open_as_of`. The **snapshot** at an instant
is every document valid then (:mod:`hoprag.index.valid_time`): the index's current documents whose
valid time holds it, in index order, then the versions updates replaced or deleted whose valid time
holds it (:mod:`hoprag.index.history`), in the order they were retired. Each new version ends the
one before it, so an id has one version valid at a time; where versions given out of time order (a
backdated correction) overlap, the latest given counts.

When the snapshot is the whole current index, the current index is searched. Otherwise the snapshot's
documents are built into an index of their own with the index's own options (chunking, BM25,
analyser, graph, dense model): a rebuild of the snapshot, so its results are exactly a rebuild's.
That build is cached under ``snapshots/<hash>/`` in the index directory, keyed by the snapshot's
records and the index's config hash, so later searches as of any date with the same documents open
it at once; the first costs a build of the snapshot's documents (``hoprag index`` of them), and the
last eight snapshots are kept. An update replaces the index directory and so drops the cache.

A **replay** (``axis="recorded"``: a ``run`` whose cases name a ``corpus_snapshot`` with a date,
:func:`hoprag.commands.index_as_of`) selects instead the documents the index *held* at the instant:
those the build gave, or an update added before it, and not yet replaced or deleted by then — the
corpus the cases were written against, superseded documents it carries included. An index never
updated is, at every instant, its own replay.

The caller's clearance applies to a snapshot as to the current index: its documents keep their own
``acl`` classes. Without ``--as-of`` nothing here runs: a search reads the current index, every
document it holds whatever its dates. A PostgreSQL index keeps no history and is refused.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import numpy as np

from hoprag.errors import ConfigError, IndexLoadError, InputError
from hoprag.index.contract import Index
from hoprag.index.corpus_db import DB_FILE
from hoprag.index.history import Version, arrivals, read_versions
from hoprag.index.manifest import MANIFEST, IndexManifest, config_hash
from hoprag.index.pg_schema import is_pg_url
from hoprag.index.valid_time import own_interval, show
from hoprag.records import Document

__all__ = ["SNAPSHOTS_DIR", "Snapshot", "open_as_of", "snapshot_at"]

SNAPSHOTS_DIR = "snapshots"
#: valid: the documents in force at the instant (--as-of); recorded: those the index held then (a replay)
Axis = Literal["valid", "recorded"]
_KEEP = 8


@dataclass(frozen=True)
class Snapshot:
    """The documents valid at ``at``: a mask over the current documents and the retired versions."""

    at: datetime
    current: np.ndarray
    versions: tuple[Version, ...]
    #: the earliest instant any document of the index (or its history) is valid from; None: from the start
    first: datetime | None

    @property
    def count(self) -> int:
        return int(self.current.sum()) + len(self.versions)

    @property
    def whole(self) -> bool:
        """Whether the snapshot is exactly the current index."""
        return not self.versions and bool(self.current.all())


def snapshot_at(directory: Path, at: datetime, *, axis: Axis = "valid") -> Snapshot:
    """Which documents of the index at ``directory`` (current and retired) are in the snapshot at ``at``:
    those valid then (``axis="valid"``), or those the index held then (``"recorded"``: received by the
    build or an update before ``at``, not yet replaced or deleted)."""
    arrived = arrivals(directory)
    starts: list[datetime | None] = []
    chosen: list[bool] = []
    taken: set[str] = set()
    try:
        conn = sqlite3.connect(f"file:{directory / DB_FILE}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT id, timestamp, json_extract(record, '$.metadata.valid_from'), "
                "json_extract(record, '$.metadata.effective_date'), json_extract(record, '$.metadata.valid_until') "
                "FROM documents ORDER BY pos")
            for doc_id, timestamp, valid_from, effective, until in rows:
                if axis == "recorded":
                    start, end = arrived.get(doc_id), None
                else:
                    metadata = {"valid_from": valid_from, "effective_date": effective, "valid_until": until}
                    start, end = own_interval(timestamp, metadata)
                    start = start or arrived.get(doc_id)
                starts.append(start)
                chosen.append((start is None or start <= at) and (end is None or at < end))
                if chosen[-1]:
                    taken.add(doc_id)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise IndexLoadError(f"{directory}: {DB_FILE} unreadable ({exc}). Fix: rebuild the index with "
                             f"`hoprag index CORPUS --out {directory}`") from None
    history = read_versions(directory)
    starts.extend((v.arrived if axis == "recorded" else v.start) for v in history)
    first = None if any(s is None for s in starts) else min((s for s in starts if s is not None), default=None)
    # a version given out of time order (a backdated correction) could overlap an older one: an id is in
    # a snapshot once, in its latest version valid then (the current one first, then the latest retired)
    latest: dict[str, Version] = {}
    for version in history:
        if (version.held_at if axis == "recorded" else version.valid_at)(at) and version.id not in taken:
            latest[version.id] = version
    return Snapshot(at=at, current=np.asarray(chosen, dtype=bool),
                    versions=tuple(sorted(latest.values(), key=lambda v: v.seq)), first=first)


def open_as_of(target: str | os.PathLike[str], at: datetime, *, axis: Axis = "valid",
               on_build: Callable[[Snapshot, Path], None] | None = None) -> tuple[Index, str]:
    """``(index, location)`` of the snapshot of the index at ``target`` valid at ``at``: the current
    index when nothing differs, else the cached build of the snapshot (built first, ``on_build`` told,
    when not cached). ``location`` opens the same index in another process (a Ray worker)."""
    from hoprag.index.store import load_index

    text = os.fspath(target)
    if is_pg_url(text):
        raise ConfigError("--as-of reads the versions a local index keeps, and a PostgreSQL index keeps none. "
                          "Fix: search a local index (`hoprag index CORPUS --out DIR`, updated with --update), "
                          "or leave --as-of out")
    directory = Path(text)
    index = load_index(directory)  # says what is wrong with the directory, with the fix
    snapshot = snapshot_at(directory, at, axis=axis)
    if snapshot.count == 0:
        since = f" (the earliest document is valid from {show(snapshot.first)})" if snapshot.first else ""
        raise InputError(f"no documents valid at {show(at)}{since}", source=str(directory),
                         fix="pass a later --as-of date, or leave --as-of out to search the current index")
    if snapshot.whole:
        return index, str(directory.resolve())
    cache = _cached(directory, index.manifest, snapshot, on_build)
    return load_index(cache), str(cache.resolve())


def _records(directory: Path, snapshot: Snapshot) -> Iterator[str]:
    """The canonical records of the snapshot's documents, in its order."""
    conn = sqlite3.connect(f"file:{directory / DB_FILE}?mode=ro", uri=True)
    try:
        keep = snapshot.current.tolist()
        for pos, record in conn.execute("SELECT pos, record FROM documents ORDER BY pos"):
            if keep[pos]:
                yield record
    finally:
        conn.close()
    for version in snapshot.versions:
        yield version.record


def _cached(directory: Path, manifest: IndexManifest, snapshot: Snapshot,
            on_build: Callable[[Snapshot, Path], None] | None) -> Path:
    from hoprag.index.store import build_index, load_index

    digest = hashlib.sha256(config_hash(manifest.config).encode("ascii"))
    for record in _records(directory, snapshot):
        digest.update(record.encode("utf-8"))
        digest.update(b"\n")
    cache = directory / SNAPSHOTS_DIR / digest.hexdigest()[:20]
    if (cache / MANIFEST).is_file():
        try:
            load_index(cache)
            os.utime(cache)  # most recently used: kept longest
            return cache
        except IndexLoadError:
            pass  # a damaged cache is built again
    if on_build is not None:
        on_build(snapshot, cache)
    documents = (Document.from_dict(json.loads(record)) for record in _records(directory, snapshot))
    try:
        build_index(documents, cache, manifest.config)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        raise InputError("cannot write the snapshot's index into the index directory", source=str(directory),
                         fix="make the index directory writable (the snapshot is cached under "
                             f"{SNAPSHOTS_DIR}/ there), or search a writable copy of it") from None
    _prune(directory / SNAPSHOTS_DIR, keep=cache)
    return cache


def _prune(root: Path, *, keep: Path) -> None:
    """Drop all but the :data:`_KEEP` most recently used snapshots (never ``keep``)."""
    built = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    for old in built[_KEEP:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)
