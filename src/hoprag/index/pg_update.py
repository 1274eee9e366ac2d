"""Update a PostgreSQL index in place — add, replace and delete documents — in one transaction.

``hoprag index CORPUS --out postgresql://… --update [--delete FILE]`` calls :func:`update_pg_index`.
The plan is the local update's (:func:`hoprag.index.update_plan.plan_update`): the kept documents in
their order, then the added and replaced ones. Only those are chunked, tokenised and embedded, by the
build's own loader (:class:`hoprag.index.pg_load.PgLoader`, resumed after the stored rows); the
removed chunks are tokenised again to know which postings and frequencies they held. Then, in the
same transaction:

- ``documents``, ``chunks`` (with their vectors; pgvector keeps the HNSW index up to date),
  ``postings`` and ``title_keys``: the removed rows deleted, the new ones appended;
- ``terms``: each touched term's ``df`` moved by the delta (a term no chunk holds any more is
  dropped), every ``idf`` recomputed from the new chunk count by the build's statement;
  ``term_levels`` and ``acl_levels`` moved by their deltas; ``title_filter`` rebuilt from every key;
- ``manifest``: counts, ``avgdl``, the corpus hash of the new order and one more change-log entry;
- ``versions`` and ``arrivals``: the replaced and deleted versions with their valid time, for
  ``--as-of`` (:mod:`hoprag.index.pg_history`; a layout-2 index gets the tables here).

Kept rows keep their positions and the new ones take positions after the last: positions keep the
corpus order (ties still break as in a rebuild) without the dense numbering a rebuild gives, so no
kept row is rewritten. Readers see the old index or the new one, never a mix (one transaction; the
BM25 query reads ``avgdl`` from the manifest in its own snapshot); a killed update rolls back. Two
updates of one index at once are refused by an advisory lock held by the transaction. The PostgreSQL
index keeps no entity graph (:mod:`hoprag.index.pg_build`); its title keys are what links documents.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from hoprag import __version__
from hoprag.errors import EmptyCorpusError, IndexLoadError, InputError
from hoprag.index.bloom import BloomBuilder
from hoprag.index.bm25 import index_text
from hoprag.index.corpus_db import canonical_record
from hoprag.index.entities import title_key
from hoprag.index.manifest import IndexManifest, IndexUpdate, config_hash
from hoprag.index.pg_load import BATCH, IDF_SQL, PgLoader, Progress
from hoprag.index.pg_history import record_pg_update
from hoprag.index.pg_schema import PG_FORMAT, READ_FORMATS, Connections, PgTarget, parse_target, quote
from hoprag.index.update import UpdateResult
from hoprag.index.update_plan import UpdatePlan, plan_update
from hoprag.records import Chunk, Document

__all__ = ["read_pg_manifest", "update_pg_index"]

Check = Callable[[Sequence[Document], str], None]
_BATCH = 2000  # rows per statement when reading back


def update_pg_index(
    url: str,
    documents: Iterable[Document],
    deletes: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    delete_source: str = "--delete",
    check: Check | None = None,
) -> UpdateResult:
    """Add ``documents`` new to the PostgreSQL index ``url``, replace those whose id it holds (one equal
    to its stored version changes nothing), delete the ids ``deletes``; see the module doc.

    ``check(documents, artifact_id)`` is called with the added and replaced documents before anything
    is written (the gates); what it raises rolls the update back."""
    target = parse_target(url)
    pool = Connections(target)
    try:
        with pool.borrow() as conn:
            _require_index(conn, target)
            with conn.transaction():
                return _update(conn, target, documents, deletes, progress, delete_source, check)
    finally:
        pool.close()


def read_pg_manifest(url: str) -> IndexManifest:
    """The manifest of the PostgreSQL index an update would change (its build options)."""
    target = parse_target(url)
    pool = Connections(target)
    try:
        with pool.borrow() as conn:
            _require_index(conn, target)
            return _manifest_row(conn, target)[0]
    finally:
        pool.close()


def _require_index(conn: Any, target: PgTarget) -> None:
    found = conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'manifest'",
                         (target.schema,)).fetchone()
    if found is None:
        raise InputError(f"there is no index named '{target.name}' to update in this database", source=target.display,
                         fix=f"build it first: `hoprag index CORPUS --out {target.display}`, then update it with --update")


def _manifest_row(conn: Any, target: PgTarget, *, lock: bool = False) -> tuple[IndexManifest, float]:
    row = conn.execute(f"SELECT format, body, avgdl FROM {quote(target.schema)}.manifest WHERE id = 1"
                       + (" FOR UPDATE" if lock else "")).fetchone()
    fix = f"rebuild it from its corpus with `hoprag index CORPUS --out {target.display}`"
    if row is None or row[0] not in READ_FORMATS:  # layout 2 is brought to PG_FORMAT by the update
        raise IndexLoadError(f"{target.display}: index layout {row[0] if row else 'unknown'}, this hoprag updates "
                             f"{READ_FORMATS[0]} to {PG_FORMAT}. Fix: {fix}")
    try:
        manifest = IndexManifest.model_validate(row[1])
    except ValueError:
        raise IndexLoadError(f"{target.display}: unreadable manifest. Fix: {fix}") from None
    if config_hash(manifest.config) != manifest.config_hash:
        raise IndexLoadError(f"{target.display}: the index was written by an incompatible hoprag. Fix: {fix}")
    return manifest, float(row[2])


def _update(conn: Any, target: PgTarget, documents: Iterable[Document], deletes: Sequence[str],
            progress: Progress | None, delete_source: str, check: Check | None) -> UpdateResult:
    started = time.perf_counter()
    s = quote(target.schema)
    # held until the transaction ends, however it ends (a killed client's transaction ends with it)
    if not conn.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", (target.schema,)).fetchone()[0]:
        raise InputError("another process is updating this index", source=target.display,
                         fix="wait for the other update to finish, then run this one")
    old, avgdl = _manifest_row(conn, target, lock=True)
    plan = plan_update(documents, deletes, lambda ids: _stored(conn, s, ids), delete_source=delete_source)
    if not plan.changes:
        return UpdateResult(old, plan, changed=False)
    if check is not None:
        check([doc for doc, _ in plan.fresh], old.artifact_id)
    record = dict(at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
                  added=plan.added, replaced=len(plan.replaced), deleted=len(plan.deleted), unchanged=plan.unchanged,
                  previous_corpus_hash=old.corpus_hash, previous_artifact_id=old.artifact_id)
    tally = _Tally(tokens=round(avgdl * old.chunk_count), acl_classes=Counter(old.acl_classes))
    vocab = dict(conn.execute(f"SELECT term, id FROM {s}.terms").fetchall())
    # the versions leaving, kept for --as-of before their rows go: in this transaction, so never one without the other
    record_pg_update(conn, target, plan, updated_before=bool(old.updates), at=record["at"])
    _remove(conn, s, target, plan, vocab, old.config.tokenizer(), tally)
    if progress:
        progress("write", 1, 4)
    loader, start = _append(conn, s, target, old, plan, vocab, tally, progress)
    manifest = _merge(conn, s, target, old, plan, loader, start, tally, record, started)
    if progress:
        progress("write", 4, 4)
    return UpdateResult(manifest, plan, changed=True)


class _Tally:
    """What the update changes in the whole-index counts: deltas per term, per (term, level) and per
    level, and the totals the manifest keeps."""

    def __init__(self, *, tokens: int, acl_classes: Counter[str]) -> None:
        self.tokens = tokens
        self.acl_classes = acl_classes
        self.df: Counter[int] = Counter()
        self.level_df: Counter[tuple[int, str]] = Counter()
        self.docs: Counter[str] = Counter()
        self.chunks: Counter[str] = Counter()
        self.removed_chunks = 0


def _stored(conn: Any, s: str, ids: Sequence[str]) -> dict[str, str]:
    """id -> canonical record of the stored documents among ``ids`` (what the plan compares against)."""
    rows = conn.execute(f"SELECT id, body FROM {s}.documents WHERE id = ANY(%s::text[])", (list(ids),)).fetchall()
    return {did: canonical_record(Document.from_dict(body)) for did, body in rows}


def _remove(conn: Any, s: str, target: PgTarget, plan: UpdatePlan, vocab: dict[str, int], tokenizer: Any,
            tally: _Tally) -> None:
    """Delete the removed documents' rows, counting what they held out of the tallies."""
    if not plan.removed:
        return
    docs = conn.execute(f"SELECT pos, title, acl_level, body FROM {s}.documents WHERE id = ANY(%s::text[])",
                        (sorted(plan.removed),)).fetchall()
    titles: dict[int, tuple[str, str]] = {}
    for pos, title, level, body in docs:
        titles[pos] = (title, level)
        tally.docs[level] -= 1
        tally.acl_classes[Document.from_dict(body).acl] -= 1
    positions = sorted(titles)
    pairs: list[tuple[int, int]] = []
    fix = f"rebuild the index with `hoprag index CORPUS --out {target.display}`"
    for lo in range(0, len(positions), _BATCH):
        rows = conn.execute(f'SELECT pos, id, doc_id, start, "end", index, text, length, doc_pos FROM {s}.chunks '
                            "WHERE doc_pos = ANY(%s::int[])", (positions[lo: lo + _BATCH],)).fetchall()
        for pos, cid, did, start, end, index, text, length, doc_pos in rows:
            title, level = titles[doc_pos]
            counts = Counter(tokenizer.query(index_text(Chunk(cid, did, text, start, end, index), title)))
            if sum(counts.values()) != length or any(term not in vocab for term in counts):
                raise IndexLoadError(f"{target.display}: chunk '{cid}' does not tokenise as it was indexed (another "
                                     f"tokenizer built this index), so its postings cannot be removed. Fix: {fix}")
            for term in counts:
                tid = vocab[term]
                pairs.append((tid, pos))
                tally.df[tid] -= 1
                tally.level_df[tid, level] -= 1
            tally.chunks[level] -= 1
            tally.tokens -= length
            tally.removed_chunks += 1
    for lo in range(0, len(pairs), 50_000):
        part = pairs[lo: lo + 50_000]
        done = conn.execute(f"DELETE FROM {s}.postings p USING unnest(%s::int[], %s::int[]) AS x(t, c) "
                            "WHERE p.term_id = x.t AND p.chunk_pos = x.c", ([t for t, _ in part], [c for _, c in part]))
        if done.rowcount != len(part):
            raise IndexLoadError(f"{target.display}: the postings do not match the chunks they index. Fix: {fix}")
    keys = [(title_key(title), pos) for pos, (title, _) in titles.items() if title]
    conn.execute(f"DELETE FROM {s}.title_keys k USING unnest(%s::text[], %s::int[]) AS x(key, pos) "
                 "WHERE k.key = x.key AND k.doc_pos = x.pos", ([k for k, _ in keys], [p for _, p in keys]))
    conn.execute(f"DELETE FROM {s}.chunks WHERE doc_pos = ANY(%s::int[])", (positions,))
    conn.execute(f"DELETE FROM {s}.documents WHERE pos = ANY(%s::int[])", (positions,))


