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
document it holds whatever its dates.

A PostgreSQL index keeps the same history in its schema (:mod:`hoprag.index.pg_history`), and its
snapshot is selected by the same :func:`snapshot_at` (both stores are a :class:`VersionSource`). When
the snapshot is the whole current index, PostgreSQL is searched; otherwise the snapshot is built, with
the index's own config, into a local index cached on this machine under
``$XDG_CACHE_HOME/hoprag/pg-snapshots/<index>/<hash>/`` (``~/.cache/hoprag`` without
``XDG_CACHE_HOME``; ``<index>`` hashes the server, database and index name; eight kept per index).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, urlsplit

import numpy as np

from hoprag.errors import IndexLoadError, InputError
from hoprag.index.contract import Index
from hoprag.index.corpus_db import DB_FILE
from hoprag.index.history import Version, arrivals, read_versions
from hoprag.index.manifest import MANIFEST, IndexManifest, config_hash
from hoprag.index.pg_schema import is_pg_url
from hoprag.index.valid_time import own_interval, show
from hoprag.records import Document

__all__ = ["PG_SNAPSHOTS_DIR", "SNAPSHOTS_DIR", "Snapshot", "VersionSource", "cache_root", "open_as_of", "snapshot_at"]

SNAPSHOTS_DIR = "snapshots"
#: under :func:`cache_root`: one folder per PostgreSQL index, holding its snapshots' builds
PG_SNAPSHOTS_DIR = "pg-snapshots"
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


class VersionSource(Protocol):
    """What a snapshot is selected from, whichever store keeps the index: a local directory
    (:class:`_LocalSource`) or PostgreSQL (:class:`hoprag.index.pg_history.PgHistory`)."""

    def current_fields(self) -> Iterable[tuple[Any, ...]]:
        """``(id, timestamp, valid_from, effective_date, valid_until)`` of each current document, in order."""

    def versions(self) -> list[Version]:
        """The retired versions, oldest retirement first."""

    def arrivals(self) -> dict[str, datetime]:
        """id -> when an update added the current version (ids an update added only)."""

    def current_records(self) -> Iterator[str]:
        """The canonical record of each current document, in order."""


