"""Judgment pools: the top documents of several systems, merged and shuffled for blind labelling.

A pool holds, per case, the union of the first ``depth`` *documents* each system ranks: BM25, dense
retrieval over the index's vectors (when the index has them) and the multi-hop engine's reranked
evidence list. Candidates are deduplicated at document level; the chunks each system returned are
kept as provenance. The order labellers see is a seeded shuffle, and which system found a document
is written to a separate file the labellers are not given.

Files of a pool directory:

``annotation.jsonl``
    one line per (case, document) to judge: ``case_id``, ``question``, ``doc_id``, ``title``, ``text``;
``pool.txt``
    the same pairs TREC-style, ``qid 0 docid -1`` (unjudged);
``provenance.jsonl``
    per (case, document) the systems that found it, with each system's document rank and chunk ids;
``manifest.json``
    depth, seed, the systems pooled, the clearance, the index, counts, and a note when dense was left out.

:func:`import_judgments` turns labellers' judgments (``{case_id, doc_id, grade, labeller, time}``)
back into TREC qrels, keeping every judgment with its labeller and time in a JSONL beside them.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.pool_facts import ANNOTATION_FILE, read_annotation
from hoprag.io.kinds import ANY_JSONL, CASES_JSONL, JSON_DOCUMENT, RECORDS_JSONL, TREC_QRELS, OutputKind
from hoprag.io.outputs import write_text
from hoprag.files import check_dir, read_text
from hoprag.finite_numbers import INT_MAX
from hoprag.index.contract import Index
from hoprag.jsonl import read_jsonl_dicts
from hoprag.records import Hit

__all__ = [
    "CONFLICT_RULES",
    "Judgment",
    "JudgmentImport",
    "Pool",
    "PoolCandidate",
    "build_pool",
    "import_judgments",
    "read_judgments",
    "resolve_judgments",
    "write_pool",
]

POOL_FILE = "pool.txt"
PROVENANCE_FILE = "provenance.jsonl"
MANIFEST_FILE = "manifest.json"
CONFLICT_RULES = ("majority", "max")
NO_DENSE_NOTE = "the index has no dense vectors: pooled bm25 and multihop only (rebuild with `hoprag index --dense`)"


@dataclass(frozen=True)
class PoolCandidate:
    """One document to judge for one case, with what each system returned for it."""

    case_id: str
    question: str
    doc_id: str
    title: str
    text: str
    #: system name → ``{"rank": document rank (1-based), "chunk_ids": [...]}``
    found_by: dict[str, dict[str, Any]] = field(default_factory=dict)

    def annotation(self) -> dict[str, Any]:
        """What a labeller sees: no system names, no ranks."""
        return {"case_id": self.case_id, "question": self.question, "doc_id": self.doc_id,
                "title": self.title, "text": self.text}


@dataclass(frozen=True)
class Pool:
    """Candidates in the shuffled order labellers get, and the manifest describing how they were pooled."""

    candidates: tuple[PoolCandidate, ...]
    manifest: dict[str, Any]

    def sizes(self) -> dict[str, int]:
        """Candidates per case."""
        return dict(Counter(c.case_id for c in self.candidates))


def _top_documents(hits: Sequence[Hit], depth: int) -> list[tuple[str, list[str]]]:
    """The first ``depth`` distinct documents of a ranked chunk list, each with its chunks in rank order."""
    order: dict[str, list[str]] = {}
    for hit in hits:
        if hit.doc_id not in order:
            if len(order) == depth:
                continue
            order[hit.doc_id] = []
        order[hit.doc_id].append(hit.chunk_id)
    return list(order.items())


def build_pool(
    index: Index,
    cases: Sequence[Any],
    *,
    depth: int = 10,
    seed: int = 0,
    clearance: Any = None,
    chunk_factor: int = 5,
) -> Pool:
    """Pool the top ``depth`` documents of BM25, dense (if the index has vectors) and the multi-hop engine.

    ``index`` is any :class:`~hoprag.index.contract.Index`, ``cases`` the cases (only their ids and questions are used);
    ``clearance`` restricts every system to documents a caller at that level may see. Retrievers are
    asked for ``depth * chunk_factor`` chunks so that ``depth`` distinct documents are usually reached.
    """
    from hoprag.pipeline.factory import make_engine

    if depth < 1:
        raise ConfigError(f"pool depth {depth} must be at least 1")
    systems: dict[str, Any] = {"bm25": index.retriever("bm25")}
    notes: list[str] = []
    if index.has_dense:
        systems["dense"] = index.retriever("dense")
    else:
        notes.append(NO_DENSE_NOTE)
    engine = make_engine("multihop", index, clearance=clearance)
    clearance = engine.clearance  # as make_engine resolved it (hoprag.security.clearance), for every system
    candidates: list[PoolCandidate] = []
    rng = random.Random(seed)
    for case in cases:
        ranked: dict[str, list[tuple[str, list[str]]]] = {
            name: _top_documents(retriever.retrieve(case.query, depth * chunk_factor, clearance=clearance), depth)
            for name, retriever in systems.items()
        }
        trace = engine.answer(case.query, case_id=case.case_id)
        ranked["multihop"] = _top_documents([e.hit for e in trace.evidence], depth)
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for name, docs in ranked.items():
            for rank, (doc_id, chunk_ids) in enumerate(docs, start=1):
                found.setdefault(doc_id, {})[name] = {"rank": rank, "chunk_ids": chunk_ids}
        doc_ids = sorted(found)  # a canonical order first, so the shuffle depends on the seed only
        rng.shuffle(doc_ids)
        for doc_id in doc_ids:
            doc = index.documents.get(doc_id)
            candidates.append(PoolCandidate(
                case_id=case.case_id, question=case.query, doc_id=doc_id, title=doc.title if doc else "",
                text=doc.text if doc else "", found_by=found[doc_id]))
    manifest = {
        "depth": depth,
        "seed": seed,
        "systems": [*systems, "multihop"],
        "dense": index.has_dense,
        "notes": notes,
        "clearance": getattr(clearance, "level", clearance),
        "index": index.location,
        "cases": len(cases),
        "candidates": len(candidates),
        "files": {"annotation": ANNOTATION_FILE, "trec_pool": POOL_FILE, "provenance": PROVENANCE_FILE},
    }
    return Pool(candidates=tuple(candidates), manifest=manifest)


def _out_dir(out: str | Path) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError("the pool's --out is a file, not a directory", source=str(out),
                         fix="give --out a new or existing directory for the pool files")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _write_lines(path: Path, lines: Sequence[str], kind: OutputKind = ANY_JSONL) -> None:
    write_text(path, "".join(lines), kind)  # atomic, and never over an input (hoprag.io.outputs)


def write_pool(pool: Pool, out: str | Path) -> Path:
    """Write the pool's four files into directory ``out``; returns it."""
    out = _out_dir(out)
    dumps = lambda obj: json.dumps(obj, ensure_ascii=False) + "\n"  # noqa: E731
    _write_lines(out / ANNOTATION_FILE, [dumps(c.annotation()) for c in pool.candidates])
    _write_lines(out / POOL_FILE, [f"{c.case_id} 0 {c.doc_id} -1\n" for c in pool.candidates], TREC_QRELS)
    _write_lines(out / PROVENANCE_FILE, [dumps({"case_id": c.case_id, "doc_id": c.doc_id, "found_by": c.found_by})
                                         for c in pool.candidates])
    _write_lines(out / MANIFEST_FILE, [json.dumps(pool.manifest, ensure_ascii=False, indent=2) + "\n"], JSON_DOCUMENT)
    return out


