"""Offline bridge extraction: which entities or values in held evidence point to the next hop.

A bridge is something a later hop must look up: a named entity (``Neil Peart``), a quoted title
(``"Katy Lied"``), an identifier (``KP-214``) or a date. Without a model we find candidates by their
surface shape and rank them by how much they add to the question:

    score = shape prior × novelty × position

``novelty`` is the share of the candidate's tokens the question does not already contain (a bridge
the question names is no bridge), ``position`` favours mentions early in the passage (encyclopaedic
and contractual text states its key relations first), and the shape prior ranks quoted titles and
identifiers above bare capitalised words. Candidates that repeat the passage's own title are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from hoprag.pipeline.text import STOPWORDS, fold, tokens

# A run of capitalised words, allowing short lowercase connectors inside ("Hall of Fame").
_WORD = r"(?:[A-Z]\.(?:[ \t]?[A-Z]\.)*|[A-Z\u00C0-\u00DE][\w\u00C0-\u024F'\-]*)"
_CAPITALISED = re.compile(
    r"(?<![\w'])(?:" + _WORD + r"|\d{1,2}(?:st|nd|rd|th))"
    r"(?:[ \t]+(?:(?:of|the|de|la|le|von|van|der|du|da|di|del|&|for|on|y)[ \t]+)*"
    r"(?:" + _WORD + r"|\d{1,2}(?:st|nd|rd|th)))*"
)
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d]*[^\W\d_][^\"\u201d]*)[\"\u201d]")
_IDENTIFIER = re.compile(r"\b[A-Z]{1,6}-?\d{1,6}[A-Z]?\b|\b[A-Z]+-[A-Z0-9]+(?:-[A-Z0-9]+)*\b")
_DATE = re.compile(
    r"\b(?:\d{1,2}\s+)?(?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December)(?:\s+\d{1,2},?)?\s+\d{3,4}\b|\b1[0-9]{3}\b|\b20[0-9]{2}\b"
)

# Capitalised words that start sentences or name nothing on their own.
_WEAK_SINGLE = frozenset(
    """the a an he she it they his her its their this that these those in on at for from by with
    as after before during while when where which who what however also although but and or if
    there here some many most both each all one two three first second later early late born died
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday section clause version note
    customer customers plan plans policy""".split()
)

_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)

SHAPE_PRIOR = {"quoted": 1.3, "identifier": 1.4, "entity": 1.0, "date": 0.6}
TITLE_BOOST = 2.0
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")


def title_key(title: str) -> str:
    """A document title as a link target: folded, without a trailing "(disambiguation)" or article."""
    key = fold(_PARENTHETICAL.sub("", title)).strip(" .,;:'\"")
    for article in ("the ", "a ", "an "):
        if key.startswith(article):
            key = key[len(article):]
    return " ".join(key.split())


@dataclass(frozen=True)
class BridgeCandidate:
    """One candidate bridge value found in a piece of evidence."""

    value: str
    kind: str
    score: float
    chunk_id: str


def _trim(value: str) -> str:
    value = value.strip(" \t.,;:'\"")
    if value.endswith(("'s", "\u2019s")):
        value = value[:-2]
    # drop trailing connectors left by the regex ("Hall of" -> "Hall")
    words = value.split()
    while words and words[-1].lower() in STOPWORDS:
        words.pop()
    while words and words[0].lower() in {"the", "a", "an"}:
        words.pop(0)
    return " ".join(words)


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


def _spans(text: str) -> list[tuple[str, str, int]]:
    found: list[tuple[str, str, int]] = []
    for match in _QUOTED.finditer(text):
        found.append((match.group(1), "quoted", match.start()))
    for match in _IDENTIFIER.finditer(text):
        found.append((match.group(0), "identifier", match.start()))
    for match in _DATE.finditer(text):
        found.append((match.group(0), "date", match.start()))
    for match in _CAPITALISED.finditer(text):
        found.append((match.group(0), "entity", match.start()))
    return found


def extract_bridges(
    text: str,
    *,
    question: str,
    chunk_id: str = "",
    exclude: tuple[str, ...] = (),
    limit: int = 5,
    known_titles: Collection[str] = (),
    own_title: str = "",
) -> list[BridgeCandidate]:
    """Rank bridge candidates in ``text`` for ``question``; ``exclude`` holds values to skip (titles).

    ``known_titles`` holds :func:`title_key` forms of the corpus's document titles: a candidate
    that names a document (the way a hyperlink would) is boosted by ``TITLE_BOOST``.
    """
    question_tokens = set(tokens(question))
    own_tokens = set(tokens(own_title))
    excluded = {title_key(e) for e in exclude if e} | ({title_key(own_title)} if own_title else set())
    best: dict[str, BridgeCandidate] = {}
    length = max(len(text), 1)
    for raw, kind, offset in _spans(text):
        value = _drop_known_tail(_trim(raw), question_tokens)
        value_tokens = tokens(value)
        if not value_tokens:
            continue
        key = fold(value)
        if title_key(value) in excluded:
            continue
        if len(value_tokens) == 1 and (value_tokens[0] in _WEAK_SINGLE or len(value_tokens[0]) < 3):
            if kind == "entity":
                continue
        content = [t for t in value_tokens if t not in STOPWORDS]
        if not content:
            continue
        if kind == "entity" and value_tokens[0] in _MONTHS:
            kind = "date"
        if kind == "identifier" and len(value) < 4:
            kind = "entity"
        if kind == "quoted" and len(value) > 80:
            continue
        novelty = sum(1 for t in content if t not in question_tokens) / len(content)
        if novelty == 0.0:
            continue
        if own_tokens and set(content) <= own_tokens:
            novelty *= 0.5  # a name variant of the passage's own subject, or a part of its title
        position = 1.0 - 0.5 * (offset / length)
        score = SHAPE_PRIOR[kind] * novelty * position * (1.0 + 0.1 * min(len(content) - 1, 3))
        if known_titles and title_key(value) in known_titles:
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
