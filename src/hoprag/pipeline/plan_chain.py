"""Where a plan's chain ends in the evidence, and the words its last lookup reads the answer by.

The compositional planner cuts a nested question into dependent lookups ("the county where Van Hook
Township is located" → "What is the seat of" that county), and the engine orders the evidence by the
chain it found: the first lookup's anchor, then the passage a value it found led to. The final answer
is a fact of the deepest lookup's passage, stated with that lookup's relation words. These rules read
the final answer only (:func:`hoprag.pipeline.extractive.extract_answer` without ``lookup``), so the
passages a plan's lookups retrieve never move with them.
"""

from __future__ import annotations

from collections.abc import Sequence

from hoprag.pipeline.bridge_mentions import bridge_spans, found_bridges
from hoprag.pipeline.bridges import title_key
from hoprag.pipeline.text import content_tokens, fold, tokens
from hoprag.records import Evidence

__all__ = ["PLAN_LEAD", "last_lookup_terms", "led_chain_end", "named_items", "plan_chain_end", "same_page"]

PLAN_LEAD = 4  # leading items among which a plan chain's deepest passages are looked for (see plan_chain_end)


def named_items(question: str, evidence: Sequence[Evidence]) -> set[str]:
    """The items whose title (without its "(film)" qualifier) the question names."""
    folded = f" {' '.join(tokens(question))} "
    return {e.chunk_id for e in evidence if tokens(title_key(e.title)) and f" {' '.join(tokens(title_key(e.title)))} " in folded}


def _carved(question: str, items: Sequence[Evidence]) -> bool:
    """Whether every item's lookup is cut from the question's own words (a plan's lookup; a bridge hop
    past the plan asks its value) and none is the question itself."""
    words, asked = set(content_tokens(question)), fold(question).strip()
    words |= {w[:-2] for w in words if w.endswith("'s")}  # the planner unfolds "Hello Love's performer" to "performer of Hello Love"
    return all(e.sub_query and set(content_tokens(e.sub_query)) <= words and fold(e.sub_query).strip() != asked for e in items)


def plan_chain_end(question: str, evidence: Sequence[Evidence]) -> set[str]:
    """The deepest lookup's passages of a plan's chain of three or more dependent lookups, when the
    evidence leads with that chain in hop order (1, 2, 3, …): "Who was in charge of the country where
    the composer of Aschenbrödel was a citizen?" is answered by the passage the last lookup ("Who was
    in charge of" Austria) found, not by the middle one (the composer's orchestra) that the first two
    items would name. Those items of the leading ``PLAN_LEAD`` that the question does not name; empty
    when the lead is no such chain."""
    run = 1
    while run < len(evidence) and evidence[run].hop == evidence[run - 1].hop + 1:
        run += 1
    deepest = evidence[run - 1]
    lookups = {fold(e.sub_query).strip() for e in evidence[:run]}
    if run < 3 or not _carved(question, evidence[:run]) or len(lookups) < run:
        return set()  # a short chain, or hops of the question itself rather than a plan's lookups
    named = named_items(question, evidence[:PLAN_LEAD])
    deepest_items = {e.chunk_id for e in evidence[:PLAN_LEAD] if e.hop == deepest.hop}
    # a passage the question names is the chain's start, unless the deepest lookup found nothing else
    # ("… refuse to surrender Namibia?": the last lookup's own passage is Namibia's)
    return (deepest_items - named) or deepest_items


def led_chain_end(question: str, evidence: Sequence[Evidence], chain_end: set[str]) -> set[str]:
    """The second leading item instead of ``chain_end`` when that is the first lead item alone (the
    passage the question's naming leaves, its first lookup's anchor) and the lead is a plan's two linked
    lookups, a value the first found leading to the second: the second names one of the values the
    plan's ranker reads from the first lookup's passages
    (:func:`hoprag.pipeline.bridge_mentions.found_bridges`). "Humboldt Peak, in the state where
    Silverton is located, is part of what mountain range?" leads with Silverton's passage, then
    Humboldt Peak's, which names Colorado: the range is read there, though the question names Humboldt
    Peak. Otherwise ``chain_end`` as it is."""
    if len(evidence) < 2 or chain_end != {evidence[0].chunk_id}:
        return chain_end
    first, second = evidence[0], evidence[1]
    if second.hop != first.hop + 1 or first.sub_query == second.sub_query or not _carved(question, (first, second)):
        return chain_end
    values = found_bridges(question, evidence).get(second.hop, ())
    return {second.chunk_id} if values and bridge_spans(f"{second.title} . {second.text}", values) else chain_end


def same_page(evidence: Sequence[Evidence], chain_end: set[str]) -> set[str]:
    """``chain_end`` with the other paragraphs of its pages among the leading ``PLAN_LEAD`` items (the
    same title, found by the same hop): a page cut into chunks is one passage, and the fact asked may
    sit in the paragraph after the one that ranked first ("The titular character Jason Bourne does not
    appear in The Bourne Legacy, because actor Matt Damon chose not to return …")."""
    pages = {(e.title, e.hop) for e in evidence if e.chunk_id in chain_end}
    return chain_end | {e.chunk_id for e in evidence[:PLAN_LEAD] if (e.title, e.hop) in pages} if pages else chain_end


def last_lookup_terms(question: str, evidence: Sequence[Evidence]) -> tuple[int, set[str]]:
    """The content words of the last lookup of a plan ("When did become a member of CARICOM" of
    "When did the country where Clonbrook is located become a member of CARICOM?"): the relation the
    answer's sentence states, apart from the words that led to the bridge. Empty when the evidence
    came from the question alone (no lookup of its own). Returned with the lookup's hop, whose
    passages alone it weighs: the words led there."""
    asked = fold(question).strip()
    lookups = [e for e in evidence if e.sub_query and fold(e.sub_query).strip() != asked]
    if not lookups:
        return 0, set()
    last = max(e.hop for e in lookups)
    sub_query = next(e.sub_query for e in lookups if e.hop == last)
    return last, set(content_tokens(sub_query)) & set(content_tokens(question))
