"""MuSiQue (JSONL, one record a line) to evidence-chain cases.

Each ``question_decomposition`` step is a fact ``<doc_id>:p<idx>`` spanning its whole supporting
paragraph. A ``#k`` in step i's question means step i needs the answer of step k: an edge from the
fact of step k to the fact of step i, whose bridge field is the relation after ``>>`` when the step
is written ``... #k ... >> relation`` and ``answer_of_step_k`` otherwise.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hoprag.datasets.importers.common import (
    CaseDraft,
    ImportState,
    RecordRef,
    optional,
    read_json_records,
    record_id,
    require,
)
from hoprag.records import Document

DATASET = "musique"
_REF = re.compile(r"#(\d+)")


def import_file(path: Path, state: ImportState) -> None:
    for ref, record in read_json_records(path, DATASET):
        state.records += 1
        import_record(record, ref, state)


def import_record(record: dict[str, Any], ref: RecordRef, state: ImportState) -> None:
    original_id = record_id(require(record, "id", object, ref, DATASET))
    question = require(record, "question", str, ref, DATASET)
    answer = require(record, "answer", str, ref, DATASET)
    paragraphs = require(record, "paragraphs", list, ref, DATASET)
    steps = require(record, "question_decomposition", list, ref, DATASET)
    aliases = optional(record, "answer_aliases", list, ref, DATASET, [])
    answerable = optional(record, "answerable", bool, ref, DATASET, True)
    if not state.claim_id(original_id, ref):
        return
    question_type = original_id.split("__", 1)[0] if "__" in original_id else None
    draft = CaseDraft(
        case_id=original_id,
        query=question,
        ref=ref,
        answers=[answer],
        aliases=[str(a) for a in aliases],
        question_type=question_type,
        metadata={"original_id": original_id, "answerable": answerable},
    )
    if not answerable:
        draft.warn("record is marked answerable=false: the paragraphs may not support its decomposition")
    docs, supporting = _paragraphs(paragraphs, ref, state)
    step_facts = _step_facts(steps, docs, ref, draft)
    used = {idx for idx, _ in step_facts if idx is not None}
    extra = sorted(supporting - used)
    if extra:
        draft.metadata["supporting_not_in_decomposition"] = [docs[i].id for i in extra]
        draft.warn(
            f"paragraph(s) {extra} are marked is_supporting but used by no decomposition step; "
            "kept as documents, not as facts or distractors"
        )
    draft.distractors = [doc.id for idx, doc in docs.items() if idx not in used and idx not in supporting]
    draft.entities = [docs[idx].title for idx, _ in step_facts if idx is not None]
    for i, step in enumerate(steps, start=1):
        _step_edges(i, step, steps, step_facts, draft)
    state.finish(draft)


def _paragraphs(items: list[Any], ref: RecordRef, state: ImportState) -> tuple[dict[int, Document], set[int]]:
    docs: dict[int, Document] = {}
    supporting: set[int] = set()
    fix = 'give every paragraph as {"idx": int, "title": str, "paragraph_text": str, "is_supporting": bool}'
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise ref.error(f"paragraphs[{position}] is not an object", field="paragraphs", fix=fix)
        title, text = item.get("title"), item.get("paragraph_text")
        if not isinstance(title, str) or not isinstance(text, str):
            missing = "title" if not isinstance(title, str) else "paragraph_text"
            raise ref.error(
                f"paragraphs[{position}] lacks a string '{missing}'", field=f"paragraphs.{missing}", fix=fix
            )
        idx = item.get("idx", position)
        if not isinstance(idx, int) or isinstance(idx, bool) or idx in docs:
            raise ref.error(
                f"paragraphs[{position}] has a bad or repeated idx {idx!r}", field="paragraphs.idx", fix=fix
            )
        docs[idx] = state.builder.add_text(title, text, state.dataset)
        if item.get("is_supporting") is True:
            supporting.add(idx)
    return docs, supporting


def _step_facts(
    steps: list[Any], docs: dict[int, Document], ref: RecordRef, draft: CaseDraft
) -> list[tuple[int | None, str]]:
    """``(paragraph idx or None, fact id)`` per step; two steps on one paragraph share a fact."""
    fix = "give every step as {\"question\": str, \"answer\": str, \"paragraph_support_idx\": int}"
    out: list[tuple[int | None, str]] = []
    for i, step in enumerate(steps, start=1):
        if not isinstance(step, dict) or not isinstance(step.get("question"), str):
            raise ref.error(
                f"question_decomposition[{i - 1}] lacks a string 'question'",
                field="question_decomposition",
                fix=fix,
            )
        idx = step.get("paragraph_support_idx")
        doc = docs.get(idx) if isinstance(idx, int) and not isinstance(idx, bool) else None
        if doc is None:
            fact_id = f"missing:step{i}"
            draft.warn(
                f"step {i} names paragraph_support_idx {idx!r}, which is not in 'paragraphs'; "
                f"{fact_id} has no span"
            )
            draft.facts[fact_id] = {
                "source_id": f"missing:paragraph {idx}", "spans": [], "entities": [], "title": None
            }
            out.append((None, fact_id))
            continue
        fact_id = f"{doc.id}:p{idx}"
        if fact_id not in draft.facts:
            span = {"start": 0, "end": len(doc.text), "text": doc.text}
            draft.facts[fact_id] = {
                "source_id": doc.id, "spans": [span], "entities": [doc.title], "title": doc.title
            }
        out.append((idx, fact_id))
    return out


def _step_edges(
    i: int, step: dict[str, Any], steps: list[Any], step_facts: list[tuple[int | None, str]], draft: CaseDraft
) -> None:
    text: str = step["question"]
    relation = text.rsplit(">>", 1)[1].strip() if ">>" in text else ""
    for match in _REF.finditer(text):
        k = int(match.group(1))
        if not 1 <= k < i:
            draft.warn(f"step {i} refers to #{k}, which is not an earlier step; no edge")
            continue
        left_of_relation = ">>" in text and match.start() < text.rindex(">>")
        bridge_field = relation if relation and left_of_relation else f"answer_of_step_{k}"
        answer = steps[k - 1].get("answer")
        value = None if answer is None else str(answer)
        draft.add_edge(step_facts[k - 1][1], step_facts[i - 1][1], bridge_field, value)