def _append(conn: Any, s: str, target: PgTarget, old: IndexManifest, plan: UpdatePlan, vocab: dict[str, int],
            tally: _Tally, progress: Progress | None) -> tuple[PgLoader, tuple[int, int, int]]:
    """Chunk, tokenise, embed and write the added and replaced documents after the stored rows; the
    loader and the first new (document, chunk, term) positions."""
    embedder = _embedder(old, target) if old.dense is not None else None
    doc_at, chunk_at, term_at = conn.execute(
        f"SELECT (SELECT coalesce(max(pos), -1) + 1 FROM {s}.documents), "
        f"(SELECT coalesce(max(pos), -1) + 1 FROM {s}.chunks), (SELECT coalesce(max(id), -1) + 1 FROM {s}.terms)"
    ).fetchone()
    loader = PgLoader(conn, s, old.config, embedder=embedder, batch=BATCH, source=target.display)
    loader.resume(document_pos=doc_at, chunk_pos=chunk_at, vocab=vocab, next_term=term_at)
    for i, (doc, _) in enumerate(plan.fresh, start=1):
        loader.add(doc)
        if progress:
            progress("chunk", i, len(plan.fresh))
    loader.flush()
    loader.move_postings()
    for tid, n in loader.df.items():
        tally.df[tid] += n
    for level, found in loader.df_by_level.items():
        for tid, n in found.items():
            tally.level_df[tid, level] += n
    tally.docs.update(loader.docs_per_level)
    tally.chunks.update(loader.chunks_per_level)
    tally.acl_classes.update(loader.acl_classes)
    tally.tokens += loader.tokens
    if progress:
        progress("write", 2, 4)
    return loader, (doc_at, chunk_at, term_at)


