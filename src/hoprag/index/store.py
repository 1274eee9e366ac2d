"""An index directory on disk: manifest, documents, chunks and the bm25s arrays.

Layout of ``out_dir``::

    manifest.json     what was built, from what, with which config (IndexManifest)
    documents.jsonl   the documents, in corpus order
    chunks.jsonl      the chunks, in bm25 index order
    bm25/             bm25s.BM25.save output
    vectors.npy       only with ``IndexConfig(dense=True)``: float32 (chunks x dim) unit vectors,
                      row i for chunk i, embedded by the embedder the manifest's ``dense`` names

Loading reads the two JSONL files, the bm25s arrays and the vectors; the corpus is never
re-tokenised or re-embedded (only queries are).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hoprag import __version__
from hoprag.acl import acl_counts
from hoprag.errors import ConfigError, EmptyCorpusError, HopragError, IndexLoadError, InputError
from hoprag.files import read_text
from hoprag.index.base import Retriever
from hoprag.index.bm25 import BM25Params, BM25Retriever
from hoprag.index.dense import DenseRetriever, chunk_texts
from hoprag.index.embedders import Embedder, make_embedder
from hoprag.index import staging
from hoprag.index.hybrid import HybridRetriever
from hoprag.index.tokenize import Tokenizer
from hoprag.ingest.chunking import ChunkConfig, chunk_document
from hoprag.jsonl import read_jsonl_dicts
from hoprag.records import Chunk, Document

__all__ = [
    "FORMAT_VERSION",
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

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DOCUMENTS = "documents.jsonl"
CHUNKS = "chunks.jsonl"
BM25_DIR = "bm25"
VECTORS = "vectors.npy"
#: every name an index directory may hold (``run.json``: the gate run stamp); a directory holding
#: only these, but no manifest, is an interrupted build of the old in-place writer, safe to replace
OWN_FILES = frozenset({MANIFEST, MANIFEST + ".tmp", DOCUMENTS, CHUNKS, BM25_DIR, VECTORS, "run.json"})
#: retrieval modes of :meth:`LoadedIndex.retriever`
MODES = ("bm25", "dense", "hybrid")
DENSE_FIX = "rebuild it with dense vectors: `hoprag index CORPUS --out DIR --dense` (needs pip install 'hoprag[dense]')"

Progress = Callable[[str, int, int], None]


class IndexConfig(BaseModel):
    """Everything that decides what an index contains; its hash names the build."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk: ChunkConfig = Field(default_factory=ChunkConfig)
    bm25: BM25Params = Field(default_factory=BM25Params)
    stemmer: str | None = "english"
    stopwords: str | None = "en"
    dense: bool = False
    embedder: Literal["minilm", "static"] = "minilm"

    def tokenizer(self) -> Tokenizer:
        return Tokenizer(stemmer=self.stemmer, stopwords=self.stopwords)


class DenseInfo(BaseModel):
    """The manifest's record of the dense vectors: which model made them, and their shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    embedder: str
    model_id: str
    dim: int
    count: int
    file: str = VECTORS
    dtype: str = "float32"
    normalized: bool = True
    weights_sha256: str


class IndexManifest(BaseModel):
    """``manifest.json``: provenance of one built index."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = FORMAT_VERSION
    hoprag_version: str
    config: IndexConfig
    config_hash: str
    document_count: int
    chunk_count: int
    corpus_hash: str
    created_at: str
    artifact_id: str
    dense: DenseInfo | None = None
    #: documents per ``acl`` class as the corpus labels them (``""`` = no class); see :mod:`hoprag.acl`
    acl_classes: dict[str, int] = Field(default_factory=dict)


