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

import html
import re
from collections.abc import Collection
from functools import lru_cache

from hoprag.ingest.text import STOPWORDS, fold, tokens

__all__ = [
    "MONTHS",
    "SHAPE_KINDS",
    "WEAK_SINGLE",
    "chunk_entities",
    "chunk_mentions",
    "mention_kind",
    "mention_of",
    "resolve_mentions",
    "spans_by_kind",
    "surface_spans",
    "title_key",
    "title_heads",
    "titles_inside",
    "trim_mention",
]

# The shapes, each written to open with a character class and check the word boundary behind the
# first character (``(?<!\w.)``): the regex engine then jumps from candidate to candidate instead of
# trying the whole pattern at every position (2-3x faster, the same matches: the readable forms are
# the reference in tests/index/test_entity_shapes.py).
#
# ``\d`` is never in such an opening class: the engine would ask Unicode's database about every
# character it skips. The class holds ``_DIGITS`` instead, a superset of ``\d`` it checks by table
# lookup (Unicode's decimal digits in the BMP, every character above it), and the pattern checks
# ``\d`` behind the character once it stands on a candidate (a quarter of the scan's time).
_DIGITS = (
    "0-9\u0660-\u0669\u06F0-\u06F9\u07C0-\u07C9\u0966-\u096F\u09E6-\u09EF\u0A66-\u0A6F\u0AE6-\u0AEF"
    "\u0B66-\u0B6F\u0BE6-\u0BEF\u0C66-\u0C6F\u0CE6-\u0CEF\u0D66-\u0D6F\u0DE6-\u0DEF\u0E50-\u0E59"
    "\u0ED0-\u0ED9\u0F20-\u0F29\u1040-\u1049\u1090-\u1099\u17E0-\u17E9\u1810-\u1819\u1946-\u194F"
    "\u19D0-\u19D9\u1A80-\u1A89\u1A90-\u1A99\u1B50-\u1B59\u1BB0-\u1BB9\u1C40-\u1C49\u1C50-\u1C59"
    "\uA620-\uA629\uA8D0-\uA8D9\uA900-\uA909\uA9D0-\uA9D9\uA9F0-\uA9F9\uAA50-\uAA59\uABF0-\uABF9"
    "\uFF10-\uFF19\U00010000-\U0010FFFF"
)
#
# A run of capitalised words, allowing short lowercase connectors inside ("Hall of Fame"):
#   (?<![\w'])(?:WORD|ORDINAL)(?:[ \t]+(?:CONNECTOR[ \t]+)*(?:WORD|ORDINAL))*
#   WORD = [A-Z]\.(?:[ \t]?[A-Z]\.)* | [A-Z\u00C0-\u00DE][\w\u00C0-\u024F'\-]*,  ORDINAL = \d{1,2}(?:st|nd|rd|th)
# Past a word's first character the initial's dot is matched first and its letter checked behind
# (an alternative opening with a character is skipped by it alone), then the rest of a word.
_INITIALS = r"\.(?<=[A-Z]\.)(?:[ \t]?[A-Z]\.)*"
_WORD = r"[A-Z\u00C0-\u00DE](?:" + _INITIALS + r"|[\w\u00C0-\u024F'\-]*)"
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)"
_CONNECTORS = r"(?:of|the|de|la|le|von|van|der|du|da|di|del|&|for|on|y)"
_CAPITALISED = re.compile(
    r"[A-Z\u00C0-\u00DE" + _DIGITS + r"](?<![\w'].)"  # the first word's first character, nothing word-like before it
    r"(?:" + _INITIALS + r"|(?<=[A-Z\u00C0-\u00DE])[\w\u00C0-\u024F'\-]*|(?<=\d)\d?(?:st|nd|rd|th))"
    r"(?:[ \t]+(?:" + _CONNECTORS + r"[ \t]+)*(?:" + _WORD + "|" + _ORDINAL + "))*"
)
# A quoted title holding a letter: ["\u201c]([^"\u201d]*[^\W\d_][^"\u201d]*)["\u201d] (here without
# backtracking over an unclosed quote).
_QUOTED = re.compile(r"[\"\u201c](?=[^\"\u201d]*?[^\W\d_])([^\"\u201d]*+)[\"\u201d]")
# ... and, for a text holding one kind of opening quote, the same opening with that quote alone: a
# pattern opening with one character is scanned for it the way str.find is, several times faster.
_QUOTED_BY_OPENING = {
    opening: re.compile(opening + r"(?=[^\"\u201d]*?[^\W\d_])([^\"\u201d]*+)[\"\u201d]") for opening in '"\u201c'
}
# An identifier: \b[A-Z]{1,6}-?\d{1,6}[A-Z]?\b | \b[A-Z]+-[A-Z0-9]+(?:-[A-Z0-9]+)*\b
# Both forms go on from their first letter with a letter, a hyphen or a digit: checked first, as
# most capitalised words fail it at their second character.
_IDENTIFIER = re.compile(
    r"[A-Z](?=[A-Z\-" + _DIGITS + r"])(?<!\w.)(?:[A-Z]{0,5}-?\d{1,6}[A-Z]?\b|[A-Z]*-[A-Z0-9]+(?:-[A-Z0-9]+)*\b)"
)
# A date: \b(?:\d{1,2}\s+)?MONTH(?:\s+\d{1,2},?)?\s+\d{3,4}\b | \b1[0-9]{3}\b | \b20[0-9]{2}\b
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAY_YEAR = r"(?:\s+\d{1,2},?)?\s+\d{3,4}\b"
# A month's name is matched past its first letter, then checked whole behind: alternatives that open
# with a letter are skipped by that letter alone, where a check behind costs a step each.
_MONTH_RESTS = "|".join(f"{m[1:]}(?<={m})" for m in _MONTHS.split("|"))
_DATE = re.compile(
    r"[JFMASOND" + _DIGITS + r"](?<!\w.)(?:"
    r"(?:" + _MONTH_RESTS + ")" + _DAY_YEAR
    + r"|(?<=\d)(?:\d?\s+(?:" + _MONTHS + ")" + _DAY_YEAR + r"|(?<=1)[0-9]{3}\b|(?<=2)0[0-9]{2}\b))"
)

