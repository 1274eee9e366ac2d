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

Measures at several cutoffs ask the same question of growing prefixes of one list (the first k
evidence entries, the first k hits of each step). Coverage only grows with the prefix, so
:func:`first_cover` answers it once: for each fact, the smallest position ``p`` such that the items
at positions ``<= p`` cover it; the facts covered at cutoff ``k`` are those with ``p <= k``
(:func:`covered_within`), the same set :func:`covered_facts` gives for the prefix.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hoprag.datasets.schema import Case, Fact, Span
from hoprag.evaluation.memo import memoized
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


def _located_facts(case: Case) -> tuple[frozenset[str], tuple[tuple[str, str, list[Span]], ...]]:
    """The sources of the case's facts, and ``(fact_id, source_id, spans)`` in ``case.facts`` order;
    facts of a ``missing:`` source are left out (never covered)."""
    facts = tuple(
        (fact_id, fact.source_id, fact.spans)
        for fact_id, fact in case.facts.items()
        if not fact.source_id.startswith(MISSING_SOURCE_PREFIX)
    )
    return frozenset(source for _, source, _ in facts), facts


def covered_facts(case: Case, items: Iterable[Hit | Evidence | Located]) -> set[str]:
    """Ids of the case's facts that ``items`` cover (the rule of :func:`fact_covered`, per fact)."""
    sources, facts = memoized("located_facts", (case,), lambda: _located_facts(case))
    ranges: dict[str, list[tuple[int, int]]] = {}
    unlocated: set[str] = set()  # documents found by an item without offsets: all their facts are covered
    for item in items:
        hit = item.hit if isinstance(item, Evidence) else item
        doc = hit.doc_id
        if doc not in sources:
            continue
        start, end = hit.start, hit.end
        if start is None or end is None:
            unlocated.add(doc)
        else:
            ranges.setdefault(doc, []).append((start, end))
    covered: set[str] = set()
    for fact_id, source, spans in facts:
        if source in unlocated:
            covered.add(fact_id)
            continue
        found = ranges.get(source)
        if found and (not spans or all(any(overlaps(a, b, span) for a, b in found) for span in spans)):
            covered.add(fact_id)
    return covered


def first_cover(case: Case, positioned: Iterable[tuple[int, Hit | Evidence | Located]]) -> dict[str, int]:
    """For each fact some prefix covers, the smallest position ``p`` at which the items of position
    ``<= p`` cover it, in ``case.facts`` order (positions need not be sorted or distinct).

    Per fact: an item of its source without offsets covers it from that item's position on; a fact
    without spans is covered by its source's first item; otherwise every span needs an overlapping
    item, so the fact is covered from the latest of its spans' earliest overlapping positions.
    """
    sources, facts = memoized("located_facts", (case,), lambda: _located_facts(case))
    ranges: dict[str, list[tuple[int, int, int]]] = {}
    unlocated: dict[str, int] = {}
    for position, item in positioned:
        hit = item.hit if isinstance(item, Evidence) else item
        doc = hit.doc_id
        if doc not in sources:
            continue
        start, end = hit.start, hit.end
        if start is None or end is None:
            if position < unlocated.get(doc, math.inf):
                unlocated[doc] = position
        else:
            ranges.setdefault(doc, []).append((position, start, end))
    out: dict[str, int] = {}
    for fact_id, source, spans in facts:
        best = unlocated.get(source, math.inf)
        found = ranges.get(source, ())
        if not spans:
            best = min([best, *(p for p, _, _ in found)])
        elif found:
            best = min(best, max(_earliest_overlap(found, span) for span in spans))
        if best != math.inf:
            out[fact_id] = int(best)
    return out


def _earliest_overlap(found: Iterable[tuple[int, int, int]], span: Span) -> float:
    """The smallest position among ``(position, start, end)`` items overlapping ``span`` (inf if none):
    :func:`overlaps` written out, as this is the innermost loop of every coverage measure."""
    s, e = span.start, span.end
    if s == e:
        return min((p for p, a, b in found if a <= s < b), default=math.inf)
    return min((p for p, a, b in found if max(a, s) < min(b, e)), default=math.inf)


def covered_within(cover: Mapping[str, int], cutoff: float) -> set[str]:
    """The facts of a :func:`first_cover` map covered by the items at positions ``<= cutoff``."""
    return {fact_id for fact_id, position in cover.items() if position <= cutoff}
