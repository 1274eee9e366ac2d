"""Descriptive answers: "what kind of activist?" asks for the word a sentence puts before the noun.

"Pyotr Verzilov is married to a Russian conceptual artist and what kind of activist?" is answered by
"political" from "… is a Russian conceptual artist and political activist": the lowercase word just
before the asked noun ("activist") in the best-scoring held sentences, never a determiner or a word
the question already holds. No model and no vocabulary: the noun the question names is the cue.
The answer is a span of the sentence it is read from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.pipeline.text import STOPWORDS, tokens
from hoprag.records import Evidence

__all__ = ["asked_description", "describe"]

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
