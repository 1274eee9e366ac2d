"""Which labelled facts a set of retrieved items (evidence or hits) covers.

An item *covers* fact ``f`` when

    item.doc_id == f.source_id  and  ( f.spans == []
                                       or item has no offsets (start or end is None)
                                       or for every span s of f, some item i' of the same doc
                                          with offsets overlaps s )

where ``[a, b)`` overlaps ``[s, e)`` iff ``max(a, s) < min(b, e)``; an empty span ``[s, s)``
counts as overlapped when ``a <= s < b`` (it marks a point). Items without offsets come from
document-level pipelines: finding the document is the best they can say, so it counts. A fact
whose ``source_id`` starts with ``"missing:"`` (an importer could not locate its source) is never
covered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hoprag.datasets.schema import Case, Fact, Span
from hoprag.records import Evidence, Hit

MISSING_SOURCE_PREFIX = "missing:"


@dataclass(frozen=True)
class Located:
    """The part of a hit or evidence that matching looks at: document and character range."""

    doc_id: str
    start: int | None
    end: int | None

    @property
    def has_offsets(self) -> bool:
        return self.start is not None and self.end is not None


def locate(item: Hit | Evidence) -> Located:
    """The document and offsets of a hit, or of the hit an evidence entry holds."""
    hit = item.hit if isinstance(item, Evidence) else item
    return Located(doc_id=hit.doc_id, start=hit.start, end=hit.end)


def overlaps(start: int, end: int, span: Span) -> bool:
    """``[start, end)`` intersects ``span``; an empty span is a point that must lie inside."""
    if span.start == span.end:
        return start <= span.start < end
    return max(start, span.start) < min(end, span.end)


def fact_covered(fact: Fact, items: Iterable[Hit | Evidence | Located]) -> bool:
    """True when ``items`` (taken together) cover ``fact``; see the module docstring."""
    if fact.source_id.startswith(MISSING_SOURCE_PREFIX):
        return False
    ranges: list[tuple[int, int]] = []
    for item in items:
        loc = item if isinstance(item, Located) else locate(item)
        if loc.doc_id != fact.source_id:
            continue
        if not fact.spans or not loc.has_offsets:
            return True
        ranges.append((loc.start, loc.end))  # type: ignore[arg-type]
    if not ranges:
        return False
    return all(any(overlaps(a, b, span) for a, b in ranges) for span in fact.spans)


def covered_facts(case: Case, items: Iterable[Hit | Evidence | Located]) -> set[str]:
    """Ids of the case's facts that ``items`` cover."""
    located = [item if isinstance(item, Located) else locate(item) for item in items]
    by_doc: dict[str, list[Located]] = {}
    for loc in located:
        by_doc.setdefault(loc.doc_id, []).append(loc)
    return {
        fact_id
        for fact_id, fact in case.facts.items()
        if fact_covered(fact, by_doc.get(fact.source_id, ()))
    }
