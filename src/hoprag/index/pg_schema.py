"""Where a PostgreSQL index lives, how to reach it, and the tables it is made of.

An index URL is a libpq URL plus an optional ``index`` query parameter naming the index (default
``default``)::

    postgresql://USER:PASSWORD@HOST:5432/DB?index=hotpot

Each index is one schema, ``hoprag_idx_<name>``, so several indexes share a database without
sharing a table, and a rebuild replaces one schema as a whole (built under a staging name, then
renamed in one transaction). The schema holds:

``manifest``   one row: the layout version, the :class:`~hoprag.index.store.IndexManifest` JSON
               and the BM25 statistics
``documents``  one row per document (``pos`` = corpus order), its JSON (and that JSON's length),
               its ``acl`` level and the string keys filters match (``fkeys``: field → values)
``chunks``     one row per chunk (``pos`` = retrieval order), offsets, text, token count and, with
               dense vectors, a pgvector ``embedding`` column with an HNSW index (inner product)
``terms``      the vocabulary: term, document frequency and idf
``postings``   (term, chunk, term frequency, chunk length), written in term order, keyed by term
``term_levels`` (term, acl level, document frequency among that level's chunks): a clearance's
               frequencies without a pass over the postings
``acl_levels`` documents and chunks per acl level: a clearance view's size
``title_keys`` (link key of a document's title, document): known titles looked up by key
``title_filter`` one row: a Bloom filter of the title keys (:mod:`hoprag.index.bloom`), so a key
               that is no title costs no lookup
``versions``   the versions updates replaced or deleted, with their valid time, and ``arrivals``, when
               an update added each current version: a local index's ``history/`` tables
               (:mod:`hoprag.index.history`), read by ``--as-of`` (:mod:`hoprag.index.pg_history`)
``history_gap`` one row when the index was updated before it kept versions (layout 2): the time from
               which ``versions`` is complete

Passwords never reach a message: every URL shown is :func:`display_url`'s.
"""

from __future__ import annotations

import queue
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from hoprag.errors import ConfigError, IndexLoadError

__all__ = [
    "PG_FORMAT",
    "READ_FORMATS",
    "SCHEMES",
    "PgTarget",
    "Connections",
    "display_url",
    "history_ddl",
    "is_pg_url",
    "index_ddl",
    "parse_target",
    "quote",
    "schema_ddl",
]

SCHEMES = ("postgresql://", "postgres://")
#: the layout of an index schema (bumped when its tables change; independent of local index formats);
#: 2 added ``term_levels``, ``acl_levels``, ``title_keys``, ``title_filter`` and the documents' ``size``;
#: 3 added ``versions``, ``arrivals`` and ``history_gap`` (an update of a layout-2 index adds them)
PG_FORMAT = 3
#: the layouts this hoprag reads: 2 is read as it is, and brought to 3 by its next update
READ_FORMATS = (2, 3)
SCHEMA_PREFIX = "hoprag_idx_"
DEFAULT_NAME = "default"
_NAME = re.compile(r"^[a-z0-9_]{1,32}$")
INSTALL_FIX = "pip install 'hoprag[postgres]'"


def is_pg_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL index (a ``postgresql://`` or ``postgres://`` URL)."""
    return isinstance(target, str) and target.strip().lower().startswith(SCHEMES)


def display_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (user, host, database and options kept)."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="/:*"), ""))


@dataclass(frozen=True)
class PgTarget:
    """A parsed index URL: what libpq connects to, the index name and its schema."""

    conninfo: str
    name: str
    display: str

    @property
    def schema(self) -> str:
        return SCHEMA_PREFIX + self.name


def parse_target(url: str) -> PgTarget:
    """Split the ``index`` parameter off an index URL; :class:`ConfigError` for a bad name."""
    raw = url.strip()
    if not is_pg_url(raw):
        raise ConfigError(f"'{display_url(raw)}' is not a PostgreSQL URL; give postgresql://USER@HOST/DB?index=NAME")
    parts = urlsplit(raw)
    name = DEFAULT_NAME
    kept = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "index":
            name = value
        else:
            kept.append((key, value))
    if not _NAME.match(name):
        raise ConfigError(
            f"index name '{name}' in {display_url(raw)} is not valid; give 1 to 32 lowercase letters, "
            "digits or underscores, e.g. ?index=hotpot"
        )
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(kept, safe="/:"), ""))
    return PgTarget(conninfo=conninfo, name=name, display=display_url(raw))


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConfigError(f"a PostgreSQL index needs the psycopg driver. Fix: {INSTALL_FIX}") from None
    return psycopg


