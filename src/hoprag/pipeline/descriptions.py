"""Descriptive answers: "what kind of activist?" asks for the word a sentence puts before the noun,
"what profession / position?" for the role a person's sentence names.

"Pyotr Verzilov is married to a Russian conceptual artist and what kind of activist?" is answered by
"political" from "… is a Russian conceptual artist and political activist": the lowercase word just
before the asked noun ("activist") in the best-scoring held sentences, never a determiner or a word
the question already holds. No model and no vocabulary: the noun the question names is the cue.
"What was the profession of Amy Johnson?" is answered by "aviator" from "… was a pioneering British
aviator who …" (the words after the nationality up to "who", a comma or a preposition), "What
position did X play?" by "striker" from "plays as a striker for …", and "What profession did A and B
both hold?" by the role both sentences list ("stage actor and film director", "film director,
screenwriter": "film director"). The answer is a span of the sentence it is read from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.pipeline.text import STOPWORDS, tokens
from hoprag.records import Evidence

__all__ = ["asked_description", "describe", "describe_role"]

_ASKS = re.compile(r"\b(?:what|which) (?:kind|type|sort) of (?P<noun>[a-z][a-z\-]+)\b", re.I)
SENTENCES_READ = 6  # the best-scoring sentences looked at, in score order
_NOT_A_KIND = frozenset({"this", "that", "these", "those", "such", "other", "another", "same", "first",
                         "former", "new", "only", "one", "its", "his", "her", "their", "an", "a", "the"})


def asked_description(question: str) -> str | None:
    """The noun whose kind the question asks for ("activist"), or ``None``."""
    match = _ASKS.search(question)
    return match.group("noun").lower() if match else None


def describe(question: str, scored: Sequence[tuple[float, int, Evidence, str]]) -> tuple[str, Evidence, str] | None:
    """``(the describing word, its passage, its sentence)`` from ``scored`` sentences (best first),
    or ``None`` when no read sentence puts a describing word before the asked noun."""
    noun = asked_description(question)
    if noun is None:
        return None
    asked = set(tokens(question))
    pattern = re.compile(rf"\b(?P<word>[a-z][a-z\-]+)\s+{re.escape(noun)}s?\b")
    for _, _, item, sentence in scored[:SENTENCES_READ]:
        for match in pattern.finditer(sentence):
            word = match.group("word")
            if word in STOPWORDS or word in _NOT_A_KIND or word in asked:
                continue
            return word, item, sentence
    return None


_ASKS_ROLE = re.compile(r"^(?:what|which) (?:(?:was|is) (?:the )?)?(?P<what>profession|occupation|job|position)\b", re.I)
_ROLE_END = r"(?=\s+(?:who|whose|which|that|for|with|from|in|at|of|on|best|known|and\s+(?:is|was|has|had))\b|[,.;(]|$)"
# "was a pioneering British aviator who": the role after the nationality word
_PROFESSION = re.compile(rf"\b(?:is|was)\s+(?:an?|the)\s+(?:[a-z\-]+\s+){{0,2}}?[A-Z][a-z]+(?:[\-\u2013][A-Z][a-z]+)?\s+"
                         rf"(?P<v>[a-z][a-z\-]*(?:,?\s+(?:and\s+)?[a-z][a-z\-]*){{0,6}}?){_ROLE_END}")
_POSITION = re.compile(rf"\b(?:plays|played|playing)\s+as\s+(?:an?|the)\s+(?P<v>[a-z][a-z\-]*(?:\s+[a-z][a-z\-]*){{0,2}}?){_ROLE_END}")


def _roles(listed: str) -> list[str]:
    """"stage actor and film director" → ["stage actor", "film director"]."""
    return [part.strip() for part in re.split(r",\s*(?:and\s+)?|\s+and\s+", listed) if part.strip()]


def describe_role(question: str, scored: Sequence[tuple[float, int, Evidence, str]]) -> tuple[str, Evidence, str] | None:
    """``(the role, its passage, its sentence)`` for "what profession / position …?" from ``scored``
    sentences (best first), or ``None``; "both" asks for a role two sentences list alike."""
    asked = _ASKS_ROLE.search(question.strip())
    if asked is None:
        return None
    pattern = _POSITION if asked.group("what").lower() == "position" else _PROFESSION
    found: list[tuple[list[str], Evidence, str]] = []
    for _, _, item, sentence in scored[:SENTENCES_READ]:
        match = pattern.search(sentence)
        if match is None:
            continue
        roles = _roles(match.group("v"))
        if not roles:
            continue
        if not re.search(r"\bboth\b", question, re.I):
            return roles[0], item, sentence
        for earlier, _, _ in found:
            common = [role for role in roles if role in earlier]
            if common:
                return common[0], item, sentence
        found.append((roles, item, sentence))
    return None
