"""Leakage across partitions, by value and by case: shared keys, near-identical evidence, paraphrases.

For every pair of partitions the report lists the values both contain:

- ``bridge_entities``: edge ``bridge_value``\\ s and ``split_keys.entities`` (folded);
- ``source_families`` and ``templates`` (``split_keys``);
- ``seeds``: shared graph-path seeds (variants of one path in two partitions);
- ``near_duplicates``: question pairs with Jaccard similarity >= ``threshold`` over word 3-shingles
  (folded tokens). Candidates come from MinHash LSH (``datasketch``, ``num_perm`` permutations, seed 1)
  and every candidate is confirmed with the exact Jaccard, so the listed pairs are exact; LSH can
  only miss pairs near the threshold, never invent one.

- ``evidence_overlaps``: case pairs whose required facts or sources have Jaccard >=
  ``evidence_threshold`` (facts compared by source and offsets, :mod:`hoprag.datasets.similarity`):
  the same evidence is a leak whatever the question wording;
- ``paraphrases``: question pairs whose stemmed content words (order-insensitive) have Jaccard >=
  ``paraphrase_threshold`` and that name the same things; shingles miss reworded questions.

``case_pairs`` then names every offending case pair once, with each shared key (``seed``,
``template``, ``source_family``, ``bridge_entity``), its evidence and question similarity, the
``reasons`` and a ``summary`` ("case A (train) and case B (test) share seed 'x' and have identical
evidence"); pairs with a strong reason (same id, seed, evidence, paraphrase, near-duplicate) first.

With a split manifest (``split.json`` next to the files) sealed partitions are re-hashed and the
result reported under ``sealed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.datasets.similarity import evidence_pairs, paraphrase_pairs
from hoprag.errors import ConfigError
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


CASE_KEYS = {
    "seed": lambda c: {c.split_keys.seed} if c.split_keys.seed else set(),
    "template": lambda c: {c.split_keys.template} if c.split_keys.template else set(),
    "source_family": lambda c: {c.split_keys.source_family} if c.split_keys.source_family else set(),
    "bridge_entity": bridge_entities,
}
_STRONG = ("same_case_id", "seed", "evidence", "paraphrase", "near_duplicate")


def _check_threshold(name: str, flag: str, value: float) -> None:
    if not 0.0 < value <= 1.0:
        raise ConfigError(f"{name} must be in (0, 1], got {value}; pass e.g. {flag} 0.8")


def case_pairs(
    left: Sequence[Case],
    right: Sequence[Case],
    names: tuple[str, str],
    *,
    near: Sequence[dict[str, Any]] = (),
    evidence_threshold: float = 0.8,
    paraphrase_threshold: float = 0.6,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Every offending case pair across two partitions, with what they share; also the evidence
    overlaps and paraphrases on their own (see the module doc)."""
    pairs: dict[tuple[str, str], dict[str, Any]] = {}

    def pair(a: Case, b: Case) -> dict[str, Any]:
        key = (a.case_id, b.case_id)
        if key not in pairs:
            pairs[key] = {"a": a.case_id, "b": b.case_id, "partitions": list(names), "shared": {},
                          "evidence": None, "question": {}, "reasons": []}
        return pairs[key]

    for kind, values_of in CASE_KEYS.items():
        owners: dict[str, list[Case]] = {}
        for b in right:
            for value in values_of(b):
                owners.setdefault(value, []).append(b)
        for a in left:
            for value in sorted(values_of(a)):
                for b in owners.get(value, ()):
                    entry = pair(a, b)
                    entry["shared"].setdefault(kind, []).append(value)
    right_ids = {c.case_id: c for c in right}
    for a in left:
        if a.case_id in right_ids:
            pair(a, right_ids[a.case_id])["reasons"].append("same_case_id")
    by_id_l = {c.case_id: c for c in left}
    for dup in near:
        pair(by_id_l[dup["a"]], right_ids[dup["b"]])["question"]["shingle_jaccard"] = dup["jaccard"]
    overlaps = []
    for i, j, fact_j, source_j in evidence_pairs(left, right, threshold=evidence_threshold):
        found = {"a": left[i].case_id, "b": right[j].case_id, "fact_jaccard": round(fact_j, 4), "source_jaccard": round(source_j, 4)}
        overlaps.append(found)
        pair(left[i], right[j])["evidence"] = {"fact_jaccard": found["fact_jaccard"], "source_jaccard": found["source_jaccard"]}
    paraphrases = []
    for i, j, score in paraphrase_pairs(left, right, threshold=paraphrase_threshold):
        paraphrases.append({"a": left[i].case_id, "b": right[j].case_id, "content_jaccard": round(score, 4)})
        pair(left[i], right[j])["question"]["content_jaccard"] = round(score, 4)
    for entry in pairs.values():
        reasons = entry["reasons"]
        reasons.extend(k for k in CASE_KEYS if k in entry["shared"])
        if entry["evidence"] is not None:
            reasons.append("evidence")
        if "content_jaccard" in entry["question"]:
            reasons.append("paraphrase")
        if "shingle_jaccard" in entry["question"]:
            reasons.append("near_duplicate")
        entry["strong"] = any(r in _STRONG for r in reasons)
        entry["summary"] = describe_pair(entry)
    ordered = sorted(pairs.values(), key=lambda e: (not e["strong"], e["a"], e["b"]))
    return ordered, overlaps, paraphrases