def _embedder(old: IndexManifest, target: PgTarget) -> Any:
    from hoprag.index.embedders import make_embedder

    info = old.dense
    embedder = make_embedder(info.embedder)  # type: ignore[union-attr]
    if embedder.info().get("weights_sha256") != info.weights_sha256 or embedder.dim != info.dim:  # type: ignore[union-attr]
        raise IndexLoadError(
            f"{target.display}: the index's vectors were made by {info.model_id} (weights sha256 "  # type: ignore[union-attr]
            f"{info.weights_sha256[:12]}…) but the installed '{info.embedder}' model differs; new vectors would "  # type: ignore[union-attr]
            f"not be comparable. Fix: rebuild the index: `hoprag index CORPUS --out {target.display} --dense`")
    return embedder


def _merge(conn: Any, s: str, target: PgTarget, old: IndexManifest, plan: UpdatePlan, loader: PgLoader,
           start: tuple[int, int, int], tally: _Tally, record: dict[str, Any], started: float) -> IndexManifest:
    """The whole-index tables moved by the tallies, and the new manifest."""
    doc_at, chunk_at, first_new = start
    documents = old.document_count - len(plan.removed) + len(plan.fresh)
    chunks = old.chunk_count - tally.removed_chunks + (loader.chunks - chunk_at)
    if not documents:
        raise EmptyCorpusError("after the update the index would hold no documents", source=target.display,
                               fix="keep or add at least one document")
    if not chunks:
        raise EmptyCorpusError("after the update the index would hold no chunks", source=target.display,
                               fix="keep or add documents with non-empty 'text'")
    new_terms = {term: tid for term, tid in loader.vocab.items() if tid >= first_new}
    if new_terms:
        with conn.cursor().copy(f"COPY {s}.terms (id, term, df, idf) FROM STDIN") as copy:
            for term, tid in new_terms.items():
                copy.write_row((tid, term, tally.df.pop(tid), 0.0))
    moved = [(tid, n) for tid, n in tally.df.items() if n]
    conn.execute(f"UPDATE {s}.terms t SET df = t.df + x.d FROM unnest(%s::int[], %s::int[]) AS x(id, d) WHERE t.id = x.id",
                 ([t for t, _ in moved], [n for _, n in moved]))
    gone = [tid for tid, _ in moved]
    conn.execute(f"DELETE FROM {s}.terms WHERE id = ANY(%s::int[]) AND df = 0", (gone,))
    if not conn.execute(f"SELECT EXISTS (SELECT 1 FROM {s}.terms)").fetchone()[0]:
        raise EmptyCorpusError("after the update the index would hold no indexable words", source=target.display,
                               fix="keep or add documents with real text")
    levels = [(tid, level, n) for (tid, level), n in tally.level_df.items() if n]
    conn.execute(f"INSERT INTO {s}.term_levels AS l (term_id, acl_level, df) SELECT * FROM unnest(%s::int[], "
                 "%s::text[], %s::int[]) ON CONFLICT (term_id, acl_level) DO UPDATE SET df = l.df + EXCLUDED.df",
                 ([t for t, _, _ in levels], [lv for _, lv, _ in levels], [n for _, _, n in levels]))
    conn.execute(f"DELETE FROM {s}.term_levels WHERE term_id = ANY(%s::int[]) AND df = 0",
                 (sorted({t for t, _, _ in levels}),))
    names = sorted(set(tally.docs) | set(tally.chunks))
    conn.execute(f"INSERT INTO {s}.acl_levels AS a (acl_level, documents, chunks) SELECT * FROM unnest(%s::text[], "
                 "%s::int[], %s::int[]) ON CONFLICT (acl_level) DO UPDATE SET documents = a.documents + "
                 "EXCLUDED.documents, chunks = a.chunks + EXCLUDED.chunks",
                 (names, [tally.docs[n] for n in names], [tally.chunks[n] for n in names]))
    conn.execute(f"DELETE FROM {s}.acl_levels WHERE documents = 0")
    conn.execute(IDF_SQL.format(s=s), (chunks,))
    _title_filter(conn, s)
    corpus_hash = _corpus_hash(conn, s, doc_at, [r for _, r in plan.fresh])
    dense = old.dense.model_copy(update={"count": chunks}) if old.dense is not None else None
    manifest = IndexManifest(
        hoprag_version=__version__, config=old.config, config_hash=old.config_hash, document_count=documents,
        chunk_count=chunks, corpus_hash=corpus_hash,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        artifact_id=uuid.uuid4().hex, dense=dense, acl_classes=dict(sorted((k, v) for k, v in tally.acl_classes.items() if v)),
        updates=[*old.updates, IndexUpdate(**record, seconds=round(time.perf_counter() - started, 3))],
    )
    conn.execute(f"UPDATE {s}.manifest SET body = %s::jsonb, chunk_count = %s, avgdl = %s WHERE id = 1",
                 (manifest.model_dump_json(), chunks, tally.tokens / chunks))
    return manifest


