"""Update a local index — add, replace and delete documents — into the index a rebuild would give.

``hoprag index CORPUS --out DIR --update [--delete FILE]`` calls :func:`update_index`. The plan
(:mod:`hoprag.index.update_plan`) fixes the corpus after the update: the kept documents in their
order, then the added and replaced ones. The new index is that corpus's build, value for value —
rows, BM25 scores and vocabulary, entity graph, dense vectors, manifest corpus hash — but only the
new documents are chunked, tokenised, scanned for entities and embedded; the rest is recomputed
from what the index keeps of its analysis (:mod:`hoprag.index.analysis`):

- rows: the kept rows copied into a new ``corpus.sqlite`` with their new positions, the new appended;
- BM25: :func:`hoprag.index.bm25_delta.updated_matrix` (every score recomputed: N, avgdl and df
  change with any delta);
- graph: for a small delta, changed in place, in a forked child where there are two cores
  (:mod:`hoprag.index.graph_update`, :mod:`hoprag.index.graph_fork`: the new chunks
  scanned, each key's chunk count and the entity rows updated, the global rows, kinds and links
  recomputed from them); for a large one :meth:`hoprag.index.graph_worker.GraphWorker.resume` with
  the kept chunks' saved mentions, the new chunks scanned, the graph built from all of them — in a
  worker process for a large index, while BM25 is recomputed, as a build overlaps them;
- dense: the kept chunks' vectors, the new chunks embedded (and the HNSW graph rebuilt if it has one).

The corpus hash of an update that only adds resumes the digest saved with the index
(:mod:`hoprag.index.corpus_digest`). The new index is written beside the old one and swapped into place when complete
(:mod:`hoprag.index.staging`): an update killed at any point leaves the previous index. The
manifest's change log gains one :class:`~hoprag.index.manifest.IndexUpdate`, and the versions the
update replaced or deleted join ``history/`` with their valid time (:mod:`hoprag.index.history`, read
by ``--as-of`` searches, :mod:`hoprag.index.snapshots`) in the same swap. An index written
before ``analysis/`` existed is updated by rebuilding it from its stored documents: the same index,
at a build's cost. Two updates of one index at once are refused (a lock beside it).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, wait
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from datetime import datetime, timezone
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.errors import EmptyCorpusError, IndexLoadError, InputError
from hoprag.index import staging
from hoprag.index.analysis import ANALYSIS_DIR, MENTIONS, has_bm25_state, load_bm25_state, save_bm25_state
from hoprag.index.bm25 import BATCH, BM25Retriever, index_text
from hoprag.index.bm25_delta import updated_matrix
from hoprag.index.corpus_db import DB_FILE, SCHEMA, CorpusWriter
from hoprag.index.corpus_digest import CorpusDigest, resume_digest
from hoprag.index.graph_fork import ForkedGraph, can_fork
from hoprag.index.graph_update import IncrementalGraph, graph_for_update
from hoprag.index.graph_worker import GraphWorker
from hoprag.index.history import record_update
from hoprag.index.manifest import DenseInfo, IndexManifest, IndexUpdate, write_manifest
from hoprag.index.store import BM25_DIR, MANIFEST, LoadedIndex, build_index, load_index
from hoprag.index.update_plan import UpdatePlan, plan_update
from hoprag.ingest.chunking import chunk_document
from hoprag.locks import FileLockedError, exclusive_lock
from hoprag.records import Chunk, Document

__all__ = ["UpdateResult", "update_index"]

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class UpdateResult:
    """The index's manifest after the update (unchanged when nothing changed) and what was done."""

    manifest: IndexManifest
    plan: UpdatePlan
    changed: bool


