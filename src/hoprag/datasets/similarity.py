"""Case similarity for leakage and grouped splits: evidence sets, content words, exact set-similarity joins.

Two cases are *near-identical in evidence* when the Jaccard similarity of their required-fact sets
or of their source sets reaches a threshold:

- a fact is compared by what it points at, ``source_id`` plus its spans' offsets
  (:func:`fact_keys`), so two files that name the same fact differently still match and two
  files that reuse local names (``f1``, ``f2``) for different facts do not;
- the sources are the ``source_id`` of those facts (:func:`source_keys`).

The required facts are ``required_facts`` (every valid chain's facts when it is empty).

Two questions are *paraphrases* when the Jaccard similarity of their content words reaches a
threshold: folded tokens, stopwords dropped, Snowball-stemmed, as a set, so word order and
inflection do not matter (:func:`content_words`) -- and they are about the same things: at least
half of each question's named words (capitalised or numeric after the first word,
:func:`named_words`) occur among the other's content words. The second condition keeps two
instances of one template ("Where did the director of film X die?" for two films X) apart, while
a paraphrase written in lower case still matches.

:func:`similar_pairs` finds every pair of sets, one from each side, with Jaccard >= t exactly (not
approximately): tokens are ordered rarest first, each set is indexed by its prefix of
``|x| - ceil(t * |x|) + 1`` tokens, and two sets with Jaccard >= t always share a prefix token
(prefix filtering); every candidate is then confirmed with the exact Jaccard.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from hoprag.datasets.schema import Case
from hoprag.pipeline.text import STOPWORDS, content_tokens, fold

_WORD = re.compile(r"[^\W_]+(?:[-'\u2019][^\W_]+)*")


def evidence_fact_ids(case: Case) -> list[str]:
    """The case's required facts (all valid chains' facts when none is listed)."""
    if case.required_facts:
        return list(case.required_facts)
    return list(dict.fromkeys(f for chain in case.valid_chains for f in chain))


def fact_keys(case: Case) -> frozenset[str]:
    """Each required fact as ``source_id#start-end,...`` (its source alone when it has no span)."""
    keys = set()
    for fact_id in evidence_fact_ids(case):
        fact = case.facts.get(fact_id)
        if fact is None:
            continue
        spans = ",".join(f"{s.start}-{s.end}" for s in sorted(fact.spans, key=lambda s: (s.start, s.end)))
        keys.add(f"{fact.source_id}#{spans}")
    return frozenset(keys)


def source_keys(case: Case) -> frozenset[str]:
    """The source documents of the required facts."""
    return frozenset(case.facts[f].source_id for f in evidence_fact_ids(case) if f in case.facts)


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("english")


def _unpossessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "\u2019s")) else word


def content_words(text: str) -> frozenset[str]:
    """Stemmed content words of a question, as a set (order-insensitive)."""
    words = [_unpossessive(w) for w in content_tokens(text)]
    return frozenset(_stemmer().stemWords(words)) if words else frozenset()


def named_words(text: str) -> frozenset[str]:
    """Stemmed words that are capitalised or start with a digit, the question's first word excepted."""
    words = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if match.start() > 0 and (word[0].isupper() or word[0].isdigit()):
            folded = _unpossessive(fold(word))
            if folded not in STOPWORDS:
                words.append(folded)
    return frozenset(_stemmer().stemWords(words)) if words else frozenset()


def same_subject(a: str, b: str) -> bool:
    """At least half of each question's named words occur among the other's content words."""
    for named, other in ((named_words(a), content_words(b)), (named_words(b), content_words(a))):
        if named and len(named & other) / len(named) < 0.5:
            return False
    return True


def paraphrase_pairs(
    left: Sequence[Case], right: Sequence[Case] | None = None, *, threshold: float
) -> list[tuple[int, int, float]]:
    """Question pairs with content-word Jaccard >= threshold about the same subject (see the module doc)."""
    words_left = [content_words(c.query) for c in left]
    words_right = None if right is None else [content_words(c.query) for c in right]
    other = left if right is None else right
    return [(i, j, score) for i, j, score in similar_pairs(words_left, words_right, threshold=threshold)
            if same_subject(left[i].query, other[j].query)]


def evidence_pairs(
    left: Sequence[Case], right: Sequence[Case] | None = None, *, threshold: float
) -> list[tuple[int, int, float, float]]:
    """``(i, j, fact_jaccard, source_jaccard)`` for case pairs whose required facts or sources reach
    ``threshold`` (see the module doc)."""
    other = left if right is None else right
    facts_l, sources_l = [fact_keys(c) for c in left], [source_keys(c) for c in left]
    facts_r = None if right is None else [fact_keys(c) for c in right]
    sources_r = None if right is None else [source_keys(c) for c in right]
    found = {(i, j) for i, j, _ in similar_pairs(facts_l, facts_r, threshold=threshold)}
    found |= {(i, j) for i, j, _ in similar_pairs(sources_l, sources_r, threshold=threshold)}
    return [(i, j, jaccard(facts_l[i], fact_keys(other[j])), jaccard(sources_l[i], source_keys(other[j])))
            for i, j in sorted(found)]


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """``|a & b| / |a | b|``; 0 when both are empty (nothing in common to leak)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def _prefix_length(size: int, threshold: float) -> int:
    return size - math.ceil(threshold * size - 1e-9) + 1


def similar_pairs(
    left: Sequence[frozenset[str]], right: Sequence[frozenset[str]] | None = None, *, threshold: float
) -> list[tuple[int, int, float]]:
    """Every ``(i, j, jaccard)`` with ``jaccard(left[i], right[j]) >= threshold`` (exact).

    With ``right`` omitted, pairs within ``left`` (``i < j``). Empty sets never pair. ``threshold``
    must be in (0, 1].
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    self_join = right is None
    right = left if right is None else right
    freq: Counter[str] = Counter()
    for group in (left,) if self_join else (left, right):
        for s in group:
            freq.update(s)

    def ordered(s: frozenset[str]) -> list[str]:
        return sorted(s, key=lambda t: (freq[t], t))

    index: dict[str, list[int]] = {}
    for i, s in enumerate(left):
        if s:
            for token in ordered(s)[: _prefix_length(len(s), threshold)]:
                index.setdefault(token, []).append(i)
    out: list[tuple[int, int, float]] = []
    for j, s in enumerate(right):
        if not s:
            continue
        candidates: set[int] = set()
        for token in ordered(s)[: _prefix_length(len(s), threshold)]:
            candidates.update(index.get(token, ()))
        for i in sorted(candidates):
            if self_join and i >= j:
                continue
            score = jaccard(left[i], s)
            if score >= threshold:
                out.append((i, j, score))
    return sorted(out)
