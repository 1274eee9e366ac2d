"""Text normalisation shared by every layer that compares words: folding, word tokens, stopwords.

It sits on the ingest floor so that index-time analysis (the entity graph) and the query-time roles
of :mod:`hoprag.pipeline` fold and split text the same way.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["STOPWORDS", "content_tokens", "fold", "tokens"]

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