def update_index(
    directory: str | Path,
    documents: Iterable[Document],
    deletes: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    executor: Any = None,
    delete_source: str = "--delete",
    check: Callable[[Sequence[Document], str], None] | None = None,
) -> UpdateResult:
    """Add ``documents`` new to the index at ``directory``, replace those whose id it holds (a document
    equal to its stored version changes nothing), delete the ids ``deletes``; see the module doc.

    ``check(documents, artifact_id)``: called with the added and replaced documents and the index's
    artifact id before anything is written (the gates of :mod:`hoprag.gates.index_delta`); what it
    raises stops the update with the index as it was."""
    target = Path(directory)
    fix = f"build it first: `hoprag index CORPUS --out {target}`, then update it with --update"
    if not (target / MANIFEST).is_file():
        raise InputError("there is no index to update here", source=str(target), fix=fix)
    try:
        with exclusive_lock(target, fix="wait for the other update to finish"):
            return _update(target, documents, deletes, progress, executor, delete_source, check)
    except FileLockedError as exc:
        raise InputError(f"another process is updating this index ({'PID ' + str(exc.pid) if exc.pid else 'a lock'} "
                         "holds it)", source=str(target), fix="wait for the other update to finish, then run this one") from None


def _update(target: Path, documents: Iterable[Document], deletes: Sequence[str], progress: Progress | None,
            executor: Any, delete_source: str, check: Callable[[Sequence[Document], str], None] | None) -> UpdateResult:
    started = time.perf_counter()
    index = load_index(target)
    db = index.chunks.db
    plan = plan_update(documents, deletes, db.records, delete_source=delete_source)
    if not plan.changes:
        return UpdateResult(index.manifest, plan, changed=False)
    old = index.manifest
    if check is not None:
        check([doc for doc, _ in plan.fresh], old.artifact_id)
    record = dict(at=_now(), added=plan.added, replaced=len(plan.replaced), deleted=len(plan.deleted),
                  unchanged=plan.unchanged, previous_corpus_hash=old.corpus_hash, previous_artifact_id=old.artifact_id)
    keep_docs = np.ones(old.document_count, dtype=bool)
    keep_docs[[db.document_position(i) for i in sorted(plan.removed)]] = False
    retired = db.records(sorted(plan.removed))  # the versions leaving: kept in history/ for --as-of
    stage = staging.open_stage(target)
    try:
        history = partial(record_update, target, stage, plan, retired, record["at"])
        if _resumable(target, old):
            manifest = _apply(stage, target, index, plan, keep_docs, record, started, progress, executor, history)
        else:  # built into the stage, so that the history joins it before the one swap
            kept = db.iter_documents(mask=keep_docs)
            log = [*old.updates, IndexUpdate(**record, seconds=0.0, method="rebuild")]
            manifest = build_index(chain(kept, (doc for doc, _ in plan.fresh)), stage, old.config, progress=progress,
                                   executor=executor, history=log)
            history()
    except BaseException:
        staging.discard(stage)
        raise
    staging.commit(stage, target)
    return UpdateResult(manifest, plan, changed=True)


def _resumable(target: Path, manifest: IndexManifest) -> bool:
    """Whether the index keeps the analysis an update resumes from (else it is rebuilt)."""
    return has_bm25_state(target) and (manifest.graph is None or (target / ANALYSIS_DIR / MENTIONS).is_file())