def config_hash(config: IndexConfig) -> str:
    """sha256 of the canonical (sorted-key, compact) config JSON, first 16 hex digits.

    Without dense vectors the embedder name decides nothing, so it is left out (and BM25-only
    builds keep the hash they had before dense retrieval existed).
    """
    payload = config.model_dump(mode="json")
    if not config.dense:
        payload.pop("dense")
        payload.pop("embedder")
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def corpus_hash(documents: Iterable[Document]) -> str:
    """sha256 over every document's canonical JSON, in order (order matters: it fixes chunk order)."""
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(json.dumps(doc.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


class LoadedIndex:
    """An index read back from disk: manifest, documents and chunks by id, the bm25 retriever and,
    when built with ``dense=True``, the chunk vectors (the embedder is loaded on first use)."""

    def __init__(
        self,
        directory: Path,
        manifest: IndexManifest,
        documents: dict[str, Document],
        chunks: dict[str, Chunk],
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

    @property
    def has_dense(self) -> bool:
        return self.vectors is not None and self.manifest.dense is not None

    def dense(self, *, min_score: float | None = None, backend: str = "exact", mode: str = "dense") -> DenseRetriever:
        """The dense retriever over the saved vectors; :class:`IndexLoadError` if there are none."""
        info = self.manifest.dense
        if self.vectors is None or info is None:
            raise IndexLoadError(
                f"{self.directory}: retrieval mode '{mode}' is not available in this index (valid: bm25); "
                f"it was built without dense vectors. Fix: {DENSE_FIX}"
            )
        if self._dense is not None and self._dense.min_score == min_score and self._dense.backend == backend:
            return self._dense
        embedder = self._embedder(info)
        retriever = DenseRetriever(list(self.chunks.values()), self.documents, embedder, self.vectors,
                                   min_score=min_score, backend=backend)  # type: ignore[arg-type]
        if min_score is None and backend == "exact":
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
) -> IndexManifest:
    """Chunk, index and write ``documents`` to ``out_dir``; returns the manifest written.

    ``executor`` (:mod:`hoprag.executors`) embeds the chunks in shards for ``config.dense``
    (:mod:`hoprag.index.embed_shards`: the same vector bytes as in one process).

    The index is built in a directory beside ``out_dir`` and renamed into place once complete
    (:mod:`hoprag.index.staging`): an existing index there is replaced only by a finished one, and
    a build that is killed leaves it loadable. ``out_dir`` must not be a file, nor a directory
    holding anything but an index.

    ``progress(stage, done, total)`` is called for stages ``chunk``, ``tokenize``, ``index``,
    ``embed`` (only with ``config.dense``) and ``write``.
    """
    config = config or IndexConfig()
    docs = list(documents)
    out = Path(out_dir)
    staging.check_target(out, manifest=MANIFEST, own_files=OWN_FILES)
    if not docs:
        raise EmptyCorpusError("the corpus has no documents", source=str(out),
                               fix="give at least one document with 'id' and 'text'")
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise InputError(
                f"duplicate document id '{doc.id}'", field="id", fix="make document ids unique"
            )
        seen.add(doc.id)
    stage = staging.open_stage(out)
    try:
        manifest = _build_into(stage, docs, config, progress, executor)
    except BaseException:
        staging.discard(stage)
        raise
    staging.commit(stage, out)
    if progress:
        progress("write", 3, 3)
    return manifest


def _build_into(out: Path, docs: list[Document], config: IndexConfig, progress: Progress | None,
                executor: Any = None) -> IndexManifest:
    """Chunk, index and write everything into the (new, empty) directory ``out``, manifest last."""
    chunks: list[Chunk] = []
    for i, doc in enumerate(docs, start=1):
        chunks.extend(chunk_document(doc, config.chunk))
        if progress and (i % 1000 == 0 or i == len(docs)):
            progress("chunk", i, len(docs))
    if not chunks:
        raise EmptyCorpusError(
            f"all {len(docs)} documents have empty text, nothing to index",
            fix="give documents with non-empty 'text'",
        )
    doc_map = {d.id: d for d in docs}
    retriever = BM25Retriever(chunks, doc_map, config.bm25, tokenizer=config.tokenizer(), progress=progress)
    vectors: np.ndarray | None = None
    dense_info: DenseInfo | None = None
    if config.dense:
        from hoprag.index.embed_shards import embed_corpus

        vectors, embedder = embed_corpus(config.embedder, chunk_texts(chunks, doc_map), executor=executor,
                                         progress=progress)
        found = embedder.info()
        dense_info = DenseInfo(embedder=embedder.name, model_id=str(found["model_id"]), dim=embedder.dim,
                               count=len(chunks), weights_sha256=str(found["weights_sha256"]))
    if progress:
        progress("write", 0, 3)
    _write_jsonl(out / DOCUMENTS, (d.to_dict() for d in docs))
    _write_jsonl(out / CHUNKS, (c.to_dict() for c in chunks))
    if progress:
        progress("write", 1, 3)
    retriever.save(out / BM25_DIR)
    if vectors is not None:
        with (out / VECTORS).open("wb") as handle:
            np.save(handle, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    if progress:
        progress("write", 2, 3)
    manifest = IndexManifest(
        hoprag_version=__version__,
        config=config,
        config_hash=config_hash(config),
        document_count=len(docs),
        chunk_count=len(chunks),
        corpus_hash=corpus_hash(docs),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        artifact_id=uuid.uuid4().hex,
        dense=dense_info,
        acl_classes=acl_counts(docs),
    )
    (out / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return manifest


def load_index(directory: str | Path, *, mmap: bool = False) -> LoadedIndex:
    """Read an index directory written by :func:`build_index`; problems raise :class:`IndexLoadError`."""
    path = Path(directory)
    fix = "run `hoprag index CORPUS --out DIR` to (re)build it"
    if path.exists() and not path.is_dir():  # e.g. the corpus file or the cases file, given in its place
        raise IndexLoadError(f"{path}: is a file, not an index directory. Fix: pass the directory "
                             f"`hoprag index` wrote (its --out), or {fix}")
    if not path.is_dir():
        raise IndexLoadError(f"{path}: index directory not found. Fix: {fix}")
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise IndexLoadError(f"{path}: no {MANIFEST} (not an index, or an interrupted build). Fix: {fix}")
    try:
        manifest = IndexManifest.model_validate_json(read_text(manifest_path, "index manifest"))
    except InputError as exc:
        raise IndexLoadError(f"{manifest_path}: unreadable manifest ({_reason(exc)}). Fix: {fix}") from None
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise IndexLoadError(f"{manifest_path}: unreadable manifest ({first}). Fix: {fix}") from None
    if manifest.format_version != FORMAT_VERSION:
        raise IndexLoadError(
            f"{path}: index format {manifest.format_version}, this hoprag reads {FORMAT_VERSION}. Fix: {fix}"
        )
    recomputed = config_hash(manifest.config)
    if recomputed != manifest.config_hash:
        raise IndexLoadError(
            f"{manifest_path}: config_hash {manifest.config_hash} does not match the config it records "
            f"(which hashes to {recomputed}): the manifest was edited, or written by an incompatible hoprag. "
            f"Fix: rebuild the index with `hoprag index CORPUS --out {path}`"
        )
    try:
        documents = [Document.from_dict(d) for d in _read_jsonl(path / DOCUMENTS)]
        chunk_list = [Chunk.from_dict(c) for c in _read_jsonl(path / CHUNKS)]
    except InputError as exc:
        raise IndexLoadError(f"{path}: corrupted documents or chunks ({_reason(exc)}). Fix: {fix}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(f"{path}: corrupted documents or chunks ({exc!r}). Fix: {fix}") from None
    if len(documents) != manifest.document_count or len(chunk_list) != manifest.chunk_count:
        raise IndexLoadError(
            f"{path}: manifest says {manifest.document_count} documents / {manifest.chunk_count} chunks, "
            f"files hold {len(documents)} / {len(chunk_list)}. Fix: {fix}"
        )
    doc_map = {d.id: d for d in documents}
    try:
        bm25 = BM25Retriever.load(path / BM25_DIR, chunk_list, doc_map, manifest.config.bm25,
                                  tokenizer=manifest.config.tokenizer(), mmap=mmap)
    except (OSError, ValueError, KeyError, HopragError) as exc:
        raise IndexLoadError(f"{path}: bm25 index unreadable ({exc}). Fix: {fix}") from None
    vectors = _load_vectors(path, manifest, mmap=mmap) if manifest.dense is not None else None
    return LoadedIndex(path, manifest, doc_map, {c.id: c for c in chunk_list}, bm25, vectors)


def _load_vectors(path: Path, manifest: IndexManifest, *, mmap: bool) -> np.ndarray:
    info = manifest.dense
    file = path / (info.file if info else VECTORS)
    try:
        vectors = np.load(file, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise IndexLoadError(f"{path}: dense vectors unreadable ({exc}). Fix: {DENSE_FIX}") from None
    expected = (manifest.chunk_count, info.dim if info else -1)
    if vectors.dtype != np.float32 or vectors.shape != expected:
        raise IndexLoadError(
            f"{path}: {file.name} holds {vectors.dtype} {tuple(vectors.shape)}, the manifest says float32 "
            f"{expected}. Fix: {DENSE_FIX}"
        )
    return vectors


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def _reason(exc: InputError) -> str:
    """An input error's message without its fix: an index file is rebuilt, not edited by hand."""
    text = str(exc)
    return text[: -len(f". Fix: {exc.fix}")] if exc.fix and text.endswith(f". Fix: {exc.fix}") else text


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ValueError(f"{path.name} is missing")
    return [obj for _, obj in read_jsonl_dicts(path, "index file")]
