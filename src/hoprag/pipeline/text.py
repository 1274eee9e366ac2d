"""Small, dependency-free text helpers shared by the offline pipeline roles."""

from __future__ import annotations

import re
from functools import lru_cache

# the word-level helpers live a floor down, shared with index-time analysis; re-exported for the roles
from hoprag.ingest.text import STOPWORDS, content_tokens, fold, tokens

__all__ = ["ABBREVIATIONS", "STOPWORDS", "Analyzer", "content_tokens", "fold", "sentences_with_offsets", "singular", "tokens"]

_SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9\u00C0-\u024F])")
#: words a full stop follows without ending the sentence ("John Doe No. 2", "Mt. Fuji", "U.S. Army");
#: a single capital letter is an initial ("the Alfred P. Sloan Foundation") and never ends one either
ABBREVIATIONS = frozenset(
    """no nos mr mrs ms dr st jr sr mt ft gen col lt capt sgt cpl maj adm rev prof gov sen rep pres hon
    inc co corp ltd bros vs v etc e.g i.e cf approx ca est dept univ assn ave blvd rd jan feb mar apr
    jun jul aug sep sept oct nov dec fig vol op p pp ed eds u.s u.k u.n d.c a.d b.c""".split()
)
_LAST_WORD = re.compile(r"(?:^|[\s(\"'])([^\s(\"']+)\.$")


def _ends_sentence(text: str, boundary: int) -> bool:
    """Whether the full stop before ``boundary`` ends a sentence (not an abbreviation or an initial)."""
    head = text[:boundary].rstrip()
    head = head.rstrip("\"')]")
    if not head.endswith("."):
        return True
    match = _LAST_WORD.search(head[-24:])
    if match is None:
        return True
    word = match.group(1)
    if len(word) == 1 and word.isupper():
        return False
    return word.lower() not in ABBREVIATIONS


def sentences_with_offsets(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence; ``text[start:end]`` is stripped of surrounding space. A full
    stop after an abbreviation (:data:`ABBREVIATIONS`) or an initial does not end a sentence."""
    return list(_sentence_spans(text))


@lru_cache(maxsize=4096)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Cached: every role splits the same held passages again at every hop."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    boundaries = [m.end(1) for m in _SENTENCE_END.finditer(text) if _ends_sentence(text, m.end(1))] + [len(text)]
    for boundary in boundaries:
        piece = text[cursor:boundary]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece.rstrip())
        if trail > lead:
            spans.append((cursor + lead, cursor + trail))
        cursor = boundary
    return tuple(spans)


class Analyzer:
    """Folded, stopword-free, Snowball-stemmed terms: 'directed' and 'director' share 'direct'."""

    def __init__(self, language: str = "english") -> None:
        import Stemmer

        self._stem = Stemmer.Stemmer(language).stemWords

    def __call__(self, text: str) -> list[str]:
        return self._stem(content_tokens(text))


def singular(word: str) -> str:
    """A plural noun's singular, crudely ("counties" → "county", "states" → "state"; "ss" kept)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word
