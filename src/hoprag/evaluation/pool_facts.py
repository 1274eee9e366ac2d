"""Pool judgments back into case facts: each relevant (case, document) becomes a source-backed fact.

For every pair whose resolved grade (:func:`hoprag.evaluation.pools.resolve_judgments`) is 1 or
more, the case gets a fact ``pool:DOC_ID`` with ``source_id`` = the document, ``grade`` = the
resolved grade, ``title`` = the document's title, and one span per distinct ``passage`` the
relevant judgments marked (a judgment may quote the passage that makes the document relevant,
copied from ``annotation.jsonl``); the span's offsets are where that passage stands in the
document's text, so ``document.text[start:end] == span.text`` holds and the label audit
(:mod:`hoprag.datasets.labels`) can verify it. A relevant pair no judgment quotes a passage for
gets one span over the whole document. A quoted passage that is not in the document is refused,
naming the judgment.

Every judgment on the pair (the disagreeing ones too) is kept as the fact's provenance in the
case's ``metadata["fact_provenance"][FACT_ID]``: labeller, time and grade. Facts are added, never
chained: which facts make up a valid chain stays a labelling decision, so a case built from the
pool alone has facts and no chain (the audit says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hoprag.datasets.schema import Case, Fact, Span
from hoprag.errors import InputError
from hoprag.jsonl import read_jsonl_dicts

__all__ = ["FACT_PREFIX", "judged_cases", "read_annotation"]

FACT_PREFIX = "pool:"
#: the pool file labellers read (written by hoprag.evaluation.pools.write_pool)
ANNOTATION_FILE = "annotation.jsonl"


def read_annotation(pool_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``(case_id, doc_id)`` → the annotation row (question, title, text) of a pool directory."""
    path = pool_dir / ANNOTATION_FILE
    if not path.is_file():
        raise InputError(f"no {ANNOTATION_FILE} in the pool directory", source=str(pool_dir),
                         fix="pass the --out directory written by `hoprag cases pool`")
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for line, row in read_jsonl_dicts(path, "pool annotation file"):
        if not all(isinstance(row.get(k), str) for k in ("case_id", "doc_id", "question", "text")):
            raise InputError("annotation row needs case_id, doc_id, question and text as strings", source=str(path),
                             line=line, fix="rebuild the pool with `hoprag cases pool`")
        rows[(row["case_id"], row["doc_id"])] = row
    return rows


def _spans(text: str, passages: Sequence[tuple[str, int]], *, case_id: str, doc_id: str, source: str) -> list[Span]:
    if not passages:
        return [Span(start=0, end=len(text), text=text)]
    spans = []
    for passage, number in passages:
        start = text.find(passage)
        if start < 0:
            raise InputError(
                f"judgment {number} quotes a passage that is not in document {doc_id!r} (case {case_id!r}): "
                f"{passage[:80]!r}", source=source,
                fix="copy the passage exactly from the document's text in annotation.jsonl, or leave 'passage' out")
        spans.append(Span(start=start, end=start + len(passage), text=passage))
    return spans


def judged_cases(
    judgments: Sequence[Any],
    qrels: dict[str, dict[str, int]],
    annotation: dict[tuple[str, str], dict[str, Any]],
    *,
    cases: Sequence[Case] | None = None,
    source: str = "<judgments>",
) -> list[Case]:
    """The cases with a fact for every relevant judged pair (see the module doc).

    ``judgments`` are :class:`~hoprag.evaluation.pools.Judgment` records (their order numbers the
    lines), ``qrels`` their resolved grades. With ``cases`` each judged case is that case with the
    facts added; without, a new case from the pool's question. Cases with no relevant pair are left out.
    """
    by_id = {c.case_id: c for c in cases} if cases is not None else None
    order = list(dict.fromkeys(j.case_id for j in judgments))
    out: list[Case] = []
    for case_id in order:
        relevant = [doc for doc, grade in qrels.get(case_id, {}).items() if grade >= 1]
        if not relevant:
            continue
        facts: dict[str, Fact] = {}
        provenance: dict[str, list[dict[str, Any]]] = {}
        question = ""
        for doc_id in relevant:
            row = annotation[(case_id, doc_id)]
            question = row["question"]
            group = [(n, j) for n, j in enumerate(judgments, start=1) if j.case_id == case_id and j.doc_id == doc_id]
            passages: list[tuple[str, int]] = []
            for number, judgment in group:
                if judgment.grade >= 1 and judgment.passage and judgment.passage not in dict(passages):
                    passages.append((judgment.passage, number))
            fact_id = FACT_PREFIX + doc_id
            facts[fact_id] = Fact(source_id=doc_id, grade=qrels[case_id][doc_id], title=row.get("title") or None,
                                  spans=_spans(row["text"], passages, case_id=case_id, doc_id=doc_id, source=source))
            provenance[fact_id] = [{"labeller": j.labeller, "time": j.time, "grade": j.grade} for _, j in group]
        if by_id is None:
            base = Case(case_id=case_id, query=question)
        elif case_id in by_id:
            base = by_id[case_id]
        else:
            raise InputError(f"judgments name case {case_id!r}, which is not in the cases file",
                             source=source, fix="pass the cases file the pool was built from")
        kept = dict((base.metadata or {}).get("fact_provenance") or {})
        out.append(base.model_copy(update={
            "facts": {**base.facts, **facts},
            "metadata": {**base.metadata, "fact_provenance": {**kept, **provenance}},
        }))
    return out
