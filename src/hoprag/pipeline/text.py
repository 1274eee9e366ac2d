"""Small, dependency-free text helpers shared by the offline pipeline roles."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom whose why will with would you your yours yourself yourselves did does done name named
    many much one ones""".split()
)

_TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9\u00C0-\u024F])")


@lru_cache(maxsize=1 << 16)
def fold(text: str) -> str:
    """Lowercase and strip accents, so 'Pál Gábor' and 'Pal Gabor' compare equal.

    Cached: the same passages are folded again at every hop and by every role."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def tokens(text: str) -> list[str]:
    """Folded word tokens."""
    return _TOKEN.findall(fold(text))


def content_tokens(text: str) -> list[str]:
    """Folded tokens without stopwords, in order (duplicates kept)."""
    return [t for t in tokens(text) if t not in STOPWORDS]


def sentences_with_offsets(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence; ``text[start:end]`` is stripped of surrounding space."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    boundaries = [m.end(1) for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for boundary in boundaries:
        piece = text[cursor:boundary]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece.rstrip())
        if trail > lead:
            spans.append((cursor + lead, cursor + trail))
        cursor = boundary
    return spans


class Analyzer:
    """Folded, stopword-free, Snowball-stemmed terms: 'directed' and 'director' share 'direct'."""

    def __init__(self, language: str = "english") -> None:
        import Stemmer

        self._stem = Stemmer.Stemmer(language).stemWords

    def __call__(self, text: str) -> list[str]:
        return self._stem(content_tokens(text))