class _LocalSource:
    """A local index directory's documents (``corpus.sqlite``) and history (``history/``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _select(self, sql: str) -> Iterator[tuple[Any, ...]]:
        try:
            conn = sqlite3.connect(f"file:{self.directory / DB_FILE}?mode=ro", uri=True)
            try:
                yield from conn.execute(sql)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise IndexLoadError(f"{self.directory}: {DB_FILE} unreadable ({exc}). Fix: rebuild the index with "
                                 f"`hoprag index CORPUS --out {self.directory}`") from None

    def current_fields(self) -> Iterator[tuple[Any, ...]]:
        return self._select("SELECT id, timestamp, json_extract(record, '$.metadata.valid_from'), "
                            "json_extract(record, '$.metadata.effective_date'), "
                            "json_extract(record, '$.metadata.valid_until') FROM documents ORDER BY pos")

    def versions(self) -> list[Version]:
        return read_versions(self.directory)

    def arrivals(self) -> dict[str, datetime]:
        return arrivals(self.directory)

    def current_records(self) -> Iterator[str]:
        return (record for (record,) in self._select("SELECT record FROM documents ORDER BY pos"))


def snapshot_at(source: Path | VersionSource, at: datetime, *, axis: Axis = "valid") -> Snapshot:
    """Which documents of an index (a local directory, or any :class:`VersionSource`), current and
    retired, are in the snapshot at ``at``: those valid then (``axis="valid"``), or those the index held
    then (``"recorded"``: received by the build or an update before ``at``, not yet replaced or
    deleted). The one selection both stores use."""
    source = _LocalSource(source) if isinstance(source, Path) else source
    arrived = source.arrivals()
    starts: list[datetime | None] = []
    chosen: list[bool] = []
    taken: set[str] = set()
    for doc_id, timestamp, valid_from, effective, until in source.current_fields():
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
    history = source.versions()
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
               on_build: Callable[[Snapshot, Path], None] | None = None, flag: str = "--as-of") -> tuple[Index, str]:
    """``(index, location)`` of the snapshot of the index at ``target`` (a directory or a PostgreSQL
    URL) valid at ``at``: the current index when nothing differs, else the cached build of the snapshot
    (built first, ``on_build`` told, when not cached). ``location`` opens the same index in another
    process (a Ray worker)."""
    from hoprag.index.store import load_index

    text = os.fspath(target)
    if is_pg_url(text):
        return _open_pg_as_of(text, at, axis, on_build, flag)
    directory = Path(text)
    index = load_index(directory)  # says what is wrong with the directory, with the fix
    source = _LocalSource(directory)
    snapshot = _nonempty(snapshot_at(source, at, axis=axis), str(directory), flag)
    if snapshot.whole:
        return index, str(directory.resolve())
    cache = _cached(directory / SNAPSHOTS_DIR, source, index.manifest, snapshot, on_build, where=str(directory),
                    fix=f"make the index directory writable (the snapshot is cached under {SNAPSHOTS_DIR}/ there), "
                        "or search a writable copy of it")
    return load_index(cache), str(cache.resolve())


def _open_pg_as_of(url: str, at: datetime, axis: Axis, on_build: Callable[[Snapshot, Path], None] | None,
                   flag: str) -> tuple[Index, str]:
    """The PostgreSQL index at ``url`` when the snapshot is all of it, else the snapshot's build, cached
    on this machine under :func:`cache_root` (keyed by the index's server, database and name)."""
    from hoprag.index.pg_history import PgHistory
    from hoprag.index.pg_store import open_pg_index
    from hoprag.index.store import load_index

    index = open_pg_index(url)
    try:
        source = PgHistory(index.pool, len(index.manifest.updates))
        try:
            source.check(at, flag)
            snapshot = _nonempty(snapshot_at(source, at, axis=axis), index.target.display, flag)
            if snapshot.whole:
                return index, url
            root = cache_root() / PG_SNAPSHOTS_DIR / _pg_identity(index.target.conninfo, index.target.name)
            cache = _cached(root, source, index.manifest, snapshot, on_build, where=index.target.display,
                            fix=f"make {root} writable, or set XDG_CACHE_HOME to a writable directory")
        finally:
            source.close()
    except BaseException:
        index.close()
        raise
    index.close()
    return load_index(cache), str(cache.resolve())


def cache_root() -> Path:
    """Where snapshots of PostgreSQL indexes are built: ``$XDG_CACHE_HOME/hoprag``, else ``~/.cache/hoprag``."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "hoprag"


def _pg_identity(conninfo: str, name: str) -> str:
    """The index's server, port, database and name, hashed (neither user nor password is part of it)."""
    parts = urlsplit(conninfo)
    server = f"{parts.hostname or ''}:{parts.port or ''}{parts.path}?{parse_qs(parts.query).get('host', [''])[0]}"
    return hashlib.sha256(f"{server}#{name}".encode("utf-8")).hexdigest()[:16]


def _nonempty(snapshot: Snapshot, where: str, flag: str) -> Snapshot:
    if snapshot.count == 0:
        since = f" (the earliest document is valid from {show(snapshot.first)})" if snapshot.first else ""
        raise InputError(f"no documents valid at {show(snapshot.at)}{since}", source=where,
                         fix=f"pass a later {flag} date, or leave {flag} out to search the current index")
    return snapshot


def _records(source: VersionSource, snapshot: Snapshot) -> Iterator[str]:
    """The canonical records of the snapshot's documents, in its order."""
    keep = snapshot.current.tolist()
    for pos, record in enumerate(source.current_records()):
        if keep[pos]:
            yield record
    for version in snapshot.versions:
        yield version.record


def _cached(root: Path, source: VersionSource, manifest: IndexManifest, snapshot: Snapshot,
            on_build: Callable[[Snapshot, Path], None] | None, *, where: str, fix: str) -> Path:
    from hoprag.index.store import build_index, load_index

    digest = hashlib.sha256(config_hash(manifest.config).encode("ascii"))
    for record in _records(source, snapshot):
        digest.update(record.encode("utf-8"))
        digest.update(b"\n")
    cache = root / digest.hexdigest()[:20]
    if (cache / MANIFEST).is_file():
        try:
            load_index(cache)
            os.utime(cache)  # most recently used: kept longest
            return cache
        except IndexLoadError:
            pass  # a damaged cache is built again
    if on_build is not None:
        on_build(snapshot, cache)
    documents = (Document.from_dict(json.loads(record)) for record in _records(source, snapshot))
    try:
        # build_index writes beside the target and renames it into place: a killed build leaves no cache entry
        build_index(documents, cache, manifest.config)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR):
            raise
        raise InputError(f"cannot write the snapshot's index in {root} ({exc.strerror})", source=where,
                         fix=fix) from None
    _prune(root, keep=cache)
    return cache


def _prune(root: Path, *, keep: Path) -> None:
    """Drop all but the :data:`_KEEP` most recently used snapshots (never ``keep``)."""
    built = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    for old in built[_KEEP:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)
