"""Synthetic 2-hop cases from graph paths in a corpus (offline heuristic; marked generated).

A *path* is ``A --v--> B``: a sentence of document A mentions a value ``v`` (an entity or an
identifier, found by :func:`hoprag.pipeline.bridges.extract_bridges`) that links to document B —
B's title is ``v`` (a hyperlink-like title link), or ``v`` is an identifier that B also states.
From B's sentence naming ``v`` (its first sentence for a title link) the answer is the first
candidate value that is neither ``v`` nor the anchor. The *anchor* is another multi-word entity or identifier
of A's sentence (no anchor, no case). The question names the anchor, never the bridge::

    "Which {date|identifier|name} is given for the {entity|item} that {anchor} is linked to?"

Each case carries the two facts (exact sentence spans), the edge with its bridge value, split keys
(seed = the path, so variants stay together when split), and provenance in ``metadata``
(``generated: true``, generator id, documents, bridge, anchor). Every proposal then goes through the
shortcut audit (:func:`hoprag.datasets.audit.audit`); flagged proposals are dropped (counted) unless
``keep_flagged`` — then they are kept with the findings in ``warnings``. Generated fluency is not
evidence: these are proposals for review, not gold.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from hoprag.datasets.audit import audit, mentions, norm
from hoprag.datasets.schema import Case
from hoprag.pipeline.bridges import extract_bridges, title_key
from hoprag.pipeline.text import sentences_with_offsets
from hoprag.records import Document

GENERATOR = "hoprag.synth.heuristic/v1"
_KIND_WORD = {"date": "date", "identifier": "identifier", "entity": "name", "quoted": "title"}


@dataclass(frozen=True)
class SynthResult:
    cases: list[Case]
    proposed: int
    dropped_by_audit: int
    findings: list[dict] = field(default_factory=list)


def _sentences(doc: Document) -> list[tuple[int, int, str]]:
    return [(s, e, doc.text[s:e]) for s, e in sentences_with_offsets(doc.text)]


def _slug(text: str) -> str:
    return "-".join(norm(text).split())[:40] or "x"


def _propose(a: Document, sentence: tuple[int, int, str], bridge: str, kind: str, b: Document,
             target: tuple[int, int, str]) -> Case | None:
    s_start, s_end, s_text = sentence
    others = [c for c in extract_bridges(s_text, question="", exclude=(bridge,), limit=6)
              if (c.kind == "identifier" or len(c.value.split()) >= 2)
              and not mentions(norm(bridge), c.value) and not mentions(norm(c.value), bridge)]
    anchor = others[0].value if others else ""
    if not anchor or mentions(norm(anchor), bridge) or not mentions(norm(s_text + " " + a.title), anchor):
        return None
    t_start, t_end, t_text = target
    answers = [c for c in extract_bridges(t_text, question=f"{anchor} {bridge}", exclude=(bridge, anchor), limit=8)
               if c.kind in ("date", "identifier", "entity")
               and not mentions(norm(bridge), c.value) and not mentions(norm(c.value), bridge)]
    if not answers:
        return None
    answer = answers[0]
    if mentions(norm(a.text), answer.value):
        return None  # A already states the answer: no second hop needed
    noun = "item" if kind == "identifier" else "entity"
    query = f"Which {_KIND_WORD.get(answer.kind, 'value')} is given for the {noun} that {anchor} is linked to?"
    f1 = f"{a.id}:{_slug(bridge)}"
    f2 = f"{b.id}:{_slug(answer.value)}"
    if f1 == f2:
        return None
    seed = f"synth:{a.id}->{b.id}:{_slug(bridge)}"
    case_id = "syn-" + hashlib.sha1(seed.encode()).hexdigest()[:10]
    source_anchor = anchor if mentions(norm(s_text), anchor) else None
    return Case.model_validate({
        "case_id": case_id,
        "query": query,
        "answers": [answer.value],
        "facts": {
            f1: {"source_id": a.id, "spans": [{"start": s_start, "end": s_end, "text": s_text}], "source_version": a.version or None,
                 "entities": [e for e in (source_anchor, bridge) if e], "grade": 1, "title": a.title or None},
            f2: {"source_id": b.id, "spans": [{"start": t_start, "end": t_end, "text": t_text}], "source_version": b.version or None,
                 "entities": [bridge, answer.value], "grade": 2, "title": b.title or None},
        },
        "required_facts": [f1, f2],
        "valid_chains": [[f1, f2]],
        "edges": [{"from": f1, "to": f2, "bridge_field": kind, "bridge_value": bridge}],
        "split_keys": {"source_family": b.source or b.doc_type or "synthetic", "entities": [anchor, bridge],
                       "template": f"synth-bridge-{answer.kind}", "seed": seed},
        "question_type": "bridge",
        "dataset": "synthetic",
        "metadata": {"generated": True, "generator": GENERATOR, "from_doc": a.id, "to_doc": b.id, "bridge": bridge,
                     "bridge_kind": kind, "anchor": anchor, "answer_kind": answer.kind},
    })


def synthesize(
    documents: Sequence[Document], *, max_cases: int = 50, seed: int = 7, keep_flagged: bool = False
) -> SynthResult:
    """Propose up to ``max_cases`` audited 2-hop cases from ``documents``; see the module doc."""
    docs = sorted(documents, key=lambda d: d.id)
    by_title: dict[str, list[Document]] = {}
    for d in docs:
        if d.title:
            by_title.setdefault(title_key(d.title), []).append(d)
    known = frozenset(by_title)
    proposals: dict[str, Case] = {}
    for a in docs:
        for sentence in _sentences(a):
            for cand in extract_bridges(sentence[2], question="", own_title=a.title, known_titles=known, limit=4):
                if cand.kind not in ("entity", "identifier", "quoted"):
                    continue
                for b, target in _targets(cand.value, cand.kind, a, by_title, docs):
                    case = _propose(a, sentence, cand.value, "identifier" if cand.kind == "identifier" else "entity", b, target)
                    if case is not None and case.case_id not in proposals:
                        proposals[case.case_id] = case
    ordered = sorted(proposals.values(), key=lambda c: c.case_id)
    random.Random(seed).shuffle(ordered)
    report = audit(ordered, docs)
    flagged = set(report.flagged_cases)
    kept: list[Case] = []
    for case in ordered:
        if case.case_id in flagged:
            if not keep_flagged:
                continue
            notes = [f"shortcut audit: {f.kind} in {f.doc_id} ({f.field})" for f in report.findings if f.case_id == case.case_id]
            case = case.model_copy(update={"warnings": [*case.warnings, *notes]})
        kept.append(case)
        if len(kept) >= max_cases:
            break
    return SynthResult(cases=kept, proposed=len(ordered), dropped_by_audit=sum(1 for c in ordered if c.case_id in flagged and not keep_flagged),
                       findings=[f.to_dict() for f in report.findings])


def _targets(value: str, kind: str, a: Document, by_title: dict[str, list[Document]], docs: Sequence[Document]):
    """Documents a bridge value links to, each with the sentence that states the link."""
    found = []
    for b in by_title.get(title_key(value), []):
        if b.id != a.id:
            sentences = _sentences(b)
            if sentences:
                found.append((b, sentences[0]))
    if kind == "identifier" and not found:
        for b in docs:
            if b.id == a.id or value not in b.text:
                continue
            for sentence in _sentences(b):
                if value in sentence[2]:
                    found.append((b, sentence))
                    break
    return found[:2]
