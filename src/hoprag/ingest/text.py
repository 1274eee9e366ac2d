"""Text normalisation shared by every layer that compares words: folding, word tokens, stopwords.

It sits on the ingest floor so that index-time analysis (the entity graph) and the query-time roles
of :mod:`hoprag.pipeline` fold and split text the same way.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["SPELLED", "STOPWORDS", "contained_in", "containment", "content_tokens", "fold", "fold_accents", "tokens"]

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


#: letters NFKD leaves whole and Unicode names without a base letter, spelled in base letters
SPELLED = {"ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ð": "d", "Ð": "D",
           "þ": "th", "Þ": "TH", "ı": "i"}
#: the other letters NFKD leaves whole are named for their base letter: 'LATIN SMALL LETTER L WITH
#: STROKE' (ł), 'O WITH STROKE' (ø), 'D WITH STROKE' (đ), 'H WITH STROKE' (ħ), 'F WITH HOOK' (ƒ)…
_NAMED_BASE = re.compile(r"LATIN (SMALL|CAPITAL) LETTER ([A-Z]) WITH ")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _base_letters(char: str) -> str:
    """One character in base letters: NFKD without combining marks, then :data:`SPELLED` or the
    base letter its Unicode name gives ('' for a lone combining mark)."""
    out = []
    for c in unicodedata.normalize("NFKD", char):
        if unicodedata.combining(c):
            continue
        spelled = SPELLED.get(c)
        if spelled is None:
            named = _NAMED_BASE.match(unicodedata.name(c, "")) if not c.isascii() else None
            spelled = c if named is None else (named.group(2) if named.group(1) == "CAPITAL" else named.group(2).lower())
        out.append(spelled)
    return "".join(out)


class _FoldTable(dict):  # type: ignore[type-arg]
    """``str.translate`` table: code point -> its base letters, filled the first time a character is met."""

    def __missing__(self, code: int) -> str:
        found = self[code] = _base_letters(chr(code))
        return found


_TABLE = _FoldTable()


def _fold_run(match: re.Match[str]) -> str:
    return match.group().translate(_TABLE)


def fold_accents(text: str) -> str:
    """``text`` in base letters, case kept: 'Aschenbrödel' -> 'Aschenbrodel', 'Łódź' -> 'Lodz',
    'Straße' -> 'Strasse'. Pure-ASCII text is returned as is; otherwise only its non-ASCII runs are
    translated (NFKD acts on each character alone once combining marks are dropped, so run by run
    gives the same as the whole text)."""
    if text.isascii():
        return text
    return _NON_ASCII.sub(_fold_run, text)


@lru_cache(maxsize=1 << 16)
def fold(text: str) -> str:
    """Lowercase and in base letters (:func:`fold_accents`), so 'Pál Gábor' and 'Pal Gabor' compare equal.

    Cached: the same passages are folded again at every hop and by every role."""
    return fold_accents(text).lower()


def tokens(text: str) -> list[str]:
    """Folded word tokens."""
    return _TOKEN.findall(fold(text))


def content_tokens(text: str) -> list[str]:
    """Folded tokens without stopwords, in order (duplicates kept)."""
    return [t for t in tokens(text) if t not in STOPWORDS]


def containment(part: str, whole: str) -> float:
    """Share of ``part``'s content tokens that occur in ``whole`` (1 when ``part`` has none)."""
    return contained_in(part, set(content_tokens(whole)))


def contained_in(part: str, whole: set[str]) -> float:
    """:func:`containment` against the content tokens of ``whole``, already a set."""
    needed = set(content_tokens(part))
    if not needed:
        return 1.0
    return len(needed & whole) / len(needed)
