"""The selected evidence of an imported trace: which of the documents its pipeline found it went on with.

The rule, first that applies:

1. ``prompt``: the documents the answering LLM call was given. Each retrieved or reranked document's
   recorded text (``retrieval.documents.N.document.content``) is looked for in the call's prompt
   (:func:`hoprag.otel_span_text.prompt_texts`), as written or with runs of whitespace read as one
   space; the documents found, in the order the prompt holds them, are the evidence. The answering
   call is the last LLM span to end whose prompt holds at least one document. Texts under
   :data:`MIN_MATCH_CHARS` characters are not looked for (a word would be found anywhere), and a text
   found only inside a longer document's text is not counted as given on its own.
2. ``reranker``: the output documents of the ``RERANKER`` spans, in their order.
3. ``retrieved``: every retrieved document, in call order, then rank.

Each document is in the evidence once. Documents retrieved but not selected stay as their calls' hits,
so retrieval measures do not change with the route. Evidence is document-level: no offsets, so a
document covers a fact of its own. Only one trace's spans are read here: the import streams the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hoprag.otel_span_text import prompt_texts
from hoprag.otlp_spans import OtelSpan
from hoprag.records import Evidence, Hit, HopStep

__all__ = ["EVIDENCE_ROUTES", "MIN_MATCH_CHARS", "Found", "evidence_summary", "prompt_order", "select_evidence"]

EVIDENCE_ROUTES = ("prompt", "reranker", "retrieved")
MIN_MATCH_CHARS = 20


@dataclass(frozen=True)
class Found:
    """A recorded document: its hit, the text the span recorded with it, and the call that found it
    (``None`` for a reranker's output)."""

    hit: Hit
    content: str
    step: HopStep | None


def select_evidence(retrieved: Sequence[Found], reranked: Sequence[Found], llms: Sequence[OtelSpan],
                    texts: dict[str, str], last: HopStep | None) -> tuple[list[Evidence], str]:
    """The trace's selected evidence and its route (one of :data:`EVIDENCE_ROUTES`).

    ``retrieved`` in call order, then rank; ``llms`` the LLM spans in order of end; ``texts`` a
    document's text by id (the first recorded); ``last`` the trace's last call, where a reranker's
    documents are placed."""
    candidates = [*retrieved, *reranked]
    for span in reversed(llms):
        order = next((o for o in (prompt_order(t, [f.content for f in candidates]) for t in prompt_texts(span)) if o),
                     [])
        if order:
            return _once([candidates[i] for i in order], texts, last), "prompt"
    if reranked:
        return _once(reranked, texts, last), "reranker"
    return _once(retrieved, texts, last), "retrieved"


def evidence_summary(counts: dict[str, int]) -> str:
    """What an import prints: how many traces took their selected evidence by each route."""
    total = sum(counts.values())
    own = f", {counts['hoprag']} as hoprag recorded it" if counts.get("hoprag") else ""
    return (f"selected evidence of {total} traces: {counts.get('prompt', 0)} from the LLM prompt, "
            f"{counts.get('reranker', 0)} from a reranker, {counts.get('retrieved', 0)} all retrieved documents{own}")


def _once(found: Sequence[Found], texts: dict[str, str], last: HopStep | None) -> list[Evidence]:
    """Evidence of each document once; a reranker's document is placed at the last call."""
    evidence, seen = [], set()
    for item in found:
        if item.hit.doc_id in seen:
            continue
        seen.add(item.hit.doc_id)
        step = item.step or last
        evidence.append(Evidence(hit=item.hit, text=texts.get(item.hit.doc_id, ""), title="",
                                 hop=step.hop if step else 1, step_id=step.step_id if step else "",
                                 sub_query=step.sub_query if step else ""))
    return evidence


def _norm(text: str) -> str:
    return " ".join(text.split())


def prompt_order(prompt: str, contents: Sequence[str]) -> list[int]:
    """The positions in ``contents`` of the texts ``prompt`` holds, in the order it holds them (ties:
    the earlier position); whitespace runs read as one space on both sides.

    Longer texts are placed first and a shorter one must lie outside them, so a passage quoted inside
    another passage is not taken as given."""
    text = _norm(prompt)
    if not text:
        return []
    placed: dict[int, int] = {}  # position in contents -> offset in the prompt
    at_text: dict[str, int] = {}  # the same text retrieved twice is one place
    claimed: list[tuple[int, int]] = []
    needles = sorted(((i, _norm(c)) for i, c in enumerate(contents)), key=lambda pair: (-len(pair[1]), pair[0]))
    for index, needle in needles:
        if len(needle) < MIN_MATCH_CHARS:
            continue
        if needle in at_text:
            placed[index] = at_text[needle]
            continue
        start = text.find(needle)
        while start >= 0 and any(a <= start and start + len(needle) <= b for a, b in claimed):
            start = text.find(needle, start + 1)
        if start >= 0:
            claimed.append((start, start + len(needle)))
            placed[index] = at_text[needle] = start
    return sorted(placed, key=lambda i: (placed[i], i))
