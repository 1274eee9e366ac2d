"""Small, dependency-free text helpers shared by the offline pipeline roles."""

from __future__ import annotations

import re

# the word-level helpers live a floor down, shared with index-time analysis; re-exported for the roles
from hoprag.ingest.text import STOPWORDS, content_tokens, fold, tokens

__all__ = ["STOPWORDS", "Analyzer", "content_tokens", "fold", "sentences_with_offsets", "tokens"]

_SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9\u00C0-\u024F])")


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
