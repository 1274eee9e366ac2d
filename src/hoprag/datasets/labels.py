"""Label verification: every fact points at a document that exists and says what the label says.

Checks, per case (each problem names the case, the fact and the field):

errors (the label contradicts itself or its source; the case is excluded from scoring):

- ``invalid_case`` — the record is not a valid case (each schema error is given; an error inside
  one fact names the fact, which is set aside so the rest of the case is still checked);
- ``duplicate_case_id`` — a second record with an id already used;
- ``undefined_fact`` — ``required_facts``, a valid chain or an edge names a fact not in ``facts``;
- ``empty_chain`` — a valid chain without facts (it would count as covered by any context);
- ``dependency_cycle`` — the edges form a cycle;
- ``invalid_span`` — a span whose ``end`` is before its ``start``;
- ``span_out_of_range`` — a span's offsets run past the end of its document;
- ``span_mismatch`` — ``document.text[start:end] != span.text`` (exact by default; with
  ``span_match="whitespace"`` both sides are compared with runs of whitespace collapsed).

warnings (listed and counted; the case is still scored):

- ``missing_source`` — the fact's ``source_id`` is not in the corpus (or an importer marked it
  ``missing:``); a case none of whose chains survives is diagnosed ``missing_corpus_fact``;
- ``version_mismatch`` — the fact's ``source_version`` differs from the document's ``version``;
- ``title_mismatch`` — the fact's ``title`` differs from the document's title (folded);
- ``missing_distractor`` — a labelled distractor's source is not in the corpus;
- ``no_chain`` — facts but no valid chain (retrieval measures would be N/A).

Without a corpus only the structural checks run (the first six errors). The report's records
live in :mod:`hoprag.datasets.label_report`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hoprag.datasets.label_report import ERROR_KINDS, SPAN_MATCHES, WARNING_KINDS, LabelProblem, LabelReport
from hoprag.datasets.schema import Case, case_from_json_line, cycle_text, find_cycle
from hoprag.errors import ConfigError
from hoprag.gc_pause import collector_paused
from hoprag.jsonl import read_jsonl_dicts
from hoprag.records import Document
from hoprag.validation_messages import plain_words

__all__ = [
    "ERROR_KINDS", "SPAN_MATCHES", "WARNING_KINDS", "LabelProblem", "LabelReport",
    "check_case_labels", "check_record", "read_cases_checked", "verify_labels",
]

MISSING_PREFIX = "missing:"
_SHOWN = 240  # characters of expected / found text kept in a problem


# --- structural checks on raw records ---------------------------------------------------------------


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _raw_structure(data: dict[str, Any], where: dict[str, Any]) -> tuple[dict[str, Any], list[LabelProblem]]:
    """Undefined fact references and reversed spans of a raw case, and a copy with them removed
    (so the rest of the case can still be loaded and checked)."""
    cid = str(data.get("case_id") or f"<line {where.get('line')}>")
    problems: list[LabelProblem] = []
    facts = data.get("facts") if isinstance(data.get("facts"), dict) else {}
    known = set(facts)
    repaired = dict(data)
    fix_ref = "add the fact to 'facts' or remove it from the list"

    def keep(ids: Any, name: str) -> Any:
        if not isinstance(ids, list):
            return ids
        for fact in ids:
            if isinstance(fact, str) and fact not in known:
                problems.append(LabelProblem(cid, "undefined_fact", f"{name} names fact {fact!r}, which is not in 'facts'",
                                             fix_ref, fact_id=fact, field=name, **where))
        return [f for f in ids if not isinstance(f, str) or f in known]

    repaired["required_facts"] = keep(data.get("required_facts", []), "required_facts")
    chains = data.get("valid_chains", [])
    if isinstance(chains, list):
        kept = [keep(chain, f"valid_chains[{i}]") for i, chain in enumerate(chains)]
        repaired["valid_chains"] = [c for c, orig in zip(kept, chains) if c or not orig]
    edges = data.get("edges", [])
    if isinstance(edges, list):
        good = []
        for i, edge in enumerate(edges):
            ends = [edge.get(k) for k in ("from", "to")] if isinstance(edge, dict) else []
            unknown = [e for e in ends if isinstance(e, str) and e not in known]
            for end in unknown:
                problems.append(LabelProblem(cid, "undefined_fact", f"edges[{i}] names fact {end!r}, which is not in 'facts'",
                                             "add the fact to 'facts' or drop the edge", fact_id=end, field=f"edges[{i}]", **where))
            if not unknown:
                good.append(edge)
        repaired["edges"] = good
    new_facts = {}
    for fact_id, fact in facts.items():
        if isinstance(fact, dict) and isinstance(fact.get("spans"), list):
            spans = []
            for j, span in enumerate(fact["spans"]):
                start, end = (span.get("start"), span.get("end")) if isinstance(span, dict) else (None, None)
                if isinstance(start, int) and isinstance(end, int) and end < start:
                    problems.append(LabelProblem(cid, "invalid_span", f"span end {end} is before start {start}",
                                                 "re-extract the span from the source", fact_id=fact_id,
                                                 field=f"facts.{fact_id}.spans[{j}]", **where))
                    continue
                spans.append(span)
            fact = {**fact, "spans": spans}
        new_facts[fact_id] = fact
    if facts:
        repaired["facts"] = new_facts
    return repaired, problems


def check_record(data: dict[str, Any], *, source: str | None = None, line: int | None = None) -> tuple[Case | None, list[LabelProblem]]:
    """Validate one raw case record, reporting (not raising) its label problems.

    Returns the case (with broken references removed, so its other labels can still be checked;
    it is excluded from scoring anyway) or ``None`` when it cannot be read as a case at all.
    """
    where = {"source": source, "line": line}
    repaired, problems = _raw_structure(data, where)
    cid = str(data.get("case_id") or f"<line {line}>")
    fix = "see the case format in docs/evaluation.md (Evidence-chain cases)"
    for _ in range(len(repaired.get("facts") or {}) + 1):
        try:
            return Case.model_validate(repaired), problems
        except ValidationError as exc:
            errors = exc.errors()
        # an error inside one fact: report it, drop the fact (and what names it), check the rest
        bad = {str(e["loc"][1]) for e in errors if len(e.get("loc", ())) > 1 and e["loc"][0] == "facts"}
        for error in errors:
            loc = tuple(str(p) for p in error.get("loc", ()))
            fact_id = loc[1] if len(loc) > 1 and loc[0] == "facts" else None
            if fact_id is not None or not bad:
                wrong, own_fix = plain_words(error)
                problems.append(LabelProblem(cid, "invalid_case", wrong, own_fix or fix, fact_id=fact_id,
                                             field=".".join(loc) or None, **where))
        if not bad or not isinstance(repaired.get("facts"), dict):
            return None, problems
        repaired = _without_facts(repaired, bad)
    return None, problems


def _without_facts(data: dict[str, Any], drop: set[str]) -> dict[str, Any]:
    out = dict(data)
    out["facts"] = {k: v for k, v in data["facts"].items() if k not in drop}
    out["required_facts"] = [f for f in data.get("required_facts") or [] if f not in drop]
    chains = [[f for f in c if f not in drop] for c in data.get("valid_chains") or [] if isinstance(c, list)]
    out["valid_chains"] = [c for c in chains if c]
    out["edges"] = [e for e in data.get("edges") or [] if isinstance(e, dict) and e.get("from") not in drop and e.get("to") not in drop]
    return out


def read_cases_checked(path: str | Path) -> tuple[list[Case], list[LabelProblem]]:
    """Read a cases JSONL file reporting every label problem instead of stopping at the first.

    Cases that cannot be built at all, and repeated case ids, are left out (and reported).
    """
    with collector_paused():
        return _read_cases_checked(path)


def _read_cases_checked(path: str | Path) -> tuple[list[Case], list[LabelProblem]]:
    cases: list[Case] = []
    problems: list[LabelProblem] = []
    seen: dict[str, int] = {}
    for number, obj in read_jsonl_dicts(path, "cases file", allow_empty=False, fast=case_from_json_line):
        # a case read whole from its line is valid, so its raw record has no problem to report
        case, found = (obj, []) if type(obj) is Case else check_record(obj, source=str(path), line=number)
        problems.extend(found)
        if case is None:
            continue
        if case.case_id in seen:
            problems.append(LabelProblem(case.case_id, "duplicate_case_id", f"case id already used (first on line {seen[case.case_id]})",
                                         "give every case a unique case_id", field="case_id", source=str(path), line=number))
            continue
        seen[case.case_id] = number
        cases.append(case)
    return cases, problems


# --- checks against the corpus ------------------------------------------------------------------------


def _squash(text: str) -> str:
    return " ".join(text.split())


def _fold(text: str) -> str:
    return _squash(text).casefold()


def _mismatch_fix(doc_text: str, wanted: str, span_match: str) -> str:
    at = doc_text.find(wanted) if wanted else -1
    if at >= 0:
        return f"re-extract the span from the source: the labelled text occurs at [{at}, {at + len(wanted)})"
    if span_match == "exact" and wanted and _squash(wanted) in _squash(doc_text):
        return "re-extract the span from the source (the text occurs with different whitespace), or pass --span-match whitespace"
    return "re-extract the span from the source: the labelled text occurs nowhere in the document"


def _graph_problems(case: Case) -> list[LabelProblem]:
    problems = []
    if case.facts and not case.valid_chains:
        problems.append(LabelProblem(case.case_id, "no_chain", "the case has facts but no valid chain: retrieval measures are N/A",
                                     "list the facts a system must find in required_facts or valid_chains", field="valid_chains"))
    for i, chain in enumerate(case.valid_chains):
        if not chain:
            problems.append(LabelProblem(case.case_id, "empty_chain", "a valid chain without facts is covered by any context",
                                         "list the chain's facts or remove the chain", field=f"valid_chains[{i}]"))
    known = set(case.facts)
    for name, ids in [("required_facts", case.required_facts)] + [(f"valid_chains[{i}]", c) for i, c in enumerate(case.valid_chains)]:
        for fact in ids:
            if fact not in known:
                problems.append(LabelProblem(case.case_id, "undefined_fact", f"{name} names fact {fact!r}, which is not in 'facts'",
                                             "add the fact to 'facts' or remove it from the list", fact_id=fact, field=name))
    for i, edge in enumerate(case.edges):
        for end in (edge.from_fact, edge.to_fact):
            if end not in known:
                problems.append(LabelProblem(case.case_id, "undefined_fact", f"edges[{i}] names fact {end!r}, which is not in 'facts'",
                                             "add the fact to 'facts' or drop the edge", fact_id=end, field=f"edges[{i}]"))
    if not any(p.kind == "undefined_fact" for p in problems):
        cycle = find_cycle(case)
        if cycle:
            problems.append(LabelProblem(case.case_id, "dependency_cycle", f"dependency edges form a cycle {cycle_text(cycle)}",
                                         "dependency edges must point from a fact to one found later; remove the back edge",
                                         fact_id=cycle[0], field="edges"))
    return problems


def check_case_labels(
    case: Case, documents: Mapping[str, Document] | None, *, span_match: str = "exact"
) -> tuple[list[LabelProblem], int]:
    """Problems of one validated case (see the module doc) and the number of spans compared."""
    problems = _graph_problems(case)
    if documents is None:
        return problems, 0
    cid = case.case_id
    compared = 0
    same = (lambda a, b: a == b) if span_match == "exact" else (lambda a, b: _squash(a) == _squash(b))
    for fact_id, fact in case.facts.items():
        doc = documents.get(fact.source_id)
        if doc is None:
            why = ("the importer could not find its paragraph in the record's context"
                   if fact.source_id.startswith(MISSING_PREFIX) else "no document with this id is in the corpus")
            problems.append(LabelProblem(cid, "missing_source", f"source {fact.source_id!r}: {why}",
                                         "add the source document to the corpus, or relabel the fact with a source it has",
                                         fact_id=fact_id, field=f"facts.{fact_id}.source_id", found=fact.source_id))
            continue
        for j, span in enumerate(fact.spans):
            where = f"facts.{fact_id}.spans[{j}]"
            compared += 1
            if span.end > len(doc.text):
                problems.append(LabelProblem(
                    cid, "span_out_of_range", f"offsets [{span.start}, {span.end}) run past the end of {doc.id!r} ({len(doc.text)} characters)",
                    _mismatch_fix(doc.text, span.text, span_match), fact_id=fact_id, field=where,
                    expected=_clip(span.text), found=_clip(doc.text[span.start:span.end])))
                continue
            found = doc.text[span.start:span.end]
            if not same(found, span.text):
                problems.append(LabelProblem(
                    cid, "span_mismatch", f"{doc.id!r}[{span.start}:{span.end}] differs from the span's text",
                    _mismatch_fix(doc.text, span.text, span_match), fact_id=fact_id, field=where,
                    expected=_clip(span.text), found=_clip(found)))
        if fact.source_version and doc.version and fact.source_version != doc.version:
            problems.append(LabelProblem(cid, "version_mismatch", f"labelled on version {fact.source_version!r}, the corpus holds {doc.version!r}",
                                         "check the span against the current version and update source_version",
                                         fact_id=fact_id, field=f"facts.{fact_id}.source_version",
                                         expected=fact.source_version, found=doc.version))
        if fact.title and doc.title and _fold(fact.title) != _fold(doc.title):
            problems.append(LabelProblem(cid, "title_mismatch", f"the fact's title differs from the title of {doc.id!r}",
                                         "check that source_id names the right document", fact_id=fact_id,
                                         field=f"facts.{fact_id}.title", expected=fact.title, found=doc.title))
    for i, distractor in enumerate(case.distractors):
        if distractor.source_id not in documents:
            problems.append(LabelProblem(cid, "missing_distractor", f"distractor source {distractor.source_id!r} is not in the corpus",
                                         "add the document to the corpus or drop the distractor", field=f"distractors[{i}]",
                                         found=distractor.source_id))
    return problems, compared


def verify_labels(
    cases: Sequence[Case],
    documents: Iterable[Document] | Mapping[str, Document] | None = None,
    *,
    span_match: str = "exact",
    problems: Iterable[LabelProblem] = (),
) -> LabelReport:
    """Check every case's labels (against ``documents`` when given); ``problems`` are earlier ones
    (from :func:`read_cases_checked`) to report with them."""
    if span_match not in SPAN_MATCHES:
        raise ConfigError(f"unknown span match {span_match!r}; use --span-match exact or --span-match whitespace")
    by_id: Mapping[str, Document] | None
    if documents is None or isinstance(documents, Mapping):
        by_id = documents
    else:
        by_id = {d.id: d for d in documents}
    found = list(problems)
    spans = 0
    for case in cases:
        more, compared = check_case_labels(case, by_id, span_match=span_match)
        spans += compared
        # a problem already reported from the raw record is not repeated
        known = {(p.case_id, p.kind, p.fact_id, p.field) for p in found}
        found.extend(p for p in more if (p.case_id, p.kind, p.fact_id, p.field) not in known)
    order = {c.case_id: i for i, c in enumerate(cases)}
    ids = tuple(c.case_id for c in cases)
    found.sort(key=lambda p: (order.get(p.case_id, len(order)), p.line or 0))
    return LabelReport(
        problems=tuple(found),
        cases=len(cases),
        facts=sum(len(c.facts) for c in cases),
        spans_checked=spans,
        documents=None if by_id is None else len(by_id),
        span_match=span_match,
        case_ids=ids,
    )