@dataclass(frozen=True)
class Judgment:
    """One labeller's grade for one (case, document) of a pool."""

    case_id: str
    doc_id: str
    grade: int
    labeller: str
    time: str
    #: the passage of the document that makes it relevant, quoted by the labeller (optional)
    passage: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.passage is None:
            del data["passage"]
        return data


def _field(obj: dict[str, Any], name: str, kind: type, *, source: str, line: int) -> Any:
    value = obj.get(name)
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT_MAX
        fix = f"give 'grade' as a whole number from 0 to {INT_MAX:,} (0 = not relevant)"
    else:
        ok = isinstance(value, str) and bool(value.strip())
        fix = f"give '{name}' as a non-empty string"
    if not ok:
        problem = "is missing" if value is None else f"is {value!r}"
        raise InputError(f"judgment field '{name}' {problem}", source=source, line=line, field=name, fix=fix)
    return value


def read_judgments(path: str | Path) -> list[Judgment]:
    """Judgments JSONL, one ``{case_id, doc_id, grade, labeller, time}`` object per line (``passage``
    optional: the text of the document the labeller found relevant, quoted exactly)."""
    source = str(path)
    judgments = []
    for line, obj in read_jsonl_dicts(path, "judgments file", allow_empty=False):
        case_id, doc_id = (str(_field(obj, name, str, source=source, line=line)) for name in ("case_id", "doc_id"))
        judgments.append(Judgment(case_id=case_id, doc_id=doc_id,
                                  grade=_field(obj, "grade", int, source=source, line=line),
                                  labeller=_field(obj, "labeller", str, source=source, line=line),
                                  time=_field(obj, "time", str, source=source, line=line),
                                  passage=_field(obj, "passage", str, source=source, line=line)
                                  if obj.get("passage") is not None else None))
    return judgments


