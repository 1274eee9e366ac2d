"""Grouped splits: every case sharing a key value lands in one partition; a sealed test set.

Keys (``--by``): ``source_family``, ``entity`` (each of ``split_keys.entities``, folded),
``template``, ``seed`` (the graph path; always applied, so every variant derived from one path
stays together), ``question_type``. Cases are the nodes of a graph joined whenever they share a value
of any chosen key; its connected components (union-find) are the groups, and no group is ever split.

Two links are always applied as well, the ones ``hoprag cases leakage`` reports by case
(:mod:`hoprag.datasets.similarity`): cases with near-identical evidence (required-fact or source
Jaccard >= ``evidence_threshold``, default 0.8) and paraphrased questions (content-word Jaccard >=
``paraphrase_threshold``, default 0.6, about the same subject) are joined, so two rewordings of one
question never land on both sides of a split even without a shared seed. ``None`` turns a link off.

Assignment: groups are shuffled with ``random.Random(seed)``, then placed largest first into the
partition with the largest remaining deficit ``target_p - size_p`` (targets = ratios x cases), ties
by partition order. Ratios are met as closely as the groups allow; the achieved sizes and the
largest group are reported, so a key that joins everything (one source family for a whole
benchmark) is visible rather than silent.

Sealing: a sealed partition's manifest entry carries ``sha256`` of its canonical JSONL (cases in
file order, ``Case.to_json``); :func:`verify_sealed` recomputes it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoprag.datasets.schema import Case, load_cases, write_cases
from hoprag.datasets.similarity import evidence_pairs, paraphrase_pairs
from hoprag.errors import ConfigError, InputError
from hoprag.files import read_text
from hoprag.jsonl import parse_json
from hoprag.pipeline.text import fold

SPLIT_KEYS = ("source_family", "entity", "template", "seed", "question_type")
PARTITIONS = ("train", "dev", "test")


def key_values(case: Case, key: str) -> list[str]:
    sk = case.split_keys
    if key == "source_family":
        return [sk.source_family] if sk.source_family else []
    if key == "entity":
        return [" ".join(fold(e).split()) for e in sk.entities if e.strip()]
    if key == "template":
        return [sk.template] if sk.template else []
    if key == "seed":
        return [sk.seed] if sk.seed else []
    if key == "question_type":
        return [case.question_type] if case.question_type else []
    raise ConfigError(f"unknown split key {key!r}; valid: {', '.join(SPLIT_KEYS)}")


def similarity_links(
    cases: Sequence[Case], *, evidence_threshold: float | None = 0.8, paraphrase_threshold: float | None = 0.6
) -> dict[str, list[tuple[int, int]]]:
    """Index pairs joined by near-identical evidence and by paraphrase (see the module doc)."""
    links: dict[str, list[tuple[int, int]]] = {"evidence": [], "paraphrase": []}
    if evidence_threshold is not None:
        links["evidence"] = [(i, j) for i, j, _, _ in evidence_pairs(cases, threshold=evidence_threshold)]
    if paraphrase_threshold is not None:
        links["paraphrase"] = [(i, j) for i, j, _ in paraphrase_pairs(cases, threshold=paraphrase_threshold)]
    return links


def groups_of(
    cases: Sequence[Case],
    keys: Sequence[str],
    *,
    evidence_threshold: float | None = 0.8,
    paraphrase_threshold: float | None = 0.6,
    links: dict[str, list[tuple[int, int]]] | None = None,
) -> list[list[int]]:
    """Connected components of cases that share a value of any key, or have near-identical evidence
    or paraphrased questions (indices into ``cases``; ``links`` from :func:`similarity_links`)."""
    keys = list(dict.fromkeys([*keys, "seed"]))
    parent = list(range(len(cases)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[str, str], int] = {}
    for i, case in enumerate(cases):
        for key in keys:
            for value in key_values(case, key):
                j = owner.setdefault((key, value), i)
                parent[find(i)] = find(j)
    if links is None:
        links = similarity_links(cases, evidence_threshold=evidence_threshold, paraphrase_threshold=paraphrase_threshold)
    for i, j in links["evidence"] + links["paraphrase"]:
        parent[find(i)] = find(j)
    comps: dict[int, list[int]] = {}
    for i in range(len(cases)):
        comps.setdefault(find(i), []).append(i)
    return sorted(comps.values(), key=lambda g: g[0])


@dataclass(frozen=True)
class SplitResult:
    partitions: dict[str, list[Case]]
    groups: int
    largest_group: int
    by: tuple[str, ...]
    ratios: tuple[float, ...]
    seed: int
    links: dict[str, Any] = field(default_factory=dict)

    def manifest(self, sealed: Sequence[str] = ("test",)) -> dict[str, Any]:
        parts = {}
        for name, cases in self.partitions.items():
            entry: dict[str, Any] = {"cases": len(cases), "file": f"{name}.jsonl"}
            if name in sealed:
                entry["sealed"] = True
                entry["sha256"] = content_hash(cases)
            parts[name] = entry
        return {"by": list(self.by), "ratios": list(self.ratios), "seed": self.seed, "groups": self.groups,
                "largest_group": self.largest_group, "links": dict(self.links), "partitions": parts}


def content_hash(cases: Sequence[Case]) -> str:
    digest = hashlib.sha256("".join(c.to_json() + "\n" for c in cases).encode("utf-8")).hexdigest()
    return f"sha256:{digest}"


def grouped_split(
    cases: Sequence[Case],
    by: Sequence[str] = ("source_family", "entity", "template"),
    ratios: Sequence[float] = (0.7, 0.15, 0.15),
    *,
    seed: int = 7,
    names: Sequence[str] = PARTITIONS,
    evidence_threshold: float | None = 0.8,
    paraphrase_threshold: float | None = 0.6,
) -> SplitResult:
    """Split ``cases`` into groups-intact partitions; see the module doc."""
    if len(ratios) != len(names):
        raise ConfigError(f"{len(ratios)} ratios for {len(names)} partitions ({', '.join(names)}). "
                          f"Fix: give {len(names)} ratios, e.g. --ratios 0.7,0.15,0.15")
    # NaN compares false both ways: without isfinite, nan,0.5,0.5 passed both tests
    if not all(math.isfinite(r) and r >= 0 for r in ratios) or abs(sum(ratios) - 1.0) > 1e-6:
        raise ConfigError(f"ratios must be finite, non-negative and sum to 1, got {', '.join(map(str, ratios))}. "
                          "Fix: give numbers such as --ratios 0.7,0.15,0.15")
    for key in by:
        key_values(cases[0], key) if cases else None
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"duplicate case_id {dup!r}", field="case_id", fix="give every case a unique case_id")
    thresholds = {"evidence_threshold": evidence_threshold, "paraphrase_threshold": paraphrase_threshold}
    linked = similarity_links(cases, **thresholds)
    groups = groups_of(cases, by, links=linked)
    links = {name: len(found) for name, found in linked.items()}
    random.Random(seed).shuffle(groups)
    groups.sort(key=len, reverse=True)  # stable: shuffled order breaks ties between equal sizes
    targets = [r * len(cases) for r in ratios]
    sizes = [0] * len(names)
    members: list[list[int]] = [[] for _ in names]
    for group in groups:
        p = max(range(len(names)), key=lambda i: (targets[i] - sizes[i], -i))
        members[p].extend(group)
        sizes[p] += len(group)
    partitions = {name: [cases[i] for i in sorted(m)] for name, m in zip(names, members)}
    return SplitResult(partitions, len(groups), max((len(g) for g in groups), default=0), tuple(by), tuple(ratios), seed,
                       links={**links, **thresholds})


def write_split(result: SplitResult, out_dir: str | Path, *, sealed: Sequence[str] = ("test",)) -> dict[str, Any]:
    """Write the partitions and ``split.json`` into ``out_dir`` (each file atomically, never over an input).

    A partition sealed by an earlier split in ``out_dir`` is never replaced by different cases: writing
    the same split again is allowed (the files come out identical), another seed, ratio or case set is
    refused, ``--force`` included.
    """
    from hoprag.io.kinds import JSON_DOCUMENT
    from hoprag.io.outputs import check_output_dir, write_text

    _check_sealed_names(sealed, tuple(result.partitions))
    out = check_output_dir(out_dir, what="--out")
    manifest = result.manifest(sealed)
    _keep_sealed(out, manifest)
    out.mkdir(parents=True, exist_ok=True)
    for name, cases in result.partitions.items():
        write_cases(out / f"{name}.jsonl", cases)
    write_text(out / "split.json", json.dumps(manifest, indent=2), JSON_DOCUMENT)
    return manifest


def _check_sealed_names(sealed: Sequence[str], names: Sequence[str]) -> None:
    """Every partition asked to be sealed exists (``--seal tset`` sealed nothing, silently)."""
    import difflib

    for name in sealed:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"--seal names partition '{name}', and the split has only {', '.join(names)}. "
                              f"Fix: pass --seal with partition names from that list{hint}")


def _keep_sealed(out: Path, manifest: dict[str, Any]) -> None:
    """Refuse a split that would replace a partition an earlier split in ``out`` sealed."""
    path = out / "split.json"
    if not path.is_file():
        return
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
        partitions = before["partitions"]
        sealed = {name: entry for name, entry in partitions.items() if entry.get("sealed")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise InputError("--out holds a split.json that cannot be read, so it may describe a sealed test set",
                         source=str(path), fix="pass a new directory to --out") from None
    new = manifest["partitions"]
    for name, entry in sealed.items():
        if not (out / str(entry.get("file", f"{name}.jsonl"))).exists():
            continue  # the sealed file is gone: nothing left to protect
        if new.get(name, {}).get("sha256") != entry.get("sha256"):
            raise InputError(
                f"--out holds a sealed '{name}' partition ({entry.get('sha256', '?')[:19]}…) and this split would "
                f"replace it with other cases (seed {manifest['seed']} vs {before.get('seed')}, ratios "
                f"{manifest['ratios']} vs {before.get('ratios')})", source=str(out),
                fix="pass a new directory to --out; a sealed test set is never replaced (delete the folder yourself "
                    "if you mean to discard it)")


def verify_sealed(split_dir: str | Path) -> dict[str, bool]:
    """Recompute every sealed partition's hash from its file; ``{name: matches}``."""
    split_dir = Path(split_dir)
    manifest_path = split_dir / "split.json"
    if not manifest_path.exists():
        raise InputError("split manifest not found", source=str(manifest_path), fix="run hoprag cases split first")
    fix = "write the split again with hoprag cases split"
    manifest = parse_json(read_text(manifest_path, "split manifest"), source=str(manifest_path), fix=fix)
    partitions = manifest.get("partitions") if isinstance(manifest, dict) else None
    if not isinstance(partitions, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("file"), str) and isinstance(e.get("sha256", ""), str)
        for e in partitions.values()
    ):
        raise InputError("split manifest has no valid 'partitions' map", source=str(manifest_path),
                         field="partitions", fix=fix)
    out = {}
    for name, entry in partitions.items():
        if entry.get("sealed"):
            cases = load_cases(split_dir / entry["file"], allow_empty=True)
            out[name] = content_hash(cases) == entry.get("sha256")
    return out
