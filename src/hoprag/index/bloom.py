"""A Bloom filter of strings: a build-time summary of a set that answers "certainly not in it"
without a lookup (Bloom, CACM 1970).

The PostgreSQL store keeps one over its title link keys: most bridge candidates the engine tests
are not titles, and the filter answers those in the process, so only the few it cannot rule out
cost a round trip. ``m = 10`` bits per key and ``k = 7`` hashes give a false-positive rate of
about ``(1 - e^(-k/10))^k`` ≈ 0.8 %; there are no false negatives. Positions come from one
128-bit BLAKE2b digest split into ``h1``, ``h2`` (Kirsch & Mitzenmacher, 2006): ``(h1 + i·h2) mod
2^64 mod m`` for ``i < k``, the same in the numpy build and the per-key test.

A build that streams its corpus feeds :class:`BloomBuilder` a batch of keys at a time: it keeps
only each key's 16-byte digest (16 MB a million titles), and its filter equals
:meth:`BloomFilter.of` over all the keys at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

__all__ = ["BloomBuilder", "BloomFilter"]

BITS_PER_KEY = 10
HASHES = 7
_MASK = (1 << 64) - 1


def _pair(key: str) -> tuple[int, int]:
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=16).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little") | 1


class BloomFilter:
    """``key in filter``: ``False`` means certainly absent, ``True`` possibly present."""

    def __init__(self, bits: bytes, hashes: int = HASHES) -> None:
        self.bits = bytes(bits)
        self.hashes = hashes
        self.size = len(self.bits) * 8

    @classmethod
    def of(cls, keys: Iterable[str], *, bits_per_key: int = BITS_PER_KEY, hashes: int = HASHES) -> BloomFilter:
        """The filter of ``keys`` (duplicates count once)."""
        builder = BloomBuilder()
        builder.add(dict.fromkeys(keys))
        return builder.finish(bits_per_key=bits_per_key, hashes=hashes)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        h1, h2 = _pair(key)
        bits, size = self.bits, self.size
        for i in range(self.hashes):
            pos = ((h1 + i * h2) & _MASK) % size
            if not bits[pos >> 3] >> (pos & 7) & 1:
                return False
        return True


class BloomBuilder:
    """Collects keys a batch at a time (:meth:`add`); :meth:`finish` gives the filter of them all."""

    def __init__(self) -> None:
        self._parts: list[np.ndarray] = []

    def add(self, keys: Iterable[str]) -> None:
        digests = b"".join(hashlib.blake2b(k.encode("utf-8"), digest_size=16).digest() for k in keys)
        self._parts.append(np.frombuffer(digests, dtype="<u8").astype(np.uint64).reshape(-1, 2))  # (h1, h2) as _pair

    def finish(self, *, bits_per_key: int = BITS_PER_KEY, hashes: int = HASHES) -> BloomFilter:
        """The filter of every key added (a key added twice counts once: equal keys, equal digests)."""
        pairs = np.unique(np.concatenate(self._parts), axis=0) if self._parts else np.zeros((0, 2), dtype=np.uint64)
        pairs[:, 1] |= np.uint64(1)
        size = max(64, -(-len(pairs) * bits_per_key // 64) * 64)
        with np.errstate(over="ignore"):  # uint64 arithmetic wraps mod 2^64, as _MASK does per key
            positions = ((pairs[:, :1] + np.arange(hashes, dtype=np.uint64) * pairs[:, 1:]) % np.uint64(size)).ravel()
        flags = np.zeros(size, dtype=bool)
        flags[positions.astype(np.int64)] = True
        return BloomFilter(np.packbits(flags, bitorder="little").tobytes(), hashes)  # position p: bit p % 8 of byte p // 8