def resolve_judgments(
    judgments: Sequence[Judgment], rule: str = "majority"
) -> tuple[dict[str, dict[str, int]], list[dict[str, Any]]]:
    """Qrels ``{case_id: {doc_id: grade}}`` and the conflicts: pairs whose judgments disagree.

    ``rule`` picks a conflicting pair's grade: ``majority`` (the most frequent grade; a tie goes to
    the higher grade) or ``max`` (the highest grade any labeller gave).
    """
    if rule not in CONFLICT_RULES:
        raise ConfigError(f"unknown conflict rule '{rule}'; valid: {', '.join(CONFLICT_RULES)}")
    grouped: dict[tuple[str, str], list[Judgment]] = {}
    for judgment in judgments:
        grouped.setdefault((judgment.case_id, judgment.doc_id), []).append(judgment)
    qrels: dict[str, dict[str, int]] = {}
    conflicts: list[dict[str, Any]] = []
    for (case_id, doc_id), group in grouped.items():
        counts = Counter(j.grade for j in group)
        if rule == "max":
            grade = max(counts)
        else:
            grade = max(counts, key=lambda g: (counts[g], g))
        qrels.setdefault(case_id, {})[doc_id] = grade
        if len(counts) > 1:
            conflicts.append({"case_id": case_id, "doc_id": doc_id, "grade": grade, "rule": rule,
                              "judgments": [{"labeller": j.labeller, "grade": j.grade, "time": j.time}
                                            for j in group]})
    return qrels, conflicts


@dataclass(frozen=True)
class JudgmentImport:
    """What :func:`import_judgments` wrote and found."""

    qrels_path: Path
    judgments_path: Path
    judgments: int
    judged_pairs: int
    pool_pairs: int
    unjudged: tuple[tuple[str, str], ...]
    conflicts: tuple[dict[str, Any], ...]
    #: the cases file with the relevant judgments as facts, when asked for, and how many cases it holds
    cases_path: Path | None = None
    cases_written: int = 0


def _pool_pairs(pool_dir: Path) -> set[tuple[str, str]]:
    path = pool_dir / POOL_FILE
    if not path.is_file():
        raise InputError(f"no {POOL_FILE} in the pool directory", source=str(pool_dir),
                         fix="pass the --out directory written by `hoprag cases pool`")
    pairs = set()
    for number, line in enumerate(read_text(path, "pool file").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise InputError(f"expected 4 columns (qid 0 docid -1), got {len(parts)}", source=str(path),
                             line=number, fix="rebuild the pool with `hoprag cases pool`")
        pairs.add((parts[0], parts[2]))
    return pairs


def import_judgments(
    pool_dir: str | Path, judgments_file: str | Path, out: str | Path, *, rule: str = "majority",
    cases_out: str | Path | None = None, cases: Sequence[Any] | None = None,
) -> JudgmentImport:
    """Judgments on a pool → TREC qrels at ``out`` plus ``<out>.judgments.jsonl`` (labeller and time kept).

    A judgment for a (case, document) that is not in the pool is refused: it was not labelled blind.
    With ``cases_out``, the relevant judgments also become case facts (:mod:`hoprag.evaluation.pool_facts`),
    added to ``cases`` when given, written there as a cases JSONL.
    """
    from hoprag.trec import write_qrels

    if rule not in CONFLICT_RULES:
        raise ConfigError(f"unknown conflict rule '{rule}'; valid: {', '.join(CONFLICT_RULES)}")
    pool_dir = check_dir(pool_dir, "pool directory")
    pairs = _pool_pairs(pool_dir)
    judgments = read_judgments(judgments_file)
    for number, judgment in enumerate(judgments, start=1):
        if (judgment.case_id, judgment.doc_id) not in pairs:
            raise InputError(
                f"judgment {number} is for case {judgment.case_id!r}, document {judgment.doc_id!r}, "
                "which is not in the pool", source=str(judgments_file),
                fix=f"judge only the pairs of {pool_dir / ANNOTATION_FILE}, or rebuild the pool")
    qrels, conflicts = resolve_judgments(judgments, rule)
    out = Path(out)
    if out.is_dir():
        raise InputError("--out is a directory", source=str(out), fix="give --out a file path for the qrels")
    judged_cases: list[Any] = []
    if cases_out is not None:
        from hoprag.evaluation.pool_facts import judged_cases as to_cases

        if Path(cases_out).is_dir():
            raise InputError("--cases-out is a directory", source=str(cases_out),
                             fix="give --cases-out a file path for the cases JSONL")
        judged_cases = to_cases(judgments, qrels, read_annotation(pool_dir), cases=cases, source=str(judgments_file))
    write_qrels(out, qrels)
    kept = out.with_name(out.name + ".judgments.jsonl")
    _write_lines(kept, [json.dumps(j.to_json(), ensure_ascii=False) + "\n" for j in judgments], RECORDS_JSONL)
    if cases_out is not None:
        _write_lines(Path(cases_out), [c.to_json() + "\n" for c in judged_cases], CASES_JSONL)
    judged = {(case, doc) for case, docs in qrels.items() for doc in docs}
    return JudgmentImport(qrels_path=out, judgments_path=kept, judgments=len(judgments), judged_pairs=len(judged),
                          pool_pairs=len(pairs), unjudged=tuple(sorted(pairs - judged)),
                          conflicts=tuple(conflicts), cases_path=Path(cases_out) if cases_out is not None else None,
                          cases_written=len(judged_cases))