def _apply(stage: Path, target: Path, index: LoadedIndex, plan: UpdatePlan, keep_docs: np.ndarray,
           record: dict[str, Any], started: float, progress: Progress | None, executor: Any,
           history: Callable[[], None]) -> IndexManifest:
    old, db = index.manifest, index.chunks.db
    config = old.config
    chunk_doc = np.asarray(db.chunk_doc)
    keep_chunks = keep_docs[chunk_doc]
    graph = None
    if old.graph is not None:  # first: a worker reads the kept mentions while the rows are copied
        # changed in a forked child where there is a second core (hoprag.index.graph_fork), before any thread starts
        forked = partial(ForkedGraph, documents=[doc for doc, _ in plan.fresh], chunk=config.chunk,
                         stage=stage) if can_fork() else None
        graph = graph_for_update(target, old.graph, keep_chunks, keep_docs, db, len(plan.fresh), forked)
    # the corpus hash, the copy of the kept rows and the history's new rows in threads (after the fork),
    # while the new documents are analysed here: SQLite, SHA-256 and the file copy run without the
    # interpreter lock, and the history's writes wait on the disk
    background = ThreadPoolExecutor(max_workers=3, thread_name_prefix="hoprag-update")
    corpus_hash = background.submit(_corpus_hash, target, old, keep_docs, [record for _, record in plan.fresh])
    copied = background.submit(_copy_kept_rows, target / DB_FILE, stage / DB_FILE, keep_docs, keep_chunks)
    recorded = background.submit(history)
    background.shutdown(wait=False)
    try:
        new_doc = np.cumsum(keep_docs) - 1
        kept_codes = np.asarray(db.doc_acl)[keep_docs]
        kept_acl = np.asarray(db.acl_names, dtype=object)[kept_codes].tolist()  # one gather, not a lookup a row
        # every class's count: the kept documents' by code, the new ones' added as they are analysed
        acl_counts = Counter(dict(zip(db.acl_names, np.bincount(kept_codes, minlength=len(db.acl_names)).tolist())))

        def open_writer() -> CorpusWriter:
            copied.result()  # the new rows go after the kept ones
            return CorpusWriter(stage, after=(new_doc[chunk_doc[keep_chunks]].astype(np.int32), kept_acl))

        tokenizer = index.bm25.tokenizer  # the stopword list the index saved: bm25s's list is not imported again
        builder = BM25Retriever.builder(config.bm25, tokenizer)
        builder.seed(_by_id(index.bm25.model.vocab_dict))
        manifest = _analyse(stage, target, index, plan, keep_chunks, open_writer, builder, tokenizer, graph,
                            acl_counts, record, started, progress, executor, corpus_hash)
        recorded.result()
        return manifest
    except BaseException:
        if graph is not None:
            graph.abort()
        wait([job for job in (copied, recorded) if not job.cancel()])  # the stage is discarded: not while they write into it
        raise


def _analyse(stage: Path, target: Path, index: LoadedIndex, plan: UpdatePlan, keep_chunks: np.ndarray,
             open_writer: Callable[[], CorpusWriter], builder: Any, tokenizer: Any,
             graph: GraphWorker | IncrementalGraph | ForkedGraph | None, acl_counts: Counter[str],
             record: dict[str, Any], started: float, progress: Progress | None, executor: Any,
             corpus_hash: Future[CorpusDigest]) -> IndexManifest:
    """The new documents chunked, written, tokenised and scanned; BM25, graph and vectors of the result."""
    old, db = index.manifest, index.chunks.db
    config = old.config
    texts: list[str] = []
    dense_texts: list[str] = []
    rows: list[tuple[Document, str, Sequence[Chunk]]] = []  # written once the kept rows are copied
    for i, (doc, stored) in enumerate(plan.fresh, start=1):
        chunks = chunk_document(doc, config.chunk)
        rows.append((doc, stored, chunks))
        if graph is not None:
            graph.add(chunks, doc.title)
        acl_counts[doc.acl] += 1
        texts.extend(index_text(c, doc.title) for c in chunks)
        if len(texts) >= BATCH:
            builder.add(texts, ordered=True)
            dense_texts.extend(texts if config.dense else ())
            texts = []
        if progress:
            progress("chunk", i, len(plan.fresh))
    builder.add(texts, ordered=True)
    dense_texts.extend(texts if config.dense else ())
    writer = open_writer()
    try:
        for row in rows:
            writer.add(*row)
        if not writer.chunks:
            raise EmptyCorpusError("after the update the index would hold no chunks", source=str(target),
                                   fix="keep or add documents with non-empty 'text'")
        acl_classes = {name: count for name, count in sorted(acl_counts.items()) if count}
        writer.close(list(acl_classes))
    except BaseException:
        writer.abort()
        raise
    if graph is not None:
        graph.submit(stage)  # a worker builds the graph now, while BM25 is recomputed here
    if progress:
        progress("index", 0, writer.chunks)
    try:
        tf, lengths = load_bm25_state(target, entries=int(index.bm25.model.scores["indptr"][-1]), chunks=old.chunk_count)
    except (OSError, ValueError) as exc:
        raise IndexLoadError(f"{target}: {ANALYSIS_DIR}/ unreadable ({exc}). Fix: rebuild the index with "
                             f"`hoprag index CORPUS --out {target}`") from None
    arrays, tf_new, lengths_new = updated_matrix(
        index.bm25.model, tf, lengths, keep_chunks, builder, bm25=config.bm25.model_dump(), tokenizer=tokenizer,
        texts_at=db.index_texts,
    )
    del builder, tf
    arrays.save(stage / BM25_DIR)
    tokenizer.save(stage / BM25_DIR)
    save_bm25_state(stage, tf_new, lengths_new)
    if progress:
        progress("index", writer.chunks, writer.chunks)
    graph_info = graph.finish(stage) if graph is not None else None
    dense_info = _dense(stage, index, keep_chunks, dense_texts, executor, progress) if old.dense is not None else None
    manifest = write_manifest(
        stage, config, documents=writer.documents, chunks=writer.chunks, corpus_hash=corpus_hash.result().save(stage),
        dense=dense_info, acl_classes=acl_classes, graph=graph_info, build=old.build,
        updates=[*old.updates, IndexUpdate(**record, seconds=round(time.perf_counter() - started, 3))],
    )
    return manifest


