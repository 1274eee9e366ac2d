"""What an index directory says about itself: the build config (whose hash names the build), the
dense and build records, and the manifest that ties them to the corpus they were built from."""

from __future__ import annotations

import hashlib
import json
import resource
import sys
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hoprag.errors import IndexLoadError, InputError
from hoprag.files import read_text

from hoprag.index.ann import AnnInfo
from hoprag.index.bm25 import BM25Params
from hoprag.index.corpus_db import canonical_record
from hoprag.index.entity_graph import GraphInfo
from hoprag.index.tokenize import Tokenizer
from hoprag.ingest.chunking import ChunkConfig
from hoprag.records import Document

__all__ = ["FORMAT_VERSION", "VECTORS", "BuildStats", "DenseInfo", "IndexConfig", "IndexManifest", "IndexUpdate", "config_hash", "corpus_hash", "peak_rss_mb"]

#: 2: documents and chunks in ``corpus.sqlite`` with numpy columns (1: two JSONL files parsed whole)
FORMAT_VERSION = 2
VECTORS = "vectors.npy"


class IndexConfig(BaseModel):
    """Everything that decides what an index contains; its hash names the build."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk: ChunkConfig = Field(default_factory=ChunkConfig)
    bm25: BM25Params = Field(default_factory=BM25Params)
    stemmer: str | None = "english"
    stopwords: str | None = "en"
    #: BM25 analyses text in base letters ('Aschenbrodel' finds 'Aschenbrödel'; hoprag.ingest.text.fold_accents).
    #: A manifest written before the field existed reads as False: such an index was built unfolded
    fold_accents: bool = True
    dense: bool = False
    embedder: Literal["minilm", "static"] = "minilm"
    #: dense search: exact, an HNSW graph, or auto (the graph from 50,000 chunks; hoprag.index.ann)
    ann: Literal["auto", "exact", "hnsw"] = "auto"
    #: the entity graph of :mod:`hoprag.index.entity_graph`, for the graph hop
    graph: bool = True

    def tokenizer(self) -> Tokenizer:
        return Tokenizer(stemmer=self.stemmer, stopwords=self.stopwords, fold_accents=self.fold_accents)


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
    #: the HNSW graph built beside the vectors, with its recall@10 vs exact; None: exact search
    ann: AnnInfo | None = None


class BuildStats(BaseModel):
    """What a build cost: wall-clock seconds and the building process's peak resident memory, and
    the entity graph's worker process's when the graph was built in one (the two ran at once: the
    build's peak is at most their sum)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seconds: float
    peak_rss_mb: float
    graph_worker_peak_rss_mb: float | None = None


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere


class IndexUpdate(BaseModel):
    """One entry of the manifest's change log: what an update (``hoprag index --update``) changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: str
    added: int
    replaced: int
    deleted: int
    #: documents given again unchanged (a no-op: they keep their place)
    unchanged: int = 0
    #: the corpus hash before the update (the manifest's ``corpus_hash`` is the one after)
    previous_corpus_hash: str
    previous_artifact_id: str
    seconds: float
    #: how it was applied: ``delta`` (the new chunks analysed, the rest recomputed from ``analysis/``)
    #: or ``rebuild`` (an index without ``analysis/``, rebuilt from its stored documents)
    method: Literal["delta", "rebuild"] = "delta"


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
    #: documents per ``acl`` class as the corpus labels them (``""`` = no class); see :mod:`hoprag.security.acl`
    acl_classes: dict[str, int] = Field(default_factory=dict)
    #: the entity graph's counts, size and build time (``None``: built with ``graph=False``)
    graph: GraphInfo | None = None
    build: BuildStats | None = None
    #: the change log: every update applied since the index was first built, oldest first
    updates: list[IndexUpdate] = Field(default_factory=list)

    @field_validator("config", mode="before")
    @classmethod
    def _unfolded_before_the_field(cls, config: Any) -> Any:
        """An index built before the analyser recorded ``fold_accents`` did not fold (nor must its queries)."""
        if isinstance(config, dict) and "fold_accents" not in config:
            return {**config, "fold_accents": False}
        return config


#: the manifest's file name inside an index directory
MANIFEST = "manifest.json"


def write_manifest(directory: Path, config: IndexConfig, *, documents: int, chunks: int, corpus_hash: str,
                   **fields: Any) -> IndexManifest:
    """A new artifact's manifest (this version, the config's hash, a fresh artifact id, the time now),
    written into ``directory``; ``fields`` are the rest (dense, acl classes, graph, build, updates)."""
    from hoprag import __version__

    manifest = IndexManifest(
        hoprag_version=__version__, config=config, config_hash=config_hash(config), document_count=documents,
        chunk_count=chunks, corpus_hash=corpus_hash,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        artifact_id=uuid.uuid4().hex, **fields,
    )
    (directory / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return manifest


def config_hash(config: IndexConfig) -> str:
    """sha256 of the canonical (sorted-key, compact) config JSON, first 16 hex digits.

    Without dense vectors the embedder name decides nothing, so it is left out (and BM25-only
    builds keep the hash they had before dense retrieval existed).
    """
    payload = config.model_dump(mode="json")
    if not config.dense:
        payload.pop("dense")
        payload.pop("embedder")
        payload.pop("ann")
    if config.graph:  # the default: hashes of indexes built before the graph existed stay as they were
        payload.pop("graph")
    if not config.fold_accents:  # what every index built before the field did: their hashes stay as they were
        payload.pop("fold_accents")
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def corpus_hash(documents: Iterable[Document]) -> str:
    """sha256 over every document's canonical JSON, in order (order matters: it fixes chunk order)."""
    digest = hashlib.sha256()
    for doc in documents:
        _digest(digest, canonical_record(doc))
    return digest.hexdigest()


