"""The corpus hash, kept resumable: an update that only adds documents digests only theirs.

The manifest's corpus hash is SHA-256 over every document's canonical record followed by a newline,
in corpus order (:func:`hoprag.index.manifest.corpus_hash`). An update that adds documents appends
their records, so the new hash is the old digest continued — but :mod:`hashlib` cannot save a
digest's state, and the update would read and digest every stored record again (66 MB, a tenth of
a second of CPU at 100k documents, for a 1 % delta). :class:`CorpusDigest` computes the same
SHA-256 with OpenSSL's ``SHA256_*`` functions (the library :mod:`hashlib` is built on) through
:mod:`ctypes`, whose state is a plain ``SHA256_CTX``: the build and every update save it in
``analysis/corpus_digest.json`` beside the hash it gives, and an update that only adds resumes it.

The saved state is trusted only when it finishes to the manifest's corpus hash and a round trip of
the structure gave :mod:`hashlib`'s digest when the library was loaded; otherwise (no such library,
another layout, an index built before the file existed) the digest is :mod:`hashlib`'s and the
update digests every record, as before. Either way the hash is the same.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from hoprag.index.analysis import ANALYSIS_DIR

__all__ = ["DIGEST_FILE", "CorpusDigest", "resume_digest"]

DIGEST_FILE = "corpus_digest.json"
#: ``SHA256_CTX``: ``h[8]``, ``Nl``, ``Nh``, ``data[16]`` (32-bit words), ``num``, ``md_len``
_CTX_SIZE = 112
_DATA, _NUM = 40, 104
#: by their versioned names, on Linux only (macOS ends a process that loads its system libcrypto by name)
_LIBRARIES = ("libcrypto.so.3", "libcrypto.so.1.1")
_BUFFER = 1 << 20  # record bytes gathered before one call into the library (a call per record costs more)


def _load() -> Any:
    """OpenSSL's libcrypto with ``SHA256_Init/Update/Final``, checked to keep its state in a
    ``SHA256_CTX`` of the expected layout; ``None`` when there is none such."""
    for name in _LIBRARIES if sys.platform.startswith("linux") else ():
        try:
            lib = ctypes.CDLL(name)
            init, update, final = lib.SHA256_Init, lib.SHA256_Update, lib.SHA256_Final
        except (OSError, AttributeError):
            continue
        init.argtypes = [ctypes.c_char_p]
        update.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        final.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        try:
            ctx = ctypes.create_string_buffer(_CTX_SIZE)
            init(ctx)
            update(ctx, b"abc", 3)
            state = bytes(ctx.raw)
            again = ctypes.create_string_buffer(state, _CTX_SIZE)
            update(again, b"def", 3)
            out = ctypes.create_string_buffer(32)
            final(out, again)
        except (OSError, ctypes.ArgumentError):
            continue
        if (out.raw == hashlib.sha256(b"abcdef").digest() and int.from_bytes(state[_NUM:_NUM + 4], "little") == 3
                and state[_DATA:_DATA + 3] == b"abc"):
            return lib
    return None


_LIB: Any = None
_LOADED = False


def _library() -> Any:
    global _LIB, _LOADED
    if not _LOADED:
        _LIB, _LOADED = _load(), True
    return _LIB


class CorpusDigest:
    """SHA-256 over records added in order (each followed by a newline), with a state that can be saved
    (:meth:`save`) and resumed (:func:`resume_digest`) where libcrypto is there, else :mod:`hashlib`'s."""

    def __init__(self, state: bytes | None = None) -> None:
        self._lib = _library()
        self._hash: Any = None
        self._ctx: Any = None
        if self._lib is None:
            self._hash = hashlib.sha256()
        else:
            self._ctx = ctypes.create_string_buffer(_CTX_SIZE)
            if state is None:
                self._lib.SHA256_Init(self._ctx)
            else:
                ctypes.memmove(self._ctx, state, _CTX_SIZE)
        self._parts: list[bytes] = []
        self._held = 0
        self.documents = 0

    def add(self, record: str) -> None:
        """One document's canonical record."""
        data = record.encode("utf-8") + b"\n"
        self._parts.append(data)
        self._held += len(data)
        self.documents += 1
        if self._held >= _BUFFER:
            self._flush()

    def update(self, data: bytes, documents: int) -> None:
        """``documents`` records, already joined (each followed by its newline)."""
        self._flush()
        self._feed(data)
        self.documents += documents

    def _flush(self) -> None:
        if self._parts:
            self._feed(b"".join(self._parts))
            self._parts, self._held = [], 0

    def _feed(self, data: bytes) -> None:
        if self._hash is not None:
            self._hash.update(data)
        elif data:
            self._lib.SHA256_Update(self._ctx, data, len(data))

    def hexdigest(self) -> str:
        """The digest of what was added so far (more can still be added)."""
        self._flush()
        if self._hash is not None:
            return str(self._hash.hexdigest())
        copy = ctypes.create_string_buffer(self._ctx.raw, _CTX_SIZE)
        out = ctypes.create_string_buffer(32)
        self._lib.SHA256_Final(out, copy)
        return out.raw.hex()

    def state(self) -> bytes | None:
        """The saved form of the state (the unused tail of the block buffer zeroed, so equal input gives
        equal bytes however it was fed); ``None`` with :mod:`hashlib`."""
        self._flush()
        if self._ctx is None:
            return None
        raw = bytearray(self._ctx.raw)
        held = int.from_bytes(raw[_NUM:_NUM + 4], "little")
        raw[_DATA + held:_NUM] = bytes(_NUM - _DATA - held)
        return bytes(raw)

    def save(self, index_dir: Path) -> str:
        """Write the state beside the index's analysis (when there is one); returns the hex digest."""
        digest, state = self.hexdigest(), self.state()
        if state is not None:
            folder = index_dir / ANALYSIS_DIR
            folder.mkdir(parents=True, exist_ok=True)
            (folder / DIGEST_FILE).write_text(json.dumps(
                {"documents": self.documents, "corpus_hash": digest, "sha256_state": state.hex()}), encoding="utf-8")
        return digest


def resume_digest(index_dir: Path, documents: int, corpus_hash: str) -> CorpusDigest | None:
    """The digest of the index's ``documents`` records, resumed from its saved state, when that state
    finishes to ``corpus_hash``; else ``None`` (the records are digested again)."""
    if _library() is None:
        return None
    try:
        saved = json.loads((index_dir / ANALYSIS_DIR / DIGEST_FILE).read_text(encoding="utf-8"))
        state = bytes.fromhex(saved["sha256_state"])
        if saved["documents"] != documents or saved["corpus_hash"] != corpus_hash or len(state) != _CTX_SIZE:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    digest = CorpusDigest(state)
    if digest.hexdigest() != corpus_hash:
        return None
    digest.documents = documents
    return digest