def describe_pair(entry: dict[str, Any]) -> str:
    """``case A (train) and case B (test) share seed 'x' and have identical evidence``."""
    parts = []
    if "same_case_id" in entry["reasons"]:
        parts.append("have the same case id")
    labels = {"seed": ("seed", "seeds"), "template": ("template", "templates"),
              "source_family": ("source family", "source families"), "bridge_entity": ("bridge entity", "bridge entities")}
    shared = [f"{labels[k][len(v) > 1]} " + ", ".join(repr(x) for x in v) for k, v in entry["shared"].items()]
    if shared:
        parts.append("share " + _and(shared))
    evidence = entry["evidence"]
    if evidence is not None:
        if evidence["fact_jaccard"] == 1.0:
            parts.append("have identical evidence (the same required facts)")
        elif evidence["source_jaccard"] == 1.0:
            parts.append(f"have evidence from the same source documents (facts Jaccard {evidence['fact_jaccard']:.2f})")
        else:
            parts.append(f"have near-identical evidence (facts Jaccard {evidence['fact_jaccard']:.2f}, "
                         f"sources {evidence['source_jaccard']:.2f})")
    question = entry["question"]
    if "content_jaccard" in question:
        parts.append(f"ask paraphrased questions (content words Jaccard {question['content_jaccard']:.2f})")
    if "shingle_jaccard" in question:
        parts.append(f"ask near-duplicate questions (3-shingle Jaccard {question['shingle_jaccard']:.2f})")
    a_name, b_name = entry["partitions"]
    return f"case {entry['a']} ({a_name}) and case {entry['b']} ({b_name}) " + _and(parts)


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def leakage_report(
    partitions: Mapping[str, Sequence[Case]],
    *,
    threshold: float = 0.7,
    num_perm: int = 128,
    evidence_threshold: float = 0.8,
    paraphrase_threshold: float = 0.6,
) -> dict[str, Any]:
    """Shared values, near-duplicate and paraphrased questions, near-identical evidence and every
    offending case pair, for every pair of partitions."""
    _check_threshold("the near-duplicate threshold", "--threshold", threshold)
    _check_threshold("the evidence threshold", "--evidence-threshold", evidence_threshold)
    _check_threshold("the paraphrase threshold", "--paraphrase-threshold", paraphrase_threshold)
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
    total = case_total = 0
    for a, b in combinations(partitions, 2):
        entry: dict[str, Any] = {kind: sorted(values[a][kind] & values[b][kind]) for kind in extract}
        entry["near_duplicates"] = near_duplicates(partitions[a], partitions[b], threshold=threshold, num_perm=num_perm)
        found, overlaps, paraphrases = case_pairs(
            partitions[a], partitions[b], (a, b), near=entry["near_duplicates"],
            evidence_threshold=evidence_threshold, paraphrase_threshold=paraphrase_threshold,
        )
        entry["evidence_overlaps"] = overlaps
        entry["paraphrases"] = paraphrases
        entry["leaks"] = sum(len(v) for v in entry.values())
        entry["case_pairs"] = found
        entry["case_leaks"] = len(found)
        total += entry["leaks"]
        case_total += len(found)
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
        "case_leaks": case_total,
        "threshold": threshold,
        "thresholds": {"near_duplicate": threshold, "evidence": evidence_threshold, "paraphrase": paraphrase_threshold},
        "num_perm": num_perm,
    }


def sealed_status(paths: Sequence[Path]) -> dict[str, bool] | None:
    """Re-check sealed hashes when the files sit next to a split manifest."""
    from hoprag.datasets.splits import verify_sealed

    dirs = {p.parent for p in paths}
    if len(dirs) != 1 or not (next(iter(dirs)) / "split.json").exists():
        return None
    return verify_sealed(next(iter(dirs)))
