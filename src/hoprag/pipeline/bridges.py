"""Offline bridge extraction: which entities or values in held evidence point to the next hop.

A bridge is something a later hop must look up: a named entity (``Neil Peart``), a quoted title
(``"Katy Lied"``), an identifier (``KP-214``) or a date. Without a model we find candidates by their
surface shape and rank them by how much they add to the question:

    score = shape prior × novelty × position

``novelty`` is the share of the candidate's tokens the question does not already contain (a bridge
the question names is no bridge), ``position`` favours mentions early in the passage (encyclopaedic
and contractual text states its key relations first), and the shape prior ranks quoted titles and
identifiers above bare capitalised words. Candidates that repeat the passage's own title are dropped.
A name that ends in a noun the question asks for in lower case ("Cartoon Network" for "on a network
founded by who?") is not less novel for it: the noun says what kind of thing the bridge is.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

# the surface shapes of a mention are shared with the index-time entity graph (one floor down)
from hoprag.index.entities import mention_kind, surface_spans, title_key, trim_mention
from hoprag.pipeline.text import STOPWORDS, fold, tokens

__all__ = ["SHAPE_PRIOR", "TITLE_BOOST", "BridgeCandidate", "extract_bridges", "title_key"]

SHAPE_PRIOR = {"quoted": 1.3, "identifier": 1.4, "entity": 1.0, "date": 0.6}
TITLE_BOOST = 2.0


@dataclass(frozen=True)
class BridgeCandidate:
    """One candidate bridge value found in a piece of evidence."""

    value: str
    kind: str
    score: float
    chunk_id: str


_CONNECTOR = re.compile(r"\s+(?:of|for|on|de|la|le|du|da|di|del|y|the|&)\s+")


def _drop_known_tail(value: str, question_tokens: set[str]) -> str:
    """'KR-West for Skyline Telemetry' asked about Skyline Telemetry is 'KR-West': a tail after a
    connector that the question already names is context, not part of the bridge."""
    matches = list(_CONNECTOR.finditer(value))
    if matches:
        tail = tokens(value[matches[-1].end() :])
        if tail and set(tail) <= question_tokens:
            return value[: matches[-1].start()]
    return value


# The same passages are read for bridges at every hop of every question: what depends on the text
# alone (its mentions, and each mention's tokens, title key and kind) is worked out once per text.
@lru_cache(maxsize=2048)
def _mentions(text: str) -> tuple[tuple[str, str, int], ...]:
    """``(trimmed span, kind, offset)`` of every mention in ``text`` (:func:`surface_spans`)."""
    return tuple((trim_mention(raw), kind, offset) for raw, kind, offset in surface_spans(text))


@lru_cache(maxsize=1 << 14)
def _value_facts(value: str, kind: str) -> tuple[list[str], str, str, str | None, list[str]]:
    """A mention's tokens, folded form, title key, kind (None: names nothing) and content tokens.
    The lists are shared by every caller: read them, never change them."""
    value_tokens = tokens(value)
    if not value_tokens:
        return value_tokens, "", "", None, []
    return (value_tokens, fold(value), title_key(value), mention_kind(value, kind, value_tokens),
            [t for t in value_tokens if t not in STOPWORDS])


@lru_cache(maxsize=1024)
def _lowercase_words(question: str) -> frozenset[str]:
    """The question's content words written in lower case: the nouns it asks for ("network",
    "river"), not the names it gives."""
    return frozenset(
        t for word in question.split() if word[:1].islower() for t in tokens(word) if t not in STOPWORDS
    )


def extract_bridges(
    text: str,
    *,
    question: str,
    chunk_id: str = "",
    exclude: tuple[str, ...] = (),
    limit: int = 5,
    known_titles: Collection[str] = (),
    own_title: str = "",
    type_nouns: bool = False,
) -> list[BridgeCandidate]:
    """Rank bridge candidates in ``text`` for ``question``; ``exclude`` holds values to skip (titles).

    ``known_titles`` holds :func:`title_key` forms of the corpus's document titles: a candidate
    that names a document (the way a hyperlink would) is boosted by ``TITLE_BOOST``.
    ``type_nouns``: a name ending in a noun the question asks for in lower case ("Cartoon Network"
    for "on a network founded by who?") keeps its full novelty: that noun says what the name is.
    """
    question_tokens = set(tokens(question))
    asked = _lowercase_words(question) if type_nouns else frozenset()
    own_tokens = set(tokens(own_title))
    excluded = {title_key(e) for e in exclude if e} | ({title_key(own_title)} if own_title else set())
    best: dict[str, BridgeCandidate] = {}
    length = max(len(text), 1)
    for raw, kind, offset in _mentions(text):
        value = _drop_known_tail(raw, question_tokens)
        value_tokens, key, value_key, shaped, content = _value_facts(value, kind)
        if not value_tokens:
            continue
        if value_key in excluded:
            continue
        if shaped is None:
            continue
        kind = shaped
        if len(content) > 1 and content[-1] in asked:
            novelty = sum(1 for t in content[:-1] if t not in question_tokens) / (len(content) - 1)
        else:
            novelty = sum(1 for t in content if t not in question_tokens) / len(content)
        if novelty == 0.0:
            continue
        if own_tokens and set(content) <= own_tokens:
            novelty *= 0.5  # a name variant of the passage's own subject, or a part of its title
        position = 1.0 - 0.5 * (offset / length)
        score = SHAPE_PRIOR[kind] * novelty * position * (1.0 + 0.1 * min(len(content) - 1, 3))
        if known_titles and value_key in known_titles:
            score *= TITLE_BOOST
        previous = best.get(key)
        if previous is None or score > previous.score:
            best[key] = BridgeCandidate(value=value, kind=kind, score=score, chunk_id=chunk_id)
        else:
            # repeated mentions reinforce a candidate
            best[key] = BridgeCandidate(
                value=previous.value, kind=previous.kind, score=previous.score * 1.1, chunk_id=chunk_id
            )
    ranked = sorted(best.values(), key=lambda c: (-c.score, c.value))
    return ranked[:limit]
