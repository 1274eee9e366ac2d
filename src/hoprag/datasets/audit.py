"""Shortcut audit: can one passage, a title, a URL or metadata give a multi-hop case away?

For each case the corpus is searched with *probes* — the question itself, every answer and alias,
every bridge value, and the case's key entities (its distinctive phrases) — and every document a
probe finds is checked. Matching is exact on folded text with word boundaries (``fold`` then
non-alphanumerics to spaces), so ``orion-7-years`` in a URL matches the answer ``7 years``.

*Key entities* are the fact entities (and ``split_keys.entities``) that the question names, answers
and aliases excepted; when the
question names none, the audit cannot decide and says so (``no_key_entities``, a note, not a
shortcut). Findings:

- ``single_document_answer`` — closed, non-comparison case: one document names every key entity
  and states an answer or alias (in its text). Suggest *relabel* as single-hop when that document is
  one of the case's own fact sources, else *exclude* that source under a documented snapshot.
- ``single_document_comparison`` — comparison / yes-no case (the answer is ``yes``/``no``, or one of
  two or more key entities offered with "or", or the template starts with ``compare``, or the
  question type says comparison): one document names every key entity.
  Suggest *redesign*.
- ``single_document_explanation`` — explanatory case: one document supports every reference claim
  (token containment >= 0.8, :func:`hoprag.evaluation.attribution.containment`). Suggest *redesign*.
- ``single_source_chain`` — a valid chain of two or more facts whose facts all come from one
  document: the case does not test multi-document retrieval. Suggest *relabel*.
- ``metadata_leak`` — a document that names every key entity carries an answer or alias in its
  title, a URL / filename or another metadata value (``field`` says which). Suggest *redesign*
  (rename / strip the field) or *exclude*.
- ``query_leak`` — the question itself contains an answer or alias. Suggest *redesign*.

``yes``/``no`` answers are never searched for as strings (they occur everywhere), and answers that
are key entities are not counted as "stated" (a comparison names its options by design).

Label verification (:mod:`hoprag.datasets.labels`) runs with the shortcut audit: the report carries
every label problem per case (a span that is not in its source, a chain naming an undefined fact, a
fact whose source is absent from the corpus, ...), and ``flagged_cases`` counts both kinds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hoprag.datasets.labels import LabelReport, verify_labels
from hoprag.datasets.schema import Case
from hoprag.ingest.text import containment
from hoprag.pipeline.text import fold
from hoprag.records import Document

_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_YES_NO = {"yes", "no"}
SUGGEST = {
    "single_document_answer": "relabel as single-hop, exclude the source under a documented as-of snapshot, or redesign the query",
    "single_document_comparison": "redesign the query so no single document names every compared entity",
    "single_document_explanation": "redesign: one document supports every reference claim",
    "single_source_chain": "relabel as single-hop (one document holds the whole chain)",
    "metadata_leak": "redesign: rename the document or strip the field that carries the answer (or exclude it)",
    "query_leak": "redesign the question: it states its own answer",
}


def norm(text: str) -> str:
    """Folded, alphanumeric-only, single-spaced, padded with spaces for word-boundary search."""
    return " " + " ".join(_NON_ALNUM.sub(" ", fold(text)).split()) + " "


def mentions(haystack_norm: str, phrase: str) -> bool:
    needle = norm(phrase)
    return len(needle.strip()) > 0 and needle in haystack_norm


@dataclass(frozen=True)
class Finding:
    case_id: str
    kind: str
    doc_id: str | None
    field: str
    evidence: str
    suggestion: str
    found_by: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AuditReport:
    """Shortcut findings and label problems; ``flagged_cases`` holds the cases with either."""

    findings: list[Finding]
    notes: list[dict[str, str]]
    cases: int
    documents: int
    flagged_cases: list[str] = field(default_factory=list)
    labels: LabelReport | None = None

    @property
    def shortcut_cases(self) -> list[str]:
        return sorted({f.case_id for f in self.findings})

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.kind] = counts.get(f.kind, 0) + 1
        out = {"cases": self.cases, "documents": self.documents, "flagged_cases": self.flagged_cases,
               "shortcut_cases": self.shortcut_cases, "counts": counts,
               "findings": [f.to_dict() for f in self.findings], "notes": self.notes}
        if self.labels is not None:
            out["labels"] = self.labels.to_json()
            for kind, n in self.labels.counts().items():
                counts[kind] = counts.get(kind, 0) + n
        return out


class _Doc:
    def __init__(self, doc: Document) -> None:
        self.id = doc.id
        self.doc = doc
        self.text = norm(doc.text)
        self.title = norm(doc.title)
        self.meta = {k: norm(str(v)) for k, v in _flatten(doc.metadata).items()}
        for name in ("source", "doc_type"):
            if getattr(doc, name):
                self.meta[name] = norm(getattr(doc, name))
        self.all = self.text + self.title + " ".join(self.meta.values())


def _flatten(meta: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in meta.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        elif isinstance(value, (list, tuple)):
            out[name] = " ".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def key_entities(case: Case, *, drop_answers: bool = True) -> list[str]:
    """Fact entities (and split-key entities) that the question names, longest first, deduplicated."""
    q = norm(case.query)
    names = [e for fact in case.facts.values() for e in fact.entities] + list(case.split_keys.entities)
    answers = {norm(a) for a in [*case.answers, *case.aliases]}
    found = {norm(e).strip(): e for e in names if mentions(q, e) and not (drop_answers and norm(e) in answers)}
    # drop entities contained in a longer named one ("Orion" inside "Project Orion")
    keys = sorted(found, key=len, reverse=True)
    kept = [k for i, k in enumerate(keys) if not any(f" {k} " in f" {longer} " for longer in keys[:i])]
    return [found[k] for k in kept]


def _answers(case: Case) -> list[str]:
    return [a for a in dict.fromkeys([*case.answers, *case.aliases]) if norm(a).strip() and norm(a).strip() not in _YES_NO]


def _is_comparison(case: Case, keys: Sequence[str]) -> bool:
    template = (case.split_keys.template or "").lower()
    qtype = (case.question_type or "").lower()
    key_norms = {norm(k) for k in keys}
    answer_is_option = any(norm(a) in key_norms for a in case.answers)
    yes_no = any(norm(a).strip() in _YES_NO for a in case.answers)
    offers_options = " or " in norm(case.query) and len(keys) >= 2
    return template.startswith("compare") or "comparison" in qtype or (answer_is_option and offers_options) or yes_no


def audit_case(case: Case, docs: Sequence[_Doc]) -> tuple[list[Finding], list[dict[str, str]]]:
    findings: list[Finding] = []
    notes: list[dict[str, str]] = []
    cid = case.case_id
    answers = _answers(case)
    qn = norm(case.query)
    raw_keys = key_entities(case, drop_answers=False)
    comparison = _is_comparison(case, raw_keys)
    keys = raw_keys if comparison else key_entities(case)
    if not comparison:
        for answer in answers:
            overlaps_key = any(norm(k) in norm(answer) or norm(answer) in norm(k) for k in keys)
            if mentions(qn, answer) and not overlaps_key:
                findings.append(Finding(cid, "query_leak", None, "query", answer, SUGGEST["query_leak"], ("question",)))
                break
    for i, chain in enumerate(case.valid_chains):
        sources = {case.facts[f].source_id for f in chain}
        if len(chain) >= 2 and len(sources) == 1:
            findings.append(Finding(cid, "single_source_chain", next(iter(sources)), f"valid_chains[{i}]",
                                    f"{len(chain)} facts in one document", SUGGEST["single_source_chain"], ()))
            break
    if not keys:
        notes.append({"case_id": cid, "note": "no_key_entities: the question names no labelled entity; single-document checks skipped"})
        return findings, notes
    key_answers = [a for a in answers if not any(norm(k) in norm(a) or norm(a) in norm(k) for k in keys)]
    own_sources = {f.source_id for f in case.facts.values()}
    bridges = [e.bridge_value for e in case.edges if e.bridge_value]
    for doc in docs:
        if not all(mentions(doc.all, k) for k in keys):
            continue
        found_by = tuple(dict.fromkeys(["key_entities"] + [f"bridge:{b}" for b in bridges if mentions(doc.all, b)]))
        in_text = all(mentions(doc.text + doc.title, k) for k in keys)
        if case.answer_type == "explanatory":
            if case.reference_claims and all(containment(r, doc.doc.text) >= 0.8 for r in case.reference_claims):
                findings.append(Finding(cid, "single_document_explanation", doc.id, "text", "supports every reference claim",
                                        SUGGEST["single_document_explanation"], found_by))
        elif comparison and len(keys) >= 2:
            if in_text:
                findings.append(Finding(cid, "single_document_comparison", doc.id, "text", ", ".join(keys),
                                        SUGGEST["single_document_comparison"], found_by))
        elif in_text:
            stated = [a for a in key_answers if mentions(doc.text, a)]
            if stated:
                kind = "single_document_answer"
                why = "relabel as single-hop" if doc.id in own_sources else "exclude this source under a documented as-of snapshot"
                findings.append(Finding(cid, kind, doc.id, "text", stated[0], f"{why} (or redesign the query)", found_by + (f"answer:{stated[0]}",)))
        for answer in key_answers:
            for field_name, value in [("title", doc.title), *doc.meta.items()]:
                if mentions(value, answer):
                    findings.append(Finding(cid, "metadata_leak", doc.id, field_name, answer, SUGGEST["metadata_leak"], found_by + (f"answer:{answer}",)))
                    break
    return findings, notes


def audit(
    cases: Iterable[Case], documents: Iterable[Document], *, labels: LabelReport | None = None, span_match: str = "exact"
) -> AuditReport:
    """Audit every case against the whole corpus, shortcuts and labels; see the module doc.

    ``labels`` is a label report already made (e.g. with the problems :func:`read_cases_checked`
    found while loading); without it the labels are verified here.
    """
    cases = list(cases)
    documents = list(documents)
    docs = [_Doc(d) for d in documents]
    findings: list[Finding] = []
    notes: list[dict[str, str]] = []
    for case in cases:
        f, n = audit_case(case, docs)
        findings.extend(f)
        notes.extend(n)
    if labels is None:
        labels = verify_labels(cases, documents, span_match=span_match)
    flagged = sorted({f.case_id for f in findings} | set(labels.flagged_cases))
    return AuditReport(findings=findings, notes=notes, cases=len(cases), documents=len(docs), flagged_cases=flagged,
                       labels=labels)


def write_shortcut_record(path: str | Path, report: AuditReport, *, snapshot: str | None = None) -> int:
    """Append the shortcuts found (one JSON line each, with the corpus snapshot) to a record file,
    so later corpus updates can be audited against what was already known."""
    from hoprag.io.kinds import RECORDS_JSONL
    from hoprag.io.outputs import open_for_append

    with open_for_append(path, RECORDS_JSONL, what="--out") as handle:  # never onto an input or a cases file
        for finding in report.findings:
            handle.write(json.dumps({**finding.to_dict(), "snapshot": snapshot}, ensure_ascii=False) + "\n")
    return len(report.findings)