def _title_filter(conn: Any, s: str) -> None:
    """The Bloom filter of every title key again (its size follows the key count, as a build's)."""
    builder = BloomBuilder()
    with conn.cursor(name="hoprag_title_keys") as cursor:
        cursor.execute(f"SELECT key FROM {s}.title_keys")
        while rows := cursor.fetchmany(10_000):
            builder.add(key for (key,) in rows)
    titles = builder.finish()
    conn.execute(f"DELETE FROM {s}.title_filter")
    conn.execute(f"INSERT INTO {s}.title_filter (hashes, bits) VALUES (%s, %s)", (titles.hashes, titles.bits))


def _corpus_hash(conn: Any, s: str, first_new: int, fresh: list[str]) -> str:
    """sha256 over the canonical records in the new order — the kept documents by position, then the
    ``fresh`` records —: the digest a build of that corpus computes."""
    digest = hashlib.sha256()
    with conn.cursor(name="hoprag_kept_documents") as cursor:
        cursor.execute(_RECORD_SQL.replace("SCHEMA", s), (first_new,))
        while rows := cursor.fetchmany(4096):
            digest.update("".join(
                head + ("{}" if metadata is None else json.dumps(metadata, sort_keys=True, ensure_ascii=False)) + tail
                for head, metadata, tail in rows).encode("utf-8"))
    digest.update("".join(record + "\n" for record in fresh).encode("utf-8"))
    return digest.hexdigest()


def _record_sql() -> str:
    """A stored document's canonical record (:func:`~hoprag.index.corpus_db.canonical_record`) made by the
    server around its metadata: the fields are strings, in sorted order, and ``to_json`` escapes a string
    as Python's ``json.dumps(..., ensure_ascii=False)`` does; only a non-empty ``metadata`` comes back
    as JSON for the client to write with sorted keys (parsing every record in Python was most of an
    update's time)."""
    def field(name: str) -> str:
        return f"to_json(body->>'{name}')::text"

    head = " || ', ' || ".join(f"'\"{n}\": ' || {field(n)}" for n in ("acl", "doc_type", "id"))
    tail = " || ', ' || ".join(f"'\"{n}\": ' || {field(n)}" for n in ("source", "text", "timestamp", "title", "version"))
    return ("SELECT '{' || " + head + " || ', \"metadata\": ', "
            "CASE WHEN body->'metadata' = '{}'::jsonb THEN NULL ELSE body->'metadata' END, "
            "', ' || " + tail + " || '}' || chr(10) FROM SCHEMA.documents WHERE pos < %s ORDER BY pos")


_RECORD_SQL = _record_sql()
