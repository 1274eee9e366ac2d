"""The per-chunk columns every retriever needs: ids, offsets and titles for Hits, filters, exclusions.

BM25 and dense retrieval score chunks in one fixed order; this table turns positions in that order
back into :class:`~hoprag.records.Hit` records, and filters, exclusions and a caller's clearance
(:mod:`hoprag.acl`) into boolean masks applied before top-k selection.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from hoprag.acl import Clearance, ClearancePolicy
from hoprag.errors import ConfigError, EmptyCorpusError, InputError
from hoprag.index.base import Filters
from hoprag.index.filters import FilterIndex
from hoprag.records import Chunk, Document, Hit


def as_document_map(documents: Mapping[str, Document] | Iterable[Document] | None) -> Mapping[str, Document] | None:
    if documents is None or isinstance(documents, Mapping):
        return documents
    return {d.id: d for d in documents}


class ChunkTable:
    """Columns over ``chunks`` in retrieval order; ``kind`` names the index in error messages."""

    def __init__(
        self,
        chunks: Sequence[Chunk],
        documents: Mapping[str, Document] | Iterable[Document] | None,
        *,
        kind: str,
    ) -> None:
        self.chunks = list(chunks)
        if not self.chunks:
            raise EmptyCorpusError("no chunks to index", fix="give documents with non-empty text (check the corpus path)")
        self.kind = kind
        self.documents = as_document_map(documents)
        docs = self.documents
        chunk_docs = [docs.get(c.doc_id) for c in self.chunks] if docs is not None else [None] * len(self.chunks)
        self.chunk_ids = [c.id for c in self.chunks]
        self.doc_ids = [c.doc_id for c in self.chunks]
        self.starts = [c.start for c in self.chunks]
        self.ends = [c.end for c in self.chunks]
        self.titles = [d.title if d is not None else "" for d in chunk_docs]
        self.pos = {cid: i for i, cid in enumerate(self.chunk_ids)}
        if len(self.pos) != len(self.chunk_ids):
            seen: set[str] = set()
            dup = next(c for c in self.chunk_ids if c in seen or seen.add(c))
            raise InputError(f"duplicate chunk id '{dup}'", field="id", fix="make document ids unique")
        self._filters = FilterIndex(chunk_docs)
        # a chunk without a known document counts as an unknown class: the highest level
        self._acl_classes = [d.acl if d is not None else None for d in chunk_docs]
        self._acl_ranks: dict[ClearancePolicy, np.ndarray] = {}
        self._acl_masks: dict[Clearance, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.chunks)

    def allowed(
        self, filters: Filters | None, exclude: Collection[str], clearance: Clearance | None = None
    ) -> np.ndarray | None:
        """Boolean mask of chunks that may be returned, or ``None`` when every chunk may."""
        mask: np.ndarray | None = None
        if filters:
            if self.documents is None:
                raise ConfigError(f"this {self.kind} index was built without documents, so it cannot filter")
            mask = self._filters.mask(filters).copy()
        if clearance is not None:
            cleared = self.clearance_mask(clearance)
            mask = cleared.copy() if mask is None else mask & cleared
        if exclude:
            drop = [self.pos[c] for c in exclude if c in self.pos]
            if drop:
                if mask is None:
                    mask = np.ones(len(self.chunks), dtype=bool)
                mask[drop] = False
        return mask

    def clearance_mask(self, clearance: Clearance) -> np.ndarray:
        """Chunks a caller at ``clearance`` may see (read-only; one rank column per policy, cached)."""
        if self.documents is None:
            raise ConfigError(
                f"this {self.kind} index was built without documents, so it cannot enforce a clearance; "
                "build it with the documents (their 'acl' classes)"
            )
        cached = self._acl_masks.get(clearance)
        if cached is not None:
            return cached
        policy = clearance.policy
        ranks = self._acl_ranks.get(policy)
        if ranks is None:
            top = len(policy.levels) - 1
            ranks = np.asarray(
                [policy.rank(acl) if acl is not None else top for acl in self._acl_classes], dtype=np.int16
            )
            ranks.setflags(write=False)
            self._acl_ranks[policy] = ranks
        mask = ranks <= clearance.rank
        mask.setflags(write=False)
        self._acl_masks[clearance] = mask
        return mask

    def top(self, scores: np.ndarray, k: int, keep: np.ndarray, retriever: str) -> list[Hit]:
        """The ``k`` best chunks among ``keep`` (a boolean mask), ties broken by chunk order.

        Selecting among the kept candidates only is much cheaper than partitioning the whole corpus
        when most chunks are out (BM25's many zero scores).
        """
        candidates = np.flatnonzero(keep)
        if candidates.size == 0 or k <= 0:
            return []
        values = scores[candidates]
        m = candidates.size
        if m > k:
            # keep everything tied with the k-th best, so the stable sort breaks ties by chunk order
            tied = values >= np.partition(values, m - k)[m - k]
            candidates, values = candidates[tied], values[tied]
        order = np.argsort(-values, kind="stable")[:k]
        return self.hits(candidates[order].tolist(), values[order].tolist(), retriever)

    def hits(self, positions: Sequence[int], scores: Sequence[float], retriever: str) -> list[Hit]:
        cids, dids, starts, ends, titles = self.chunk_ids, self.doc_ids, self.starts, self.ends, self.titles
        return [
            Hit(cids[i], dids[i], float(s), rank, retriever, starts[i], ends[i], titles[i])
            for rank, (i, s) in enumerate(zip(positions, scores), start=1)
        ]
