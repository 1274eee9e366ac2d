"""What kind of value a question or a lookup asks for, and the spans of a sentence that are one.

No model, no gazetteer: a kind is read from the words that ask (``Who`` → a person, ``When`` →
a date, ``the country where`` → a place, ``the performer of`` → a person or a group), and a span is
judged by its shape and by the words just before it (``born in X``, ``directed by X``, ``X
University``). Both the value bridges of a plan's lookups (:mod:`hoprag.pipeline.value_bridges`)
and the offline answerer (:mod:`hoprag.pipeline.extractive`) read kinds here, so a lookup and the
final answer are judged the same way.

Kinds: ``person``, ``place``, ``organisation``, ``date``, ``number``, ``entity`` (any name: the
question's words do not say which).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hoprag.index.entities import MONTHS, WEAK_SINGLE, surface_spans, trim_mention
from hoprag.pipeline.text import STOPWORDS, tokens

__all__ = ["KINDS", "TypedSpan", "kind_fit", "question_kind", "relation_kind", "span_shape", "typed_spans"]

KINDS = ("person", "place", "organisation", "date", "number", "entity")

# relation nouns (singular; a plural is read without its final s) and the kind of value they name
_RELATION_KINDS: dict[str, str] = {}
for _kind, _words in {
    "person": """performer composer author writer director producer creator founder father mother son
        daughter spouse wife husband child parent brother sister sibling actor actress singer artist
        player person leader president king queen owner designer architect lyricist screenwriter star
        member coach ceo mayor governor ruler successor predecessor inventor discoverer painter poet
        narrator host presenter manager chairman head emperor monarch prince princess grandfather
        grandmother uncle aunt nephew niece cousin partner sculptor novelist husband voice developer
        illustrator editor conductor songwriter vocalist guitarist drummer man woman people girlfriend
        boyfriend fiancee fiance""".split(),
    "place": """country city state town birthplace place location continent county region province
        capital river island mouth headquarters district village area nation municipality territory
        sea ocean lake mountain range island border residence hometown venue site""".split(),
    "organisation": """team company university college school party label band network channel publisher
        manufacturer employer club organization organisation league airline church agency studio
        institution group firm brand""".split(),
    "date": "year date time day decade century".split(),
    "number": "number population count amount size height length age".split(),
}.items():
    for _word in _words:
        _RELATION_KINDS.setdefault(_word, _kind)

# what a wh-phrase asks for, longest cue first
_QUESTION_CUES = (
    (r"^(?:in )?what year\b|^when\b|\bwhat (?:date|year|decade|century)\b|\bwhich year\b", "date"),
    (r"^how (?:many|much|old|tall|long|far|big|large|high)\b", "number"),
    (r"^(?:who|whom|whose)\b", "person"),
    (r"^where\b|\bin what (?:country|city|state|town|county|region)\b", "place"),
)
# the words just before a span that say what it is ("born in X", "directed by X")
_BEFORE = {
    "place": {"in", "at", "from", "near", "of", "to", "into", "across"},
    "person": {"by", "starring", "with", "and"},
    "organisation": {"by", "for", "at", "with", "from", "of", "joined"},
}
_ORG_WORDS = frozenset(
    """university college school institute academy party records company corporation inc ltd llc fc club
    team league association society church airlines airline network studios studio group bank press
    council agency band orchestra""".split()
)
_PLACE_WORDS = frozenset(
    """river city county island islands state province republic kingdom mountains mountain lake valley
    district bay sea ocean coast street park""".split()
)
# "Port Lowell City on May": a date's month caught by a name's connector
_TRAILING_DATE = re.compile(r"\s+(?:on|in|of|the)\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)$")
_NUMBER = re.compile(r"\b\d[\d,.]*(?:\s*(?:%|percent|million|billion|thousand|years?|km|miles?|metres?|meters?|feet|inches))?")
_YEAR = re.compile(r"\b1\d{3}\b|\b20\d{2}\b")


@dataclass(frozen=True)
class TypedSpan:
    """A span of a sentence, the kind its shape says, and how well it fits the kind asked (0–1)."""

    value: str
    kind: str
    offset: int
    fit: float


def relation_kind(words: str) -> str:
    """The kind of value a lookup's relation names: ``performers of Brother`` → ``person``,
    ``city where were formed`` → ``place``; ``entity`` when no relation noun is known."""
    for word in tokens(words)[:4]:
        if word in STOPWORDS or word in ("the", "what", "which"):
            continue
        for form in (word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("es") else word):
            if form in _RELATION_KINDS:
                return _RELATION_KINDS[form]
    return "entity"


def question_kind(question: str) -> str:
    """The kind of answer a question asks for, from its wh-phrase or its first relation noun."""
    q = " ".join(question.lower().split())
    for pattern, kind in _QUESTION_CUES:
        if re.search(pattern, q):
            return kind
    match = re.match(r"^(?:what|which|name the|in which|of which|at which|for which)\s+(?:\w+\s+){0,2}?(\w+)", q)
    if match is not None:
        kind = relation_kind(match.group(1))
        if kind != "entity":
            return kind
    return "entity"


def _shape(value: str, base: str) -> str:
    words = set(tokens(value))
    if base == "date" or _YEAR.fullmatch(value.strip()):
        return "date"
    if words & _ORG_WORDS:
        return "organisation"
    if words & _PLACE_WORDS:
        return "place"
    return "entity"


def span_shape(value: str) -> str:
    """The kind a name's own words say ("Major League Baseball": an organisation), else ``entity``."""
    return _shape(value, "")