#: the kinds :func:`surface_spans` finds, in its order
SHAPE_KINDS = ("quoted", "identifier", "date", "entity")

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
_HAS_DIGIT = re.compile(r"[" + _DIGITS + r"](?<=\d)")
_ARTICLES = ("the ", "a ", "an ")
#: longest run of words inside a capitalised span that is looked up as a document title
_MAX_TITLE_WORDS = 6


@lru_cache(maxsize=1 << 16)
def title_key(title: str) -> str:
    """A document title as a link target: folded, without a trailing "(disambiguation)" or article.

    Cached: the engine keys the same titles and mentions again at every hop of every question.
    HTML entities some benchmark titles keep ("Mitchells &amp; Butlers") read as the text writes them."""
    if "&" in title:
        title = html.unescape(title)
    key = fold(_PARENTHETICAL.sub("", title) if "(" in title else title).strip(" .,;:'\"")
    if key.startswith(_ARTICLES):
        for article in _ARTICLES:
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
    for pattern, kind in _shapes(text):
        group = 1 if kind == "quoted" else 0
        found.extend((match.group(group), kind, match.start()) for match in pattern.finditer(text))
    return found


def spans_by_kind(text: str) -> list[tuple[str, list[str]]]:
    """``(kind, raw spans)`` per kind, in :func:`surface_spans`'s order, without offsets (no match
    objects: what the index-time builder needs)."""
    return [(kind, pattern.findall(text)) for pattern, kind in _shapes(text)]


def _shapes(text: str) -> list[tuple[re.Pattern[str], str]]:
    # each pattern but the last needs a character the text may lack: skip its scan then
    shapes = []
    straight, curly = '"' in text, "\u201c" in text
    if straight or curly:
        shapes.append((_QUOTED if straight and curly else _QUOTED_BY_OPENING['"' if straight else "\u201c"], "quoted"))
    digits = _HAS_DIGIT.search(text) is not None
    if digits or "-" in text:
        shapes.append((_IDENTIFIER, "identifier"))
    if digits:
        shapes.append((_DATE, "date"))
    shapes.append((_CAPITALISED, "entity"))
    return shapes


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
                subs = titles_inside(words, titles)
                if cache is not None:
                    cache[words] = subs
            for sub in subs:
                found.setdefault(sub, "title")
    return found


def mention_of(raw: str, kind: str) -> Mention | None:
    """``(key, kind, words)`` of one raw span of ``kind`` (:func:`surface_spans`), or ``None`` when it
    names nothing; ``words`` only for a multi-word capitalised name."""
    value = trim_mention(raw)
    value_tokens = tokens(value)
    if not value_tokens:
        return None
    shaped = mention_kind(value, kind, value_tokens)
    key = title_key(value) if shaped is not None else ""
    if not key:
        return None
    return key, shaped, tuple(value_tokens) if kind == "entity" and len(value_tokens) > 1 else ()


#: cached, as names recur across a corpus
_mention = lru_cache(maxsize=1 << 16)(mention_of)


def titles_inside(
    words: tuple[str, ...], title_keys: Collection[str], heads: Collection[str] | None = None
) -> tuple[str, ...]:
    """The runs of ``words`` (up to six, shorter than the whole) that are document titles, longest first.
    ``heads`` (optional, :func:`title_heads` of ``title_keys``) skips runs no title starts with."""
    out = []
    n = len(words)
    for size in range(min(n - 1, _MAX_TITLE_WORDS), 0, -1):
        for start in range(0, n - size + 1):
            if heads is not None and words[start] not in heads:
                continue
            piece = words[start : start + size]
            if size == 1 and (piece[0] in WEAK_SINGLE or piece[0] in STOPWORDS or len(piece[0]) < 3):
                continue
            key = " ".join(piece)
            if key in title_keys:
                out.append(key)
    return tuple(out)


def title_heads(title_keys: Collection[str]) -> frozenset[str]:
    """The first word of every title key: a run of words can only be a title if it starts with one."""
    return frozenset(key.split(" ", 1)[0] for key in title_keys)