def _by_id(vocab: dict[str, int]) -> dict[str, int]:
    """The index's stems in term id order, without bm25s's "" column (a saved vocabulary is in that
    order already: checked, then copied, rather than sorted)."""
    if all(tid == at for at, tid in enumerate(vocab.values())):
        ordered = dict(vocab)
    else:
        ordered = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    ordered.pop("", None)
    return ordered


def _copy_kept_rows(source: Path, target: Path, keep_docs: np.ndarray, keep_chunks: np.ndarray) -> None:
    """``corpus.sqlite`` of the kept documents and chunks at their new positions (a plain copy when all are kept)."""
    if keep_docs.all():
        shutil.copyfile(source, target)
        return
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.executescript(SCHEMA)
        conn.execute("ATTACH DATABASE ? AS old", (str(source),))
        conn.execute("BEGIN")
        for name, mask in (("doc_map", keep_docs), ("chunk_map", keep_chunks)):
            kept = np.flatnonzero(mask).tolist()
            conn.execute(f"CREATE TEMP TABLE {name} (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
            # one JSON array read by SQLite (key: the new position, value: the old), not a row per call
            conn.execute(f"INSERT INTO {name} SELECT value, key FROM json_each(?)", (json.dumps(kept),))
        conn.execute("INSERT INTO documents SELECT m.new, d.id, d.title, d.source, d.version, d.timestamp, d.doc_type, "
                     "d.acl, d.record FROM doc_map m JOIN old.documents d ON d.pos = m.old ORDER BY m.old")
        conn.execute("INSERT INTO chunks SELECT m.new, c.id, dm.new, c.start, c.end, c.idx, c.text FROM chunk_map m "
                     "JOIN old.chunks c ON c.pos = m.old JOIN doc_map dm ON dm.old = c.doc_pos ORDER BY m.old")
        conn.execute("INSERT INTO title_keys SELECT t.key, dm.new FROM old.title_keys t JOIN doc_map dm "
                     "ON dm.old = t.doc_pos ORDER BY t.rowid")
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE old")
    finally:
        conn.close()


def _dense(stage: Path, index: LoadedIndex, keep_chunks: np.ndarray, texts: list[str], executor: Any,
           progress: Progress | None) -> DenseInfo:
    """The kept chunks' vectors, then the new chunks' (embedded by the index's model), and the HNSW graph."""
    from hoprag.index.ann import build_ann
    from hoprag.index.embed_shards import embed_corpus
    from hoprag.index.manifest import VECTORS

    info, old_vectors = index.manifest.dense, index.vectors
    if info is None or old_vectors is None:  # the caller asks only for an index with vectors
        raise IndexLoadError(f"{index.directory}: no dense vectors to update. Fix: rebuild the index with --dense")
    parts = [np.asarray(old_vectors)[keep_chunks]]
    if texts:
        vectors, embedder = embed_corpus(info.embedder, texts, executor=executor, progress=progress)
        found = embedder.info()
        if found.get("weights_sha256") != info.weights_sha256 or embedder.dim != info.dim:
            raise IndexLoadError(
                f"{index.directory}: the index's vectors were made by {info.model_id} (weights sha256 "
                f"{info.weights_sha256[:12]}…) but the installed '{info.embedder}' model differs; new vectors would "
                f"not be comparable. Fix: rebuild the index: `hoprag index CORPUS --out {index.directory} --dense`"
            )
        parts.append(np.asarray(vectors, dtype=np.float32))
    vectors = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
    with (stage / VECTORS).open("wb") as handle:
        np.save(handle, vectors, allow_pickle=False)
    dense = info.model_copy(update={"count": int(vectors.shape[0]), "ann": None})
    ann = build_ann(vectors, stage, index.manifest.config.ann)
    return dense.model_copy(update={"ann": ann}) if ann is not None else dense


def _corpus_hash(index_dir: Path, old: IndexManifest, keep_docs: np.ndarray, fresh: list[str]) -> CorpusDigest:
    """The digest of the updated rows — the kept records of the index at ``index_dir`` (before the update)
    in order, then the ``fresh`` ones —: the corpus hash a build of them computes. When every document
    is kept, the digest saved with the index is resumed (:mod:`hoprag.index.corpus_digest`)."""
    digest = resume_digest(index_dir, old.document_count, old.corpus_hash) if keep_docs.all() else None
    if digest is None:
        digest = CorpusDigest()
        _digest_kept(index_dir / DB_FILE, keep_docs, digest)
    for record in fresh:
        digest.add(record)
    return digest


def _digest_kept(db_file: Path, keep_docs: np.ndarray, digest: CorpusDigest) -> None:
    """Feed ``digest`` the kept records of ``db_file``, in order."""
    conn = sqlite3.connect(db_file, check_same_thread=False)
    try:
        # each run of kept rows, a few thousand at a time, as one buffer SQLite concatenates (the digest
        # of the concatenation is the digest of the parts fed one by one): a third less CPU than a
        # Python object per row. The positions are concatenated in the same pass and checked, so an
        # aggregate that saw the rows out of order is caught and the rows are read one by one.
        runs = _kept_runs(keep_docs)
        if len(runs) * 32 > int(keep_docs.sum()):  # kept rows scattered in short runs: a query per run
            runs = []                                # costs more than a Python object per row
            rows = conn.execute("SELECT pos, CAST(record || char(10) AS BLOB) FROM documents ORDER BY pos")
            keep = keep_docs.tolist()
            while batch := rows.fetchmany(4096):
                kept = [r for pos, r in batch if keep[pos]]
                digest.update(b"".join(kept), len(kept))
        for lo, hi in runs:
            positions, records = conn.execute(
                "SELECT group_concat(pos), CAST(group_concat(record || char(10), '') AS BLOB) "
                "FROM (SELECT pos, record FROM documents WHERE pos >= ? AND pos < ? ORDER BY pos)", (lo, hi),
            ).fetchone()
            if positions != ",".join(map(str, range(lo, hi))):
                records = b"".join(r for (r,) in conn.execute(
                    "SELECT CAST(record || char(10) AS BLOB) FROM documents WHERE pos >= ? AND pos < ? ORDER BY pos",
                    (lo, hi)))
            digest.update(records or b"", hi - lo)
    finally:
        conn.close()


def _kept_runs(keep_docs: np.ndarray, most: int = 4096) -> list[tuple[int, int]]:
    """The kept positions as half-open ranges ``[lo, hi)`` of at most ``most`` rows, in order."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], keep_docs, [False])).astype(np.int8)))
    runs = []
    for lo, hi in zip(edges[0::2].tolist(), edges[1::2].tolist()):
        runs.extend((at, min(at + most, hi)) for at in range(lo, hi, most))
    return runs


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