def kind_fit(shape: str, wanted: str, before: str) -> float:
    """How well a span of ``shape`` preceded by the word ``before`` fits the ``wanted`` kind."""
    if wanted == "entity":
        return 1.0 if shape != "date" else 0.3
    if shape == wanted:
        return 1.0
    if shape in ("date", "number") or wanted in ("date", "number"):
        return 0.0
    if shape != "entity":  # an organisation's name is no place and no person
        return 0.3
    return 0.8 if before in _BEFORE.get(wanted, ()) else 0.5


@lru_cache(maxsize=1 << 14)
def typed_spans(sentence: str, wanted: str) -> tuple[TypedSpan, ...]:
    """The spans of ``sentence`` that may be a value of kind ``wanted``, with their fit (cached: the
    same passages are read again at every hop and by the answerer)."""
    out: list[TypedSpan] = []
    if wanted == "number":
        for m in _NUMBER.finditer(sentence):
            value = m.group(0).strip(" ,.")
            if value and not _YEAR.fullmatch(value):
                out.append(TypedSpan(value, "number", m.start(), 1.0))
        return tuple(out)
    seen: set[str] = set()
    for raw, base, offset in surface_spans(sentence):
        value = trim_mention(raw) if base != "date" else raw.strip()
        if not value or value.lower() in seen:
            continue
        value = _TRAILING_DATE.sub("", value) if base != "date" else value
        words = tokens(value)
        if base != "date" and (not words or all(w in MONTHS or w in WEAK_SINGLE for w in words)):
            continue  # "July", "However": a capital that names nothing
        if offset == 0 and len(words) == 1 and words[0].endswith(("ing", "ed", "ly")):
            continue  # "Featuring lyrics by …": a sentence's first word, capitalised as such
        seen.add(value.lower())
        before = sentence[:offset].split()[-1:] or [""]
        fit = kind_fit(_shape(value, base), wanted, before[0].lower().strip(",("))
        if fit > 0.0:
            out.append(TypedSpan(value, _shape(value, base), offset, fit))
    if wanted == "date":
        for m in _YEAR.finditer(sentence):
            if m.group(0).lower() not in seen:
                out.append(TypedSpan(m.group(0), "date", m.start(), 0.8))
    return tuple(out)