def _digest(digest: Any, record: str) -> None:
    digest.update(record.encode("utf-8"))
    digest.update(b"\n")


#: what fixes an index that cannot be opened: it is rebuilt, never edited by hand
REBUILD_FIX = "run `hoprag index CORPUS --out DIR` to (re)build it"


def read_manifest(directory: str | Path) -> IndexManifest:
    """The manifest of the index at ``directory``, checked: a directory holding one, of this format, whose
    config hashes to the recorded hash; :class:`~hoprag.errors.IndexLoadError` with the fix otherwise.
    The one reader, for opening an index and for updating one."""
    path = Path(directory)
    fix = REBUILD_FIX
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
        raise IndexLoadError(f"{manifest_path}: unreadable manifest ({_manifest_problem(exc)}). Fix: {fix}") from None
    if manifest.format_version != FORMAT_VERSION:
        raise IndexLoadError(
            f"{path}: index format {manifest.format_version}, this hoprag reads {FORMAT_VERSION}. "
            f"Fix: rebuild it from its corpus with `hoprag index CORPUS --out {path}`"
        )
    recomputed = config_hash(manifest.config)
    if recomputed != manifest.config_hash:
        raise IndexLoadError(
            f"{manifest_path}: config_hash {manifest.config_hash} does not match the config it records "
            f"(which hashes to {recomputed}): the manifest was edited, or written by an incompatible hoprag. "
            f"Fix: rebuild the index with `hoprag index CORPUS --out {path}`"
        )
    return manifest


def _reason(exc: InputError) -> str:
    """An input error's message without its fix: an index file is rebuilt, not edited by hand."""
    text = str(exc)
    return text[: -len(f". Fix: {exc.fix}")] if exc.fix and text.endswith(f". Fix: {exc.fix}") else text


def _manifest_problem(exc: Exception) -> str:
    """What is wrong with a manifest that did not validate, in plain words (no pydantic phrasing)."""
    from hoprag.validation_messages import describe, is_validation_error

    if is_validation_error(exc):
        return describe(exc, what="manifest")[0]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
