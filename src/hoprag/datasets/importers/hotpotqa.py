"""HotpotQA (distractor / train JSON arrays) to evidence-chain cases.

Each ``supporting_facts`` entry ``[title, sent_id]`` becomes a fact ``<doc_id>:s<sent_id>`` whose one
span is the sentence in the joined paragraph. Bridge questions get edges from every fact of the
hop-1 paragraph to every fact of the hop-2 paragraph; comparison questions are two parallel branches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoprag.datasets.importers.common import (
    CaseDraft,
    ImportState,
    Paragraph,
    RecordRef,
    mentions,
    optional,
    read_json_records,
    record_id,
    require,
    sentence_context,
    sentence_facts,
    token_coverage,
)

DATASET = "hotpotqa"


def import_file(path: Path, state: ImportState) -> None:
    for ref, record in read_json_records(path, DATASET):
        state.records += 1
        import_record(record, ref, state)


@dataclass
class SentenceRecord:
    """The parts of a HotpotQA-shaped record (2WikiMultihopQA shares the shape) every importer reads."""

    draft: CaseDraft
    question_type: str
    paragraphs: dict[str, Paragraph]
    by_title: dict[str, list[str]]


def read_sentence_record(
    record: dict[str, Any], ref: RecordRef, state: ImportState, dataset: str, metadata: dict[str, Any]
) -> SentenceRecord | None:
    """Validate the shared fields, build the draft, its sentence facts and distractors; None for a
    repeated id (already counted as skipped)."""
    original_id = record_id(require(record, "_id", object, ref, dataset))
    question = require(record, "question", str, ref, dataset)
    answer = require(record, "answer", str, ref, dataset)
    question_type = require(record, "type", str, ref, dataset)
    supporting = require(record, "supporting_facts", list, ref, dataset)
    context = require(record, "context", list, ref, dataset)
    if not state.claim_id(original_id, ref):
        return None
    draft = CaseDraft(
        case_id=original_id,
        query=question,
        ref=ref,
        answers=[answer],
        question_type=question_type,
        metadata={"original_id": original_id, **metadata},
    )
    paragraphs = sentence_context(context, ref, state, draft)
    by_title = sentence_facts(supporting, paragraphs, ref, state, draft)
    draft.entities = list(by_title)
    draft.distractors = [p.document.id for t, p in paragraphs.items() if t not in by_title]
    return SentenceRecord(draft, question_type, paragraphs, by_title)


def import_record(record: dict[str, Any], ref: RecordRef, state: ImportState) -> None:
    level = optional(record, "level", str, ref, DATASET, None)
    parsed = read_sentence_record(record, ref, state, DATASET, {"level": level})
    if parsed is None:
        return
    if parsed.question_type == "bridge":
        _bridge_edges(parsed.draft.query, parsed.paragraphs, parsed.by_title, parsed.draft)
    state.finish(parsed.draft)


def bridge_order(
    question: str, support_text: dict[str, str], full_text: dict[str, str]
) -> tuple[str, str] | None:
    """``(hop1_title, hop2_title)`` of a two-paragraph bridge question, or None when undecidable.

    The hop-2 paragraph is the one whose title the other paragraph's supporting sentences mention
    (its own title masked out). Ties (both or neither mention the other) are broken, in order, by: the
    paragraph whose title the question names is hop 1; a mention in the other paragraph's full text;
    the larger share of title words in the other paragraph's supporting sentences; the larger share
    of title words in the question (hop 1).
    """
    a, b = support_text

    def directed(text: dict[str, str]) -> tuple[str, str] | None:
        a_to_b, b_to_a = mentions(text[a], b, own_title=a), mentions(text[b], a, own_title=b)
        if a_to_b == b_to_a:
            return None
        return (a, b) if a_to_b else (b, a)

    def first_if(score_a: float, score_b: float) -> tuple[str, str] | None:
        if score_a == score_b:
            return None
        return (a, b) if score_a > score_b else (b, a)

    return (
        directed(support_text)
        or first_if(float(mentions(question, a)), float(mentions(question, b)))
        or directed(full_text)
        or first_if(token_coverage(support_text[a], b), token_coverage(support_text[b], a))
        or first_if(token_coverage(question, a), token_coverage(question, b))
    )


def _bridge_edges(
    question: str, paragraphs: dict[str, Paragraph], by_title: dict[str, list[str]], draft: CaseDraft
) -> None:
    located = [t for t in by_title if t in paragraphs]
    if len(located) != 2:
        if len(by_title) > 1:
            draft.warn(
                f"bridge question with {len(located)} located supporting paragraphs (expected 2); "
                "no edges derived"
            )
            draft.uncertain = True
        return
    support_text = {
        t: " ".join(
            draft.facts[f]["spans"][0]["text"] for f in by_title[t] if draft.facts[f]["spans"]
        )
        for t in located
    }
    full_text = {t: paragraphs[t].document.text for t in located}
    order = bridge_order(question, support_text, full_text)
    if order is None:
        draft.warn("bridge order of the two supporting paragraphs is undecidable; no edges derived")
        draft.uncertain = True
        return
    hop1, hop2 = order
    for source in by_title[hop1]:
        for target in by_title[hop2]:
            draft.add_edge(source, target, "entity", hop2)
