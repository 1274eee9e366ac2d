"""Entity mentions by surface shape: the vocabulary the bridge extractor and the entity graph share.

Without a model, an entity is found by its shape: a run of capitalised words (``Hall of Fame`` keeps
its short lowercase connectors), a quoted title (``"Katy Lied"``), an identifier (``KP-214``) or a
date. :func:`surface_spans` finds them, :func:`trim_mention` cleans one, and :func:`title_key` turns a
document title or a mention into the key both are compared by (folded, without a trailing
parenthetical or a leading article), so a mention of ``Neil Peart`` meets the document titled
``Neil Peart (drummer)``.

:func:`chunk_entities` is the index-time view: the normalised entities of one chunk, its own
document's title first.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from hoprag.ingest.text import STOPWORDS, fold, tokens

__all__ = [
    "MONTHS",
    "WEAK_SINGLE",
    "chunk_entities",
    "chunk_mentions",
    "mention_kind",
    "resolve_mentions",
    "surface_spans",
    "title_key",
    "trim_mention",
]

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

#: Capitalised words that start sentences or name nothing on their own.
WEAK_SINGLE = frozenset(
    """the a an he she it they his her its their this that these those in on at for from by with
    as after before during while when where which who what however also although but and or if
    there here some many most both each all one two three first second later early late born died
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday section clause version note
    customer customers plan plans policy""".split()
)

MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)

_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
_HAS_DIGIT = re.compile(r"\d")
#: longest run of words inside a capitalised span that is looked up as a document title
_MAX_TITLE_WORDS = 6


def title_key(title: str) -> str:
    """A document title as a link target: folded, without a trailing "(disambiguation)" or article."""
    key = fold(_PARENTHETICAL.sub("", title)).strip(" .,;:'\"")
    for article in ("the ", "a ", "an "):
        if key.startswith(article):
            key = key[len(article):]
    return " ".join(key.split())


def trim_mention(value: str) -> str:
    """A raw span without surrounding punctuation, a possessive, trailing connectors or a leading article."""
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


def surface_spans(text: str) -> list[tuple[str, str, int]]:
    """``(raw span, kind, offset)`` of every quoted title, identifier, date and capitalised run."""
    found: list[tuple[str, str, int]] = []
    # each pattern needs a character the text may lack: skip the scan then (same spans, less time)
    if '"' in text or "\u201c" in text:
        for match in _QUOTED.finditer(text):
            found.append((match.group(1), "quoted", match.start()))
    digits = _HAS_DIGIT.search(text) is not None
    if digits or "-" in text:
        for match in _IDENTIFIER.finditer(text):
            found.append((match.group(0), "identifier", match.start()))
    if digits:
        for match in _DATE.finditer(text):
            found.append((match.group(0), "date", match.start()))
    for match in _CAPITALISED.finditer(text):
        found.append((match.group(0), "entity", match.start()))
    return found


def mention_kind(value: str, kind: str, value_tokens: list[str]) -> str | None:
    """The kind a trimmed mention counts as, or ``None`` when it names nothing on its own."""
    if len(value_tokens) == 1 and (value_tokens[0] in WEAK_SINGLE or len(value_tokens[0]) < 3):
        if kind == "entity":
            return None
    if not any(t not in STOPWORDS for t in value_tokens):
        return None
    if kind == "entity" and value_tokens[0] in MONTHS:
        return "date"
    if kind == "identifier" and len(value) < 4:
        return "entity"
    if kind == "quoted" and len(value) > 80:
        return None
    return kind


def chunk_entities(text: str, *, title: str = "", title_keys: Collection[str] = ()) -> dict[str, str]:
    """The entities of one chunk as ``{key: kind}``: its document's title (kind ``title``), then every
    mention in order. A run of words inside a longer capitalised span that is itself a document title
    (``title_keys``) counts too, the way a hyperlink would: "Canadian band Rush" mentions ``rush``."""
    return resolve_mentions(chunk_mentions(text, title=title), title_keys)


Mention = tuple[str, str, tuple[str, ...]]


def chunk_mentions(text: str, *, title: str = "") -> list[Mention]:
    """``(key, kind, words)`` of the chunk's own title (kind ``title``) and of every mention, in order;
    ``words`` is kept for multi-word names, to look document titles up inside them later
    (:func:`resolve_mentions`, once every title of the corpus is known)."""
    found: list[Mention] = []
    own = title_key(title) if title else ""
    if own:
        found.append((own, "title", ()))
    for raw, kind, _ in surface_spans(text):
        mention = _mention(raw, kind)
        if mention is not None:
            found.append(mention)
    return found


def resolve_mentions(
    mentions: Collection[Mention], title_keys: Collection[str] = (), cache: dict | None = None
) -> dict[str, str]:
    """``{key: kind}`` of a chunk's mentions; a key that is a document title counts as kind ``title``.
    ``cache`` (one dict per set of ``title_keys``) keeps the titles found inside each multi-word name."""
    titles = title_keys if isinstance(title_keys, (set, frozenset)) else frozenset(title_keys)
    found: dict[str, str] = {}
    for key, kind, words in mentions:
        if key not in found:
            found[key] = "title" if key in titles else kind
        if len(words) > 1 and titles:
            subs = cache.get(words) if cache is not None else None
            if subs is None:
                subs = _sub_titles(words, titles)
                if cache is not None:
                    cache[words] = subs
            for sub in subs:
                found.setdefault(sub, "title")
    return found


@lru_cache(maxsize=1 << 16)
def _mention(raw: str, kind: str) -> tuple[str, str, tuple[str, ...]] | None:
    """``(key, kind, words)`` of one raw span, or ``None``; cached, as names recur across a corpus."""
    value = trim_mention(raw)
    value_tokens = tokens(value)
    if not value_tokens:
        return None
    shaped = mention_kind(value, kind, value_tokens)
    key = title_key(value) if shaped is not None else ""
    if not key:
        return None
    return key, shaped, tuple(value_tokens) if kind == "entity" and len(value_tokens) > 1 else ()


def _sub_titles(words: tuple[str, ...], title_keys: Collection[str]) -> tuple[str, ...]:
    out = []
    n = len(words)
    for size in range(min(n - 1, _MAX_TITLE_WORDS), 0, -1):
        for start in range(0, n - size + 1):
            piece = words[start : start + size]
            if size == 1 and (piece[0] in WEAK_SINGLE or piece[0] in STOPWORDS or len(piece[0]) < 3):
                continue
            key = " ".join(piece)
            if key in title_keys:
                out.append(key)
    return tuple(out)
