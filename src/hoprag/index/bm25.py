"""BM25 over chunks with bm25s: the sparse retriever and the baseline every other one must beat.

Each chunk is indexed as ``title + "\\n" + text``, because titles carry the entities multi-hop
questions bridge on. Scoring is bm25s's (``method="lucene"``: idf ``ln(1 + (N - df + 0.5) /
(df + 0.5))``, tf ``tf / (tf + k1 * (1 - b + b * |d| / avgdl))``; Kamphuis et al., ECIR 2020).

The hot path tokenises the query once, scores chunks from the matrix (a large index scores only
the chunks that can reach the top k, :meth:`BM25Arrays.candidates`; a small one every chunk), leaves
out excluded and filtered-out chunks, and selects the top k among chunks with a non-zero score. Filtering
before selection keeps ``filters``, ``exclude`` and ``clearance`` exact (no over-fetch that could
run short, and nothing above the caller's clearance is ever a candidate).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Callable, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hoprag.security.acl import Clearance
from hoprag.security.clearance import resolve_clearance
from hoprag.errors import ConfigError
from hoprag.index.base import Filters
from hoprag.index.bm25_arrays import BM25Arrays
from hoprag.index.bm25_build import BM25Builder
from hoprag.index.chunk_table import ChunkTable
from hoprag.index.term_stats import TermStats
from hoprag.index.tokenize import Tokenizer
from hoprag.records import Chunk, Document, Hit

__all__ = ["BM25Params", "BM25Retriever", "index_text"]

Progress = Callable[[str, int, int], None]
BATCH = 10_000  # chunks tokenised at a time


class BM25Params(BaseModel):
    """bm25s scoring parameters (``delta`` is used by ``bm25l`` and ``bm25+`` only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
    k1: float = Field(1.5, ge=0.0)
    b: float = Field(0.75, ge=0.0, le=1.0)
    delta: float = Field(0.5, ge=0.0)


def index_text(chunk: Chunk, title: str) -> str:
    """What BM25 sees for one chunk: the document title, a newline, the chunk text."""
    return f"{title}\n{chunk.text}" if title else chunk.text


class BM25Retriever:
    """A bm25s index over chunks, with titles and document fields for hits and filters."""

    name = "bm25"

    def __init__(
        self,
        chunks: Sequence[Chunk],
        documents: Mapping[str, Document] | Iterable[Document] | None = None,
        params: BM25Params | None = None,
        *,
        tokenizer: Tokenizer | None = None,
        model: BM25Arrays | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Build the index from ``chunks`` (or wrap an already built/loaded ``model``)."""
        self.params = params or BM25Params()
        self.tokenizer = tokenizer or Tokenizer()
        self.table = ChunkTable(chunks, documents, kind="BM25")
        self._chunks = self.table.chunks
        self.model = model if model is not None else self._build(progress)
        if self.model.scores["num_docs"] != len(self._chunks):
            raise ConfigError(
                f"bm25 index holds {self.model.scores['num_docs']} chunks but {len(self._chunks)} were given"
            )
        self._vocab: dict[str, int] = self.model.vocab_dict

    def _build(self, progress: Progress | None) -> BM25Arrays:
        n = len(self._chunks)
        builder = self.builder(self.params, self.tokenizer)
        docs = self.table.documents or {}
        for lo in range(0, n, BATCH):
            if progress:
                progress("tokenize", lo, n)
            batch = self._chunks[lo : lo + BATCH]
            builder.add([index_text(c, docs[c.doc_id].title if c.doc_id in docs else "") for c in batch])
        if progress:
            progress("tokenize", n, n)
            progress("index", 0, n)
        model = builder.finish()
        if progress:
            progress("index", n, n)
        return model

    @staticmethod
    def builder(params: BM25Params, tokenizer: Tokenizer) -> BM25Builder:
        """A streaming builder of this retriever's bm25s model (see :mod:`hoprag.index.bm25_build`)."""
        return BM25Builder(tokenizer, method=params.method, k1=params.k1, b=params.b, delta=params.delta)

    def term_stats(self) -> TermStats:
        """Document frequencies of the index's terms, from the score matrix (no pass over the text)."""
        scores = self.model.scores
        return TermStats(self._vocab, scores["indptr"], scores["indices"], self.tokenizer, count=len(self._chunks))

    # --- persistence ------------------------------------------------------------------------

    def save(self, directory: str | Path) -> None:
        """Write the bm25s arrays and vocabulary (chunks and documents are stored by the caller)."""
        self.model.save(directory)
        self.tokenizer.save(Path(directory))

    @classmethod
    def load(
        cls,
        directory: str | Path,
        chunks: Sequence[Chunk],
        documents: Mapping[str, Document] | Iterable[Document] | None = None,
        params: BM25Params | None = None,
        *,
        tokenizer: Tokenizer | None = None,
        mmap: bool = False,
    ) -> BM25Retriever:
        """Wrap a saved bm25s index; ``chunks`` must be in the order they were indexed (a loaded
        index passes its lazy :class:`~hoprag.index.corpus_views.ChunkSequence`). With ``mmap`` the
        score arrays are memory-mapped, not read."""
        model = BM25Arrays.load(directory, mmap=mmap)
        return cls(chunks, documents, params, tokenizer=tokenizer, model=model)

    # --- retrieval --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._chunks)

    @property
    def chunks(self) -> Sequence[Chunk]:
        return self._chunks

    def token_ids(self, query: str) -> list[int]:
        """Vocabulary ids of the query's tokens (unknown tokens dropped, duplicates kept)."""
        vocab = self._vocab
        return [vocab[t] for t in self.tokenizer.query(query) if t in vocab]

    def get_scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for ``query`` (float32, chunk order); zeros if no term is known."""
        ids = self.token_ids(query)
        if not ids:
            return np.zeros(len(self._chunks), dtype=np.float32)
        return self.model.get_scores_from_ids(ids)

    def retrieve(
        self,
        query: str,
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[Hit]:
        cleared = resolve_clearance(clearance)
        if k <= 0:
            return []
        ids = self.token_ids(query)
        if not ids:
            return []
        pruned = self.model.candidates(ids, k, self.table.allowed_at(filters, exclude, cleared))
        if pruned is not None:  # a large corpus: only the chunks that can reach the top k are scored
            positions, values = pruned
            nonzero = values != 0
            return self.table.top_of(positions[nonzero], values[nonzero], k, "bm25")
        scores = self.model.get_scores_from_ids(ids)
        keep = scores != 0  # a zero score means no query term: never a hit
        allowed = self.table.allowed(filters, exclude, cleared)
        if allowed is not None:
            keep &= allowed
        return self.table.top(scores, k, keep, "bm25")

    def retrieve_many(
        self,
        queries: Iterable[str],
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[list[Hit]]:
        """``retrieve`` for each query, same filters, exclusions and clearance."""
        return [self.retrieve(q, k, filters=filters, exclude=exclude, clearance=clearance) for q in queries]
