"""What an in-place graph update (:mod:`hoprag.index.graph_update`) writes by extending the old graph's
files rather than making them again: the matrices when it only adds chunks (:func:`appended_matrices`),
the chunk id list (:func:`write_chunk_ids`), and the entity rows' JSON (:func:`entities_json`).

The matrices: the old ``chunk_entity`` and ``entity_chunk`` renumbered and extended, instead of made
again from every entry.
With no chunk removed and no key recounted (:mod:`hoprag.index.graph_update`), every kept chunk keeps
its entries and its number, the new chunks come after them, and the map from an old entity row to the
new one is monotone (entity rows are keys in string order, before and after). So each kept chunk's row
of ``chunk_entity`` is its old row renumbered (less the keys no longer entities), and each entity's
row of ``entity_chunk`` is its old chunks, then its chunks among the new: what a build of the updated
corpus writes, without the sort of every entry that a transpose costs (a third of the matrices' time
at 100k).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path

import numpy as np

from hoprag.index.entity_graph import CHUNK_ENTITY, CHUNK_IDS, ENTITY_CHUNK
from hoprag.index.graph_arrays import CsrArrays
from hoprag.index.npy_map import load_npy

__all__ = ["appended_matrices", "entities_json", "entity_pairs", "write_chunk_ids"]


def entity_pairs(pairs: np.ndarray, row: np.ndarray, entities: int, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(chunk, entity row) of the ``chunk << shift | key`` ``pairs`` whose key has a ``row`` (-1: not an
    entity), in (chunk, row) order."""
    width = max(entities, 1)
    found = row[pairs & ((1 << shift) - 1)]
    at = found >= 0
    out = (pairs[at] >> shift) * width + found[at]
    out.sort()
    return np.divmod(out, width)


def _read(directory: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        indptr = load_npy(directory / f"{name}.indptr.npy").astype(np.int64)
        indices = np.asarray(load_npy(directory / f"{name}.indices.npy"), dtype=np.int32)
    except OSError as exc:
        raise ValueError(f"{name} unreadable ({exc.strerror or exc})") from None
    if indptr.ndim != 1 or not indptr.size or int(indptr[-1]) != indices.size:
        raise ValueError(f"{name}: its pointers do not fit its entries")
    return indptr, indices


def appended_matrices(graph_dir: Path, new_row: np.ndarray, fresh_chunks: np.ndarray, fresh_rows: np.ndarray,
                      entities: int, chunks: int) -> tuple[CsrArrays, CsrArrays]:
    """``(chunk_entity, entity_chunk)`` of the updated graph. ``graph_dir``: the old graph; ``new_row``:
    each old entity row's new row (-1: no longer an entity), ascending where not -1; ``fresh_chunks``,
    ``fresh_rows``: the new chunks' (chunk, entity row) entries in (chunk, row) order; ``entities`` and
    ``chunks``: the new shape. ``ValueError`` when the old files do not fit together."""
    ce_ptr, ce_rows = _read(graph_dir, CHUNK_ENTITY)
    ec_ptr, ec_chunks = _read(graph_dir, ENTITY_CHUNK)
    kept = ce_ptr.size - 1
    if ec_ptr.size != new_row.size + 1 or ec_chunks.size != ce_rows.size or kept > chunks:
        raise ValueError(f"{CHUNK_ENTITY} and {ENTITY_CHUNK} do not fit the entities")
    fresh_rows32 = fresh_rows.astype(np.int32)
    # chunk_entity: the kept chunks' rows renumbered (a key that left drops out), the new chunks' after them
    rows = new_row[ce_rows]
    if not (valid := rows >= 0).all():
        ce_ptr = np.concatenate(([0], np.cumsum(valid)))[ce_ptr]
        rows = rows[valid]
    pointers = np.empty(chunks + 1, dtype=np.int32)
    pointers[: kept + 1] = ce_ptr
    np.cumsum(np.bincount(fresh_chunks - kept, minlength=chunks - kept), out=pointers[kept + 1:])
    pointers[kept + 1:] += int(ce_ptr[-1])
    chunk_entity = CsrArrays(pointers, np.concatenate((rows.astype(np.int32), fresh_rows32)), None, (chunks, entities))
    # entity_chunk: each entity's old chunks, then its new ones (all after the kept chunks)
    lengths = np.diff(ec_ptr)
    if not (staying := new_row >= 0).all():
        ec_chunks = ec_chunks[np.repeat(staying, lengths)]
        lengths = lengths[staying]
    counts = np.zeros(entities, dtype=np.int64)
    counts[new_row[staying]] = lengths
    order = np.argsort(fresh_rows32, kind="stable")  # by row; each row's chunks stay ascending
    by_row = fresh_rows[order]
    # np.insert puts entries given the same position in their given order: at the end of their row's old run
    merged = np.insert(ec_chunks, np.cumsum(counts)[by_row], fresh_chunks[order].astype(np.int32))
    counts += np.bincount(by_row, minlength=entities)
    ends = np.zeros(entities + 1, dtype=np.int32)
    np.cumsum(counts, out=ends[1:])
    return chunk_entity, CsrArrays(ends, merged, None, (entities, chunks))


def entities_json(keys: Sequence[str], kinds: Sequence[str], chunks: Sequence[int]) -> str:
    """``json.dumps([[key, kind, chunks], ...], ensure_ascii=False, separators=(",", ":"))`` (the text a
    build writes), each string encoded by json's own encoder, without a list made per row: half the time."""
    quoted = {kind: encode_basestring(kind) for kind in set(kinds)}
    return "[" + ",".join([f"[{encode_basestring(k)},{quoted[kind]},{int(c)}]" for k, kind, c in zip(keys, kinds, chunks)]) + "]"


def write_chunk_ids(old_dir: Path, graph_dir: Path, keep: np.ndarray, new: list[str]) -> None:
    """The column order: the kept ids, then the ``new`` (the old list's text extended when nothing was removed)."""
    try:
        old = (old_dir / CHUNK_IDS).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{CHUNK_IDS} unreadable ({exc.strerror or exc})") from None
    if keep.all():
        text = old if not new else old[:-1] + "," + json.dumps(new, ensure_ascii=False, separators=(",", ":"))[1:]
    else:
        kept = [cid for cid, k in zip(json.loads(old), keep.tolist()) if k]
        text = json.dumps(kept + new, ensure_ascii=False, separators=(",", ":"))
    (graph_dir / CHUNK_IDS).write_text(text, encoding="utf-8")