def _reason(exc: BaseException, target: PgTarget) -> str:
    """The driver's first line, with the password scrubbed should it ever appear."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    password = urlsplit(target.conninfo).password
    return text.replace(password, "***") if password else text


class Connections:
    """A small pool of autocommit connections to one database, safe to share between threads.

    The multi-hop engine retrieves from several threads at once; each retrieval borrows its own
    connection. A failure to connect is one :class:`IndexLoadError` naming the (password-hidden) URL.
    """

    def __init__(self, target: PgTarget, *, keep: int = 8) -> None:
        self.target = target
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue(maxsize=keep)
        self._psycopg = _psycopg()

    def connect(self) -> Any:
        try:
            return self._psycopg.connect(self.target.conninfo, autocommit=True, connect_timeout=5)
        except self._psycopg.Error as exc:
            raise IndexLoadError(
                f"cannot reach the PostgreSQL index at {self.target.display} ({_reason(exc, self.target)}). "
                "Fix: start the server, or correct the URL (host, port, database, user)"
            ) from None

    @contextmanager
    def borrow(self) -> Iterator[Any]:
        """A connection for one unit of work; returned to the pool unless it broke."""
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self.connect()
        try:
            yield conn
        except self._psycopg.Error as exc:
            conn.close()
            raise IndexLoadError(
                f"the PostgreSQL index at {self.target.display} failed ({_reason(exc, self.target)}). "
                "Fix: check the server is up and the index was built with `hoprag index CORPUS --out URL`"
            ) from None
        except BaseException:
            conn.close()
            raise
        if conn.closed or conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
            conn.close()
            return
        try:
            self._idle.put_nowait(conn)
        except queue.Full:
            conn.close()

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def schema_ddl(schema: str, dim: int | None) -> list[str]:
    """The ``CREATE`` statements of one index schema (``dim``: vector size, ``None`` for no vectors)."""
    s = quote(schema)
    embedding = f", embedding vector({int(dim)})" if dim else ""
    return [
        f"CREATE SCHEMA {s}",
        f"CREATE TABLE {s}.manifest (id int PRIMARY KEY, format int NOT NULL, body jsonb NOT NULL, "
        "chunk_count int NOT NULL, avgdl float8 NOT NULL)",
        f"CREATE TABLE {s}.documents (pos int PRIMARY KEY, id text NOT NULL UNIQUE, title text NOT NULL, "
        "acl_level text NOT NULL, fkeys jsonb NOT NULL, body jsonb NOT NULL, size int NOT NULL)",
        f"CREATE TABLE {s}.chunks (pos int PRIMARY KEY, id text NOT NULL UNIQUE, doc_pos int NOT NULL, "
        'doc_id text NOT NULL, start int NOT NULL, "end" int NOT NULL, index int NOT NULL, text text NOT NULL, '
        f"length int NOT NULL{embedding})",
        f"CREATE TABLE {s}.terms (id int PRIMARY KEY, term text NOT NULL UNIQUE, df int NOT NULL, idf float8 NOT NULL)",
        # the chunk's length rides along so scoring reads the postings alone (an index-only scan)
        f"CREATE TABLE {s}.postings (term_id int NOT NULL, chunk_pos int NOT NULL, tf int NOT NULL, "
        "length int NOT NULL)",
        f"CREATE TABLE {s}.term_levels (term_id int NOT NULL, acl_level text NOT NULL, df int NOT NULL)",
        f"CREATE TABLE {s}.acl_levels (acl_level text PRIMARY KEY, documents int NOT NULL, chunks int NOT NULL)",
        f"CREATE TABLE {s}.title_keys (key text NOT NULL, doc_pos int NOT NULL)",
        f"CREATE TABLE {s}.title_filter (hashes int NOT NULL, bits bytea NOT NULL)",
        *history_ddl(schema),
    ]


def history_ddl(schema: str) -> list[str]:
    """The history tables (layout 3): a build creates them empty, an update of a layout-2 index adds them."""
    s = quote(schema)
    # record: the canonical JSON text, byte for byte the local history's (a snapshot's cache key hashes it)
    return [f"CREATE TABLE IF NOT EXISTS {s}.versions (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "id text NOT NULL, record text NOT NULL, start text, until text NOT NULL, ended text NOT NULL, "
            "at text NOT NULL, arrived text)",
            f"CREATE TABLE IF NOT EXISTS {s}.arrivals (id text PRIMARY KEY, at text NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {s}.history_gap (until text NOT NULL)"]


def index_ddl(schema: str, dim: int | None) -> list[str]:
    """Indexes created after the bulk load (cheaper than maintaining them row by row)."""
    s = quote(schema)
    statements = [f"CREATE INDEX ON {s}.chunks (doc_pos)",
                  f"ALTER TABLE {s}.postings ADD PRIMARY KEY (term_id, chunk_pos)",
                  f"CREATE INDEX ON {s}.postings (term_id) INCLUDE (chunk_pos, tf, length)",
                  f"ALTER TABLE {s}.term_levels ADD PRIMARY KEY (term_id, acl_level)",
                  f"CREATE INDEX ON {s}.title_keys (key) INCLUDE (doc_pos)"]
    if dim:
        statements.append(f"CREATE INDEX ON {s}.chunks USING hnsw (embedding vector_ip_ops)")
    return statements


def quote(identifier: str) -> str:
    """``identifier`` double-quoted (only lowercase letters, digits and underscores are accepted)."""
    if not re.match(r"^[a-z0-9_]+$", identifier):
        raise ConfigError(f"'{identifier}' is not a valid schema name")
    return f'"{identifier}"'
