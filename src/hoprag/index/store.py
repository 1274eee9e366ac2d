"""An index directory on disk: manifest, documents and chunks, the bm25s arrays, optional vectors.

Layout of ``out_dir`` (format 2)::

    manifest.json     what was built, from what, with which config, in how long (IndexManifest)
    corpus.sqlite     documents and chunks in corpus order, looked up by position or id
                      (:mod:`hoprag.index.corpus_db`)
    chunk_doc.npy     int32 per chunk: its document's position
    chunk_acl.npy     int16 per chunk: its document's ``acl`` class, a code into manifest ``acl_classes``
    doc_acl.npy       int16 per document: the same codes
    bm25/             bm25s.BM25.save output (the CSC score matrix and the vocabulary)
    vectors.npy       only with ``IndexConfig(dense=True)``: float32 (chunks x dim) unit vectors,
                      row i for chunk i, embedded by the embedder the manifest's ``dense`` names

Loading reads the manifest and memory-maps the arrays; documents and chunks are read lazily, when
asked for, so a million-passage index opens in the time its arrays take. The corpus is never
re-tokenised or re-embedded (only queries are), and corpus statistics come from the BM25 matrix
(:mod:`hoprag.index.term_stats`). Building streams the corpus: each document is serialised once
(the stored record and the corpus hash share it), chunked, written and tokenised in batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.errors import ConfigError, EmptyCorpusError, HopragError, IndexLoadError, InputError
from hoprag.index.analysis import ANALYSIS_DIR, save_bm25_state
from hoprag.index.base import Retriever
from hoprag.index.bm25 import BATCH, BM25Retriever, index_text
from hoprag.index.contract import Index, IndexStats
from hoprag.index.corpus_digest import CorpusDigest
from hoprag.index.corpus_db import CHUNK_ACL, CHUNK_DOC, DB_FILE, DOC_ACL, CorpusDB, CorpusWriter, canonical_record
from hoprag.index.corpus_views import StoredChunks, StoredDocuments
from hoprag.index.ann import ANN_FILE, build_ann, open_ann
from hoprag.index.dense import DenseRetriever
from hoprag.index.entity_graph import GRAPH_DIR, EntityGraph, open_graph
from hoprag.index.graph_worker import GraphWorker
from hoprag.index.embedders import Embedder, make_embedder
from hoprag.index import staging
from hoprag.index.tokenize import Tokenizer
from hoprag.index.hybrid import HybridRetriever
from hoprag.index.npy_map import all_finite, load_npy
from hoprag.index.manifest import FORMAT_VERSION, REBUILD_FIX, VECTORS, BuildStats, DenseInfo, IndexConfig, IndexManifest, IndexUpdate, MANIFEST, config_hash, corpus_hash, peak_rss_mb, read_manifest, write_manifest
from hoprag.ingest.chunking import chunk_document
from hoprag.records import Document

__all__ = [
    "FORMAT_VERSION",
    "BuildStats",
    "DenseInfo",
    "IndexConfig",
    "IndexManifest",
    "MODES",
    "LoadedIndex",
    "build_index",
    "config_hash",
    "corpus_hash",
    "load_index",
]

BM25_DIR = "bm25"
#: every name an index directory may hold (``run.json``: the gate run stamp; the JSONL files: format
#: 1); a directory holding only these, but no manifest, is an interrupted build, safe to replace
OWN_FILES = frozenset({MANIFEST, MANIFEST + ".tmp", DB_FILE, CHUNK_DOC, CHUNK_ACL, DOC_ACL, BM25_DIR, VECTORS, ANN_FILE, GRAPH_DIR, "run.json",
                       ANALYSIS_DIR,
                       "documents.jsonl", "chunks.jsonl"})
#: retrieval modes of :meth:`LoadedIndex.retriever`
MODES = ("bm25", "dense", "hybrid")
DENSE_FIX = "rebuild it with dense vectors: `hoprag index CORPUS --out DIR --dense` (needs pip install 'hoprag[dense]')"

Progress = Callable[[str, int, int], None]


class LoadedIndex(Index):
    """An index read back from disk (:class:`~hoprag.index.contract.Index`): manifest, documents and
    chunks by id (read-only mappings, looked up lazily), the bm25 retriever and, when built with
    ``dense=True``, the chunk vectors (the embedder is loaded on first use)."""

    def __init__(
        self,
        directory: Path,
        manifest: IndexManifest,
        documents: StoredDocuments,
        chunks: StoredChunks,
        bm25: BM25Retriever,
        vectors: np.ndarray | None = None,
    ) -> None:
        self.directory = directory
        self.manifest = manifest
        self.documents = documents
        self.chunks = chunks
        self.bm25 = bm25
        self.vectors = vectors
        self._dense: DenseRetriever | None = None
        self._vectors_finite = False  # checked on first dense use: a full pass over the vectors
        self._graph: EntityGraph | None = None

    @property
    def location(self) -> str:
        return str(self.directory)

    @property
    def graph(self) -> EntityGraph | None:
        """The entity graph (read on first use); ``None`` when the index was built without one.
        Callers of any index ask :meth:`entity_graph`, which returns this."""
        if self._graph is None and self.manifest.graph is not None:
            # graph columns are the index's chunk positions: ids map through the index's own lookups
            db = self.chunks.db
            self._graph = open_graph(self.directory, self.manifest.graph, self.manifest.chunk_count,
                                     chunk_id=db.chunk_id, chunk_position=db.chunk_position)
        return self._graph

    def entity_graph(self) -> EntityGraph | None:
        return self.graph

    @property
    def has_dense(self) -> bool:
        return self.vectors is not None and self.manifest.dense is not None

    def stats(self) -> IndexStats:
        m = self.manifest
        return IndexStats(store="local", location=self.location, artifact_id=m.artifact_id, documents=m.document_count,
                          chunks=m.chunk_count, dense=self.has_dense, graph=m.graph is not None)

    def close(self) -> None:
        """Nothing to release: the arrays are memory-mapped or read, and each thread's read-only
        connection to the corpus file closes with the process."""

    def dense(self, *, min_score: float | None = None, backend: str | None = None, mode: str = "dense") -> DenseRetriever:
        """The dense retriever over the saved vectors; :class:`IndexLoadError` if there are none.

        ``backend`` ``None`` searches the way the index was built (its HNSW graph when it has one).
        """
        info = self.manifest.dense
        if self.vectors is None or info is None:
            raise IndexLoadError(
                f"{self.directory}: retrieval mode '{mode}' is not available in this index (valid: bm25); "
                f"it was built without dense vectors. Fix: {DENSE_FIX}"
            )
        if not self._vectors_finite:
            # a NaN vector scores NaN against every query and never ranks: refused like a damaged file
            # (40 ms for 100k x 384 floats, once per process, at first use rather than at every load)
            if not all_finite(self.vectors):
                raise IndexLoadError(f"{self.directory}: {info.file} holds vectors that are not finite (NaN or "
                                     f"infinity): the file is damaged. Fix: {DENSE_FIX}")
            self._vectors_finite = True
        backend = backend or ("hnsw" if info.ann is not None else "exact")
        if self._dense is not None and self._dense.min_score == min_score and self._dense.backend == backend:
            return self._dense
        embedder = self._embedder(info)
        retriever = DenseRetriever(self.chunks.in_order(), self.documents, embedder, self.vectors,
                                   min_score=min_score, backend=backend,  # type: ignore[arg-type]
                                   ann=open_ann(self.directory, info.ann) if backend == "hnsw" else None)
        if min_score is None:
            self._dense = retriever
        return retriever

    def _embedder(self, info: DenseInfo) -> Embedder:
        embedder = make_embedder(info.embedder)
        found = embedder.info()
        if found.get("weights_sha256") != info.weights_sha256 or embedder.dim != info.dim:
            raise IndexLoadError(
                f"{self.directory}: the vectors were made by {info.model_id} (weights sha256 "
                f"{info.weights_sha256[:12]}…, {info.dim} dims) but the installed '{info.embedder}' model "
                f"differs ({str(found.get('weights_sha256'))[:12]}…, {embedder.dim} dims); query and corpus "
                f"vectors would not be comparable. Fix: {DENSE_FIX}"
            )
        return embedder

    def retriever(self, mode: str = "bm25", *, fusion: str = "rrf", **options: Any) -> Retriever:
        """The retriever for ``mode`` (``bm25``, ``dense`` or ``hybrid``).

        ``fusion`` (``rrf`` or ``weighted``) and ``options`` (e.g. ``weights``, ``min_depth``) go to
        :class:`~hoprag.index.hybrid.HybridRetriever`; ``dense`` and ``hybrid`` need an index built
        with dense vectors, and say how to rebuild one otherwise.
        """
        if mode == "bm25":
            return self.bm25
        if mode == "dense":
            return self.dense(**options)
        if mode == "hybrid":
            return HybridRetriever(self.bm25, self.dense(mode=mode), fusion=fusion, **options)  # type: ignore[arg-type]
        raise ConfigError(f"unknown retrieval mode '{mode}'; valid: {', '.join(MODES)}")


def build_index(
    documents: Iterable[Document],
    out_dir: str | Path,
    config: IndexConfig | None = None,
    *,
    progress: Progress | None = None,
    executor: Any = None,
    history: Sequence[IndexUpdate] = (),
) -> IndexManifest:
    """Chunk, index and write ``documents`` to ``out_dir``; returns the manifest written.

    ``documents`` is read once, in order (an iterator works: nothing but the index's own arrays is
    kept in memory). The index is built in a directory beside ``out_dir`` and renamed into place
    once complete (:mod:`hoprag.index.staging`): an existing index there is replaced only by a
    finished one, and a build that fails or is killed leaves it loadable. ``out_dir`` must not be a
    file, nor a directory holding anything but an index.

    ``progress(stage, done, total)`` is called for stages ``chunk`` (documents), ``tokenize``
    (chunks, one batch at a time), ``index``, ``embed`` (only with ``config.dense``) and ``write``.
    ``executor`` (:mod:`hoprag.executors`) embeds the chunks in shards for ``config.dense``
    (:mod:`hoprag.index.embed_shards`: the same vector bytes as in one process). ``history`` is the
    change log the manifest starts with (an update applied by rebuilding, :mod:`hoprag.index.update`).
    """
    config = config or IndexConfig()
    out = Path(out_dir)
    staging.check_target(out, manifest=MANIFEST, own_files=OWN_FILES)
    stage = staging.open_stage(out)
    graph = GraphWorker() if config.graph else None
    try:
        manifest = _build_into(stage, documents, config, progress, target=out, executor=executor, graph=graph,
                               history=history)
    except BaseException:
        if graph is not None:
            graph.abort()  # a worker building the graph stops with the build
        staging.discard(stage)
        raise
    staging.commit(stage, out)
    if progress:
        progress("write", 3, 3)
    return manifest


def _build_into(
    out: Path, documents: Iterable[Document], config: IndexConfig, progress: Progress | None, *, target: Path,
    executor: Any = None, graph: GraphWorker | None = None, history: Sequence[IndexUpdate] = (),
) -> IndexManifest:
    """Stream the corpus into the (new, empty) directory ``out``: rows, tokens, then arrays, manifest last."""
    started = time.perf_counter()
    total = len(documents) if hasattr(documents, "__len__") else 0  # type: ignore[arg-type]
    writer = CorpusWriter(out)
    try:
        builder = BM25Retriever.builder(config.bm25, config.tokenizer())
        digest = CorpusDigest()  # its state is saved: an update that only adds resumes it
        seen: set[str] = set()
        acl: dict[str, int] = {}
        texts: list[str] = []
        dense_texts: list[str] = []
        for i, doc in enumerate(documents, start=1):
            if doc.id in seen:
                raise InputError(f"duplicate document id '{doc.id}'", field="id", fix="make document ids unique")
            seen.add(doc.id)
            record = canonical_record(doc)  # one serialisation: stored, and digested for the corpus hash
            digest.add(record)
            chunks = chunk_document(doc, config.chunk)
            writer.add(doc, record, chunks)
            if graph is not None:
                graph.add(chunks, doc.title)
            acl[doc.acl] = acl.get(doc.acl, 0) + 1
            texts.extend(index_text(c, doc.title) for c in chunks)
            if len(texts) >= BATCH:
                builder.add(texts)
                dense_texts.extend(texts if config.dense else ())
                texts = []
                if progress:
                    progress("chunk", i, total or i)
                    progress("tokenize", builder.count, builder.count)
        builder.add(texts)
        dense_texts.extend(texts if config.dense else ())
        del texts, seen
        if progress:
            progress("chunk", writer.documents, writer.documents)
            progress("tokenize", builder.count, builder.count)
        if not writer.documents:
            raise EmptyCorpusError("the corpus has no documents", source=str(target),
                                   fix="give at least one document with 'id' and 'text'")
        if not writer.chunks:
            raise EmptyCorpusError(
                f"all {writer.documents} documents have empty text, nothing to index",
                fix="give documents with non-empty 'text'",
            )
        if graph is not None:
            graph.submit(out)  # a worker builds the graph while the BM25 arrays are made
        if progress:
            progress("index", 0, writer.chunks)
        model = builder.finish()
        save_bm25_state(out, builder.tf_csc, builder.lengths)  # what an update recomputes the scores from
        del builder
        if progress:
            progress("index", writer.chunks, writer.chunks)
            progress("write", 0, 3)
        acl_classes = dict(sorted(acl.items()))
        writer.close(list(acl_classes))
    except BaseException:
        writer.abort()
        raise
    if progress:
        progress("write", 1, 3)
    model.save(out / BM25_DIR)
    config.tokenizer().save(out / BM25_DIR)  # queries are tokenised without importing bm25s
    del model
    graph_info = graph.finish(out) if graph is not None else None
    graph_peak = graph.peak_rss_mb if graph is not None else None
    dense_info: DenseInfo | None = None
    if config.dense:
        from hoprag.index.embed_shards import embed_corpus

        vectors, embedder = embed_corpus(config.embedder, dense_texts, executor=executor, progress=progress)
        found = embedder.info()
        dense_info = DenseInfo(embedder=embedder.name, model_id=str(found["model_id"]), dim=embedder.dim,
                               count=writer.chunks, weights_sha256=str(found["weights_sha256"]))
        with (out / VECTORS).open("wb") as handle:
            np.save(handle, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
        ann_info = build_ann(vectors, out, config.ann)
        if ann_info is not None:
            dense_info = dense_info.model_copy(update={"ann": ann_info})
    if progress:
        progress("write", 2, 3)
    manifest = write_manifest(
        out, config, documents=writer.documents, chunks=writer.chunks, corpus_hash=digest.save(out),
        dense=dense_info, acl_classes=acl_classes, graph=graph_info,
        build=BuildStats(seconds=round(time.perf_counter() - started, 3), peak_rss_mb=round(peak_rss_mb(), 1),
                         graph_worker_peak_rss_mb=graph_peak),
        updates=list(history),
    )
    return manifest


def load_index(directory: str | Path, *, mmap: bool = True) -> LoadedIndex:
    """Open an index directory written by :func:`build_index`; problems raise :class:`IndexLoadError`.

    Only the manifest and the BM25 vocabulary are parsed; the score matrix and the vectors are
    memory-mapped (``mmap=False`` reads them into memory), documents and chunks read on demand."""
    path = Path(directory)
    fix = REBUILD_FIX
    manifest = read_manifest(path)
    db = CorpusDB(path, documents=manifest.document_count, chunks=manifest.chunk_count,
                  acl_classes=list(manifest.acl_classes), fix=fix)
    documents, chunks = StoredDocuments(db), StoredChunks(db)
    try:
        tokenizer = Tokenizer.load(path / BM25_DIR, manifest.config.stemmer, manifest.config.stopwords,
                                   fold_accents=manifest.config.fold_accents)
        bm25 = BM25Retriever.load(path / BM25_DIR, chunks.in_order(), documents, manifest.config.bm25,
                                  tokenizer=tokenizer, mmap=mmap)
    except (OSError, ValueError, KeyError, HopragError) as exc:
        raise IndexLoadError(f"{path}: bm25 index unreadable ({exc}). Fix: {fix}") from None
    chunks.term_stats = bm25.term_stats()
    vectors = _load_vectors(path, manifest, mmap=mmap) if manifest.dense is not None else None
    return LoadedIndex(path, manifest, documents, chunks, bm25, vectors)


def _load_vectors(path: Path, manifest: IndexManifest, *, mmap: bool) -> np.ndarray:
    info = manifest.dense
    file = path / (info.file if info else VECTORS)
    try:
        vectors = load_npy(file, mmap=mmap)
    except (OSError, ValueError) as exc:
        raise IndexLoadError(f"{path}: dense vectors unreadable ({exc}). Fix: {DENSE_FIX}") from None
    expected = (manifest.chunk_count, info.dim if info else -1)
    if vectors.dtype != np.float32 or vectors.shape != expected:
        raise IndexLoadError(
            f"{path}: {file.name} holds {vectors.dtype} {tuple(vectors.shape)}, the manifest says float32 "
            f"{expected}. Fix: {DENSE_FIX}"
        )
    return vectors
