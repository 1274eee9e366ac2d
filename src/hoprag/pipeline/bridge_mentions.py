"""Where a chain's bridge is named in a later hop's sentence, and which candidate stands next to it.

The final answer of a chain is a fact about the value an earlier hop found (the bridge): the
sentence that states it names that value, and the answer is the candidate next to it. "How many
campuses are there in the institution that Desert Studies Center is a part of?" reads, in a passage
of the second hop, "… 5 University of California campuses (…); 12 California State University
campuses (…)": the first hop's passage names California State University, so 12, not 5. "In 2010
Piraeus handled 513,319 TEUs, followed by Thessaloniki, which handled 273,282 TEUs." answers the
port of the city where the 26th Chess Olympiad was held (Thessaloniki) with 273,282.

The bridges of a hop are the values its query went through: the value a hop past the plan searched
(its query, "Eugene V. Debs"), or the best values the plan's own ranker
(:func:`hoprag.pipeline.value_bridges.found_values`) reads from the previous lookup's passages; of
those a sentence names, the best-ranked is read. These rules read the final answer only; a plan's
lookups never call them, so the passages a hop retrieves do not move with them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

from hoprag.index.entities import trim_mention
from hoprag.pipeline.text import content_tokens, fold, tokens
from hoprag.pipeline.value_bridges import found_values
from hoprag.records import Evidence

__all__ = ["BRIDGE_BEAM", "MAX_BRIDGE_WORDS", "NEAREST_WINDOW", "bridge_spans", "found_bridges", "nearest_to_bridge"]

BRIDGE_BEAM = 3  # values of a lookup read as its bridges (the plan keeps a beam of 2-3)
MAX_BRIDGE_WORDS = 6  # a longer "value" is a sentence the lookup fell back to, not a name

NEAREST_WINDOW = 8  # words between a candidate and a bridge mention beyond which the two are not read together


def _find(words: Sequence[str], target: Sequence[str], start: int = 0) -> int:
    for i in range(start, len(words) - len(target) + 1):
        if list(words[i : i + len(target)]) == list(target):
            return i
    return -1


def found_bridges(question: str, evidence: Sequence[Evidence]) -> Mapping[int, tuple[str, ...]]:
    """The bridge values each hop after the first went through (:func:`_found_bridges`), read once per
    question and evidence: the final answer's chain end and its candidates both ask."""
    return _found_bridges(question, tuple(evidence))


@lru_cache(maxsize=32)
def _found_bridges(question: str, evidence: tuple[Evidence, ...]) -> Mapping[int, tuple[str, ...]]:
    """The bridge values each hop after the first went through, by hop: a hop whose lookup is no
    part of the question ("IBM") searched that value; a plan's lookup cut from the question's words
    ("How many campuses are there in") searched the value its previous lookup found, read again
    here by the plan's own value ranker over that lookup's passages (its first ``BRIDGE_BEAM``). Values the question names
    are no bridges."""
    words = set(content_tokens(question))
    asked = set(tokens(question))
    by_hop: dict[int, list[Evidence]] = {}
    for item in evidence:
        by_hop.setdefault(item.hop, []).append(item)
    out: dict[int, tuple[str, ...]] = {}
    for hop, items in sorted(by_hop.items()):
        values: list[str] = []
        for sub_query in dict.fromkeys(e.sub_query for e in items if e.sub_query):
            if not set(content_tokens(sub_query)) <= words:
                values.append(sub_query)  # a bridge hop: its query is the value
            elif hop - 1 in by_hop:
                before = [e for e in by_hop[hop - 1] if e.sub_query and set(content_tokens(e.sub_query)) <= words]
                lookup = before[0].sub_query if before else ""
                if lookup and fold(lookup).strip() != fold(question).strip():
                    source = [e for e in before if e.sub_query == lookup]
                    values.extend(c.value for c in found_values(lookup, source, question=question)[:BRIDGE_BEAM])
        kept = [v for v in dict.fromkeys(values) if 0 < len(tokens(v)) <= MAX_BRIDGE_WORDS and not set(tokens(v)) <= asked]
        if kept:
            out[hop] = tuple(kept)
    return MappingProxyType(out)  # shared by the callers of the cache: read only


def bridge_spans(sentence: str, values: Sequence[str]) -> list[tuple[int, int]]:
    """Word spans ``(start, end)`` of ``sentence`` where the best-ranked of the bridge ``values``
    that it names is named ("California State University" before a lesser "California")."""
    if not values:  # most sentences: a hop without bridges (no words to cut)
        return []
    words = tokens(sentence)
    joined = f" {' '.join(words)} "
    for value in values:
        value_words = tokens(trim_mention(value))
        # a string test first: most sentences name none of the values, and the word scan is slow
        at = _find(words, value_words) if value_words and f" {' '.join(value_words)} " in joined else -1
        spans: list[tuple[int, int]] = []
        while at >= 0:
            spans.append((at, at + len(value_words)))
            at = _find(words, value_words, at + 1)
        if spans:
            return spans
    return []


def _gap(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Words between two spans; -1 when they overlap."""
    if a[0] < b[1] and b[0] < a[1]:
        return -1
    return b[0] - a[1] if a[1] <= b[0] else a[0] - b[1]


def nearest_to_bridge(sentence: str, candidates: Sequence[str], bridges: Sequence[tuple[int, int]]) -> set[str]:
    """The candidates nearest (within ``NEAREST_WINDOW`` words) to a bridge mention, one per
    mention; a candidate that is or holds the bridge is the bridge, never next to it."""
    if not bridges:
        return set()
    words = tokens(sentence)
    placed: list[tuple[str, tuple[int, int]]] = []
    for value in candidates:
        target = tokens(value)
        at = _find(words, target) if target else -1
        if at >= 0:
            placed.append((value, (at, at + len(target))))
    out: set[str] = set()
    for bridge in bridges:
        gaps = [(gap, value) for value, span in placed if (gap := _gap(span, bridge)) >= 0 and gap <= NEAREST_WINDOW
                and not any(_gap(span, other) < 0 for other in bridges)]
        if gaps:
            best = min(gap for gap, _ in gaps)
            tied = {value for gap, value in gaps if gap == best}
            # "Tennessee (42), North Carolina (35)": the number in the bracket after a name is that name's
            named = r"\W+".join(re.escape(w) for w in words[bridge[0] : bridge[1]])
            own = {value for value in tied if re.search(rf"{named}\W*\(\s*{re.escape(value)}", sentence, re.I)}
            out |= own or tied
    return out
