"""Order held evidence by the chains it forms, not by single-passage relevance.

A multi-hop question is answered by a *set* of passages; ranking passages one by one (as single-shot
retrieval does) lets five near-duplicates of the first hop crowd out the second. So the offline engine
scores *pairs* — a first-hop passage ``p`` with either a passage ``c`` reached from it through a
bridge, or another first-hop passage (the two branches of a comparison) — and fills the context with
the members of the best pairs first::

    pair(p, c) = coverage(p ∪ c) + W_FIRST · s1(p) + W_NEXT · s(c) + W_NAMED · (named(p) + named(c))
                 + W_LINK · linked(p, c)

* ``coverage`` — IDF-weighted share of the question's (stemmed) content terms that ``p`` and ``c``
  contain together: a chain should account for the whole question, each passage for a part of it;
* ``s1(p)`` — p's hop-1 score over the best hop-1 score; ``s(c)`` — c's score in the list that found
  it over the best score of that hop's lists (hop-1 score for a first-hop partner);
* ``named`` — 1 when the question names the passage's title (the anchors of a comparison, the
  first hop of a bridge question), else 0;
* ``linked`` — 1 when one of the two names the other's title and the question does not (the film
  names its director, the wife her husband: how a chain's links are written), else 0.

Longer paths ``(p, c, d)`` and ``(p, c, d, e)`` — each passage reached from the one before — are
scored the same way (``s`` averaged over the followers, ``linked`` over the path's links), and only
when each added passage brings at least ``MIN_PATH_GAIN`` of the question's weight to what the path
before it covers, or answers the plan's next lookup (a branch marked ``planned``: the hop the plan
asked for after the one it follows, whose sub-query names a relation — "the country where … was a
citizen" — more than the question's terms).
Pairs and paths start from a *head*: one of the first ``parents`` first-hop passages by rank, or any
first-hop passage whose title the question names, however it ranked (with parallel first-hop branches,
a comparison's second entity can rank below the first branch's look-alikes). A head pairs with the
other heads, with what was reached from it, and with any held passage it is linked to, whichever
lookup found that one (scored by its best score in any list), when that passage adds at least
``MIN_LINK_GAIN`` of the question's weight to what the head covers.
Greedy selection adds the
members of the best remaining path until the context is full, then the rest of the first hop in
rank order. The weights are round numbers, one set for every dataset, chosen by the best worst-case
gain over the bundled dev and the shared training-split samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hoprag.records import Hit

W_FIRST = 0.5
W_NEXT = 1.0
W_NAMED = 0.25
W_LINK = 0.5
MIN_PATH_GAIN = 0.2  # share of the question's weight a third passage must add to extend a pair
MIN_LINK_GAIN = 0.1  # share a linked passage found by another lookup must add to a head to pair with it
MAX_PATH = 4  # passages in the longest path scored
W_FOUND = 0.25  # added per link (averaged over a path's links) that follows a value a plan's lookup found


@dataclass(frozen=True)
class Branch:
    """One conditioned retrieval: the hits found from ``parent`` (a chunk id) through a bridge.

    ``normalised``: the hits' scores are already shares of their own list's best (the graph hop's
    PageRank scores, on another scale than the bridge retrievals'), so ``s(c)`` is the score itself.
    ``planned``: the retrieval answered a dependent lookup of the plan, so its hits extend a path
    without having to add to the question's coverage."""

    parent: str
    hits: Sequence[Hit]
    normalised: bool = False
    planned: bool = False
    found: bool = False


class TermWeights:
    """Stemmed content terms of chunks (analysed when first looked at) and their IDF over the collection.

    ``texts`` maps a chunk id to its text (a mapping, or a function for a corpus read lazily).
    ``df`` (with ``count``, the collection's size) gives a term's document frequency — a loaded
    index's, read from its BM25 matrix (:class:`~hoprag.index.term_stats.TermStats`); without it
    the frequencies are counted once over every text of ``texts`` (a mapping then).
    IDF is ``ln(1 + N / (1 + df))``.
    """

    def __init__(
        self,
        texts: Mapping[str, str] | Callable[[str], str],
        analyze: Callable[[str], list[str]],
        *,
        df: Callable[[str], int] | None = None,
        count: int | None = None,
    ) -> None:
        self._texts = texts
        self._text_of: Callable[[str], str] = texts.__getitem__ if isinstance(texts, Mapping) else texts
        self._analyze = analyze
        self._terms: dict[str, frozenset[str]] = {}
        self._df = df
        self._idf: dict[str, float] | None = None
        if df is not None:
            n = max(count or 0, 1)
            self._n = n
            self._idf = {}
            self._default = math.log(1.0 + n)
        elif not isinstance(texts, Mapping):
            raise TypeError("TermWeights needs df= and count= when texts is a function")

    def terms(self, chunk_id: str) -> frozenset[str]:
        found = self._terms.get(chunk_id)
        if found is None:
            found = frozenset(self._analyze(self._text_of(chunk_id)))
            self._terms[chunk_id] = found
        return found

    def idf(self, term: str) -> float:
        if self._df is not None:
            found = self._idf.get(term)  # type: ignore[union-attr]
            if found is None:
                found = math.log(1.0 + self._n / (1.0 + self._df(term)))
                self._idf[term] = found  # type: ignore[index]
            return found
        if self._idf is None:
            df: dict[str, int] = {}
            for chunk_id in self._texts:  # type: ignore[union-attr]
                for t in self.terms(chunk_id):
                    df[t] = df.get(t, 0) + 1
            n = max(len(self._texts), 1)  # type: ignore[arg-type]
            self._idf = {t: math.log(1.0 + n / (1.0 + c)) for t, c in df.items()}
            self._default = math.log(1.0 + n)
        return self._idf.get(term, self._default)


def question_coverage(question_terms: set[str], chunk_ids: Sequence[str], weights: TermWeights,
                      *, total: float | None = None) -> float:
    """IDF-weighted share of the question's terms that the given chunks contain together.

    The sums run over sets, whose order changes with the process's string hashing: ``math.fsum``
    (exactly rounded) makes the result, and so every tie in chain ordering, the same in every process.
    ``total``: the question's own sum (:func:`question_weight`), when the caller scores many sets of chunks."""
    if total is None:
        total = question_weight(question_terms, weights)
    if not total or not chunk_ids:
        return 0.0
    held = frozenset().union(*(weights.terms(c) for c in chunk_ids))
    return math.fsum(weights.idf(t) for t in question_terms & held) / total


def question_weight(question_terms: set[str], weights: TermWeights) -> float:
    """The IDF sum of the question's terms: :func:`question_coverage`'s denominator."""
    return math.fsum(weights.idf(t) for t in question_terms)


class _Cover:
    """:func:`question_coverage` of many sets of chunks for one question: each chunk's question terms
    as a bit mask, each union's weight summed once (``math.fsum`` is exactly rounded: the sum over a
    mask's terms equals the sum over the set intersection, whatever the order)."""

    def __init__(self, question_terms: set[str], weights: TermWeights) -> None:
        self.terms = tuple(question_terms)
        self.weights = weights
        self.total = question_weight(question_terms, weights)
        self._masks: dict[str, int] = {}
        self._shares: dict[int, float] = {}

    def __call__(self, chunk_ids: Sequence[str]) -> float:
        if not self.total or not chunk_ids:
            return 0.0
        mask = 0
        for chunk_id in chunk_ids:
            found = self._masks.get(chunk_id)
            if found is None:
                held = self.weights.terms(chunk_id)
                found = self._masks[chunk_id] = sum(1 << i for i, t in enumerate(self.terms) if t in held)
            mask |= found
        share = self._shares.get(mask)
        if share is None:
            idf = self.weights.idf
            share = self._shares[mask] = math.fsum(idf(t) for i, t in enumerate(self.terms) if mask >> i & 1) / self.total
        return share


def order_by_chains(
    question_terms: set[str],
    first_hop: Sequence[Hit],
    branches: Sequence[Branch],
    weights: TermWeights,
    *,
    parents: int = 5,
    per_branch: int = 2,
    limit: int = 10,
    named: Callable[[str], bool] = lambda chunk_id: False,
    linked: Callable[[str, str], float] = lambda a, b: 0.0,
) -> list[str]:
    """Chunk ids best first: members of the best-scoring pairs, then the rest of hop 1.

    ``linked(a, b)``: whether one of the two passages names the other's title where the question
    does not (see :func:`hoprag.pipeline.title_links.title_linker`)."""
    cover = _Cover(question_terms, weights)

    def coverage(*chunk_ids: str) -> float:
        return cover(chunk_ids)

    top1 = max((h.score for h in first_hop), default=0.0) or 1.0
    s1 = {h.chunk_id: h.score / top1 for h in first_hop}
    next_best = max((b.hits[0].score for b in branches if b.hits and not b.normalised), default=0.0) or 1.0

    pairs: dict[tuple[str, ...], float] = {}
    named_cache: dict[str, float] = {}

    def is_named(chunk_id: str) -> float:
        if chunk_id not in named_cache:
            named_cache[chunk_id] = 1.0 if named(chunk_id) else 0.0
        return named_cache[chunk_id]

    link_cache: dict[tuple[str, str], float] = {}

    def is_linked(a: str, b: str) -> float:
        key = (a, b) if a < b else (b, a)
        if key not in link_cache:
            link_cache[key] = float(linked(a, b))
        return link_cache[key]

    # the first hop's best passages head chains, and so does every first-hop passage the question
    # names however it ranked (a comparison's second entity, a title the question quotes)
    heads = [h.chunk_id for h in first_hop[:parents]]
    heads += [h.chunk_id for h in first_hop[parents:] if h.chunk_id not in heads and is_named(h.chunk_id)]

    found_links: set[tuple[str, str]] = {(b.parent, h.chunk_id) for b in branches if b.found for h in b.hits[:per_branch]}

    def offer(p: str, c: str, s_c: float) -> None:
        if p == c:
            return
        score = (
            coverage(p, c)
            + W_FIRST * s1.get(p, 0.0)
            + W_NEXT * s_c
            + W_NAMED * (is_named(p) + is_named(c))
            + W_LINK * is_linked(p, c)
            + W_FOUND * ((p, c) in found_links)
        )
        key = (p, c)
        if score > pairs.get(key, -1.0):
            pairs[key] = score

    for i, p in enumerate(heads):
        for c in heads[i + 1 :]:
            offer(p, c, s1[c])
    followers: dict[str, list[tuple[str, float, bool]]] = {}
    for branch in branches:
        scale = 1.0 if branch.normalised else next_best
        for hit in branch.hits[:per_branch]:
            offer(branch.parent, hit.chunk_id, hit.score / scale)
            followers.setdefault(branch.parent, []).append((hit.chunk_id, hit.score / scale, branch.planned))

    # Longer paths: a head, a passage reached from it, one reached from that, and so on, when each
    # new passage adds to what the path covers (a longer path must account for more of the question)
    # or answers the plan's next lookup (a planned hop is a link of the chain the plan spells out).
    def extend(path: tuple[str, ...], follow: tuple[float, ...]) -> None:
        if len(path) >= MAX_PATH:
            return
        base = coverage(*path)
        for d, s_d, planned in followers.get(path[-1], ()):
            if d in path or (not planned and coverage(*path, d) - base < MIN_PATH_GAIN):
                continue
            longer, scores = (*path, d), (*follow, s_d)
            score = (
                coverage(*longer)
                + W_FIRST * s1.get(path[0], 0.0)
                + W_NEXT * sum(scores) / len(scores)
                + W_NAMED * sum(is_named(x) for x in longer)
                + W_LINK * sum(is_linked(a, b) for a, b in zip(longer, longer[1:])) / (len(longer) - 1)
                + W_FOUND * sum((a, b) in found_links for a, b in zip(longer, longer[1:])) / (len(longer) - 1)
            )
            if score > pairs.get(longer, -1.0):
                pairs[longer] = score
            extend(longer, scores)

    for p in heads:
        for c, s_c, _ in followers.get(p, ()):
            if c != p:
                extend((p, c), (s_c,))

    # A head also pairs with any passage it is linked to, wherever that passage was found: the chain's
    # second passage is often held from another lookup than the one that followed this head (the
    # season's article, reached from a bridge of a look-alike, names the university the question
    # describes). Its score is its best in any list. It must add to what the head covers: a document
    # every other passage names (a policy each contract cites) links to all of them alike.
    found_best: dict[str, float] = dict(s1)
    for kids in followers.values():
        for c, s_c, _ in kids:
            found_best[c] = max(found_best.get(c, 0.0), s_c)
    for p in heads:
        alone = coverage(p)
        for c, s_c in found_best.items():
            if c == p or (p, c) in pairs or (c, p) in pairs:
                continue
            if coverage(p, c) - alone >= MIN_LINK_GAIN and is_linked(p, c):
                offer(p, c, s_c)

    order: list[str] = []
    for path, _ in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(order) >= limit:
            break
        for chunk_id in path:
            if chunk_id not in order:
                order.append(chunk_id)
    for hit in first_hop:
        if hit.chunk_id not in order:
            order.append(hit.chunk_id)
    if not order and first_hop:
        order = [h.chunk_id for h in first_hop]
    return order[:limit]
