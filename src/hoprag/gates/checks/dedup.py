"""Duplicate documents: exact (normalised-text hash) and near (MinHash LSH over word shingles)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from hoprag.records import Document

__all__ = ["DedupReport", "find_duplicates", "normalise_text"]

_WORD = re.compile(r"\w+")


def normalise_text(text: str) -> str:
    """NFKC, case-folded, punctuation dropped, whitespace collapsed: what 'the same text' means."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


@dataclass(frozen=True)
class DedupReport:
    """``exact``/``near`` pairs are ``(duplicate_id, first_id)``; each duplicate is counted once."""

    documents: int
    exact: tuple[tuple[str, str], ...]
    near: tuple[tuple[str, str], ...]

    @property
    def duplicate_frac(self) -> float:
        return (len(self.exact) + len(self.near)) / self.documents if self.documents else 0.0


def _shingles(words: list[str], size: int) -> set[bytes]:
    if len(words) < size:
        return {" ".join(words).encode("utf-8")} if words else set()
    return {" ".join(words[i:i + size]).encode("utf-8") for i in range(len(words) - size + 1)}


def find_duplicates(documents: Sequence[Document], *, threshold: float = 0.8, num_perm: int = 128,
                    shingle: int = 3, seed: int = 1) -> DedupReport:
    """Exact duplicates by hash, then near duplicates whose MinHash Jaccard estimate >= ``threshold``.

    Empty documents are skipped (the schema check reports them). Deterministic for a given seed.
    """
    from datasketch import MinHash, MinHashLSH

    first_by_hash: dict[str, str] = {}
    exact: list[tuple[str, str]] = []
    unique: list[tuple[str, list[str]]] = []
    for doc in documents:
        norm = normalise_text(doc.text)
        if not norm:
            continue
        digest = hashlib.sha256(norm.encode("utf-8")).hexdigest()
        if digest in first_by_hash:
            exact.append((doc.id, first_by_hash[digest]))
            continue
        first_by_hash[digest] = doc.id
        unique.append((doc.id, norm.split()))
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    kept: dict[str, MinHash] = {}
    near: list[tuple[str, str]] = []
    hashes = MinHash.bulk([list(_shingles(words, shingle)) for _, words in unique], num_perm=num_perm, seed=seed,
                          hashfunc=zlib.crc32)
    for (doc_id, _), mh in zip(unique, hashes):
        matches = lsh.query(mh)
        if matches:
            # the most similar earlier document, verified by the estimate (LSH only proposes)
            best = max(matches, key=lambda other: (mh.jaccard(kept[other]), other))
            if mh.jaccard(kept[best]) >= threshold:
                near.append((doc_id, best))
                continue
        lsh.insert(doc_id, mh)
        kept[doc_id] = mh
    return DedupReport(documents=len(documents), exact=tuple(exact), near=tuple(near))
