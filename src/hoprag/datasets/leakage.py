"""Leakage across partitions: shared bridge entities, source families, templates, near-duplicates.

For every pair of partitions the report lists the values both contain:

- ``bridge_entities``: edge ``bridge_value``\\ s and ``split_keys.entities`` (folded);
- ``source_families`` and ``templates`` (``split_keys``);
- ``seeds``: shared graph-path seeds (variants of one path in two partitions);
- ``near_duplicates``: question pairs with Jaccard similarity >= ``threshold`` over word 3-shingles
  (folded tokens). Candidates come from MinHash LSH (``datasketch``, ``num_perm`` permutations, seed 1)
  and every candidate is confirmed with the exact Jaccard, so the listed pairs are exact; LSH can
  only miss pairs near the threshold, never invent one.

With a split manifest (``split.json`` next to the files) sealed partitions are re-hashed and the
result reported under ``sealed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.pipeline.text import fold, tokens


def _norm(value: str) -> str:
    return " ".join(fold(value).split())


def bridge_entities(case: Case) -> set[str]:
    values = {_norm(e.bridge_value) for e in case.edges if e.bridge_value}
    return values | {_norm(e) for e in case.split_keys.entities if e.strip()}


def shingles(text: str, n: int = 3) -> set[str]:
    words = tokens(text)
    if len(words) < n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def near_duplicates(left: Sequence[Case], right: Sequence[Case], *, threshold: float = 0.7, num_perm: int = 128) -> list[dict[str, Any]]:
    """Question pairs (one from each side) with exact shingle Jaccard >= threshold."""
    from datasketch import MinHash, MinHashLSH

    def sketch(sh: set[str]) -> MinHash:
        m = MinHash(num_perm=num_perm, seed=1)
        for s in sh:
            m.update(s.encode("utf-8"))
        return m

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    left_sh = {}
    for i, case in enumerate(left):
        sh = shingles(case.query)
        left_sh[i] = sh
        lsh.insert(str(i), sketch(sh))
    pairs = []
    for case in right:
        sh = shingles(case.query)
        for key in lsh.query(sketch(sh)):
            other = left[int(key)]
            score = jaccard(left_sh[int(key)], sh)
            if score >= threshold:
                pairs.append({"a": other.case_id, "b": case.case_id, "jaccard": round(score, 4)})
    return sorted(pairs, key=lambda p: (-p["jaccard"], p["a"], p["b"]))


def leakage_report(
    partitions: Mapping[str, Sequence[Case]], *, threshold: float = 0.7, num_perm: int = 128
) -> dict[str, Any]:
    """Shared values and near-duplicate questions for every pair of partitions."""
    extract = {
        "bridge_entities": lambda c: bridge_entities(c),
        "source_families": lambda c: {c.split_keys.source_family} if c.split_keys.source_family else set(),
        "templates": lambda c: {c.split_keys.template} if c.split_keys.template else set(),
        "seeds": lambda c: {c.split_keys.seed} if c.split_keys.seed else set(),
    }
    values = {
        name: {kind: set().union(*(fn(c) for c in cases)) if cases else set() for kind, fn in extract.items()}
        for name, cases in partitions.items()
    }
    pairs = {}
    total = 0
    for a, b in combinations(partitions, 2):
        entry: dict[str, Any] = {kind: sorted(values[a][kind] & values[b][kind]) for kind in extract}
        entry["near_duplicates"] = near_duplicates(partitions[a], partitions[b], threshold=threshold, num_perm=num_perm)
        entry["leaks"] = sum(len(v) for v in entry.values())
        total += entry["leaks"]
        pairs[f"{a}|{b}"] = entry
    ids: dict[str, list[str]] = {}
    for name, cases in partitions.items():
        for c in cases:
            ids.setdefault(c.case_id, []).append(name)
    shared_ids = {cid: names for cid, names in ids.items() if len(names) > 1}
    return {
        "partitions": {name: len(cases) for name, cases in partitions.items()},
        "pairs": pairs,
        "shared_case_ids": shared_ids,
        "total_leaks": total + len(shared_ids),
        "threshold": threshold,
        "num_perm": num_perm,
    }


def sealed_status(paths: Sequence[Path]) -> dict[str, bool] | None:
    """Re-check sealed hashes when the files sit next to a split manifest."""
    from hoprag.datasets.splits import verify_sealed

    dirs = {p.parent for p in paths}
    if len(dirs) != 1 or not (next(iter(dirs)) / "split.json").exists():
        return None
    return verify_sealed(next(iter(dirs)))
