"""What a plan's lookup asks, read from its words: the role of the fact ("city where X was born" asks
a birthplace) and the place noun a value must be ("county where X is located" asks a county, not
the state the same sentence names).

A lookup is a fragment of the question ("city where Steven Blankaart was born", "country in which is
a citizen" once its anchor is cut out), not a whole question, so the role is read from its relation
words rather than from a wh-phrase (:func:`hoprag.pipeline.role_facts.asked_role` reads those). The
value bridges (:mod:`hoprag.pipeline.value_bridges`) read a role's value where the lookup's anchor's
own passage states it (:func:`hoprag.pipeline.role_facts.read_role`), and weigh every candidate by
how its shape fits the place noun asked (:func:`place_noun_fit`).
"""

from __future__ import annotations

import re

from hoprag.pipeline.answer_types import span_shape
from hoprag.pipeline.role_facts import read_role
from hoprag.pipeline.text import STOPWORDS, fold, singular, tokens
from hoprag.pipeline.yes_no import COUNTRIES

__all__ = ["PLACE_NOUNS", "asked_place_noun", "lookup_role", "role_value", "place_noun_fit"]

# nouns that name a kind of place, singular
PLACE_NOUNS = frozenset(
    "city town village county state country province region district capital island municipality territory".split()
)
# the last word of a geographic feature's name, no place a settlement or region noun asks for
_FEATURES = frozenset("river mountain mountains lake sea ocean bay valley desert forest park range island islands".split())
# nouns that say the value is a place of the lookup's role ("the city where", "the birthplace of")
_ROLE_PLACES = PLACE_NOUNS | {"birthplace", "place", "location", "hometown"}
# the first matching rule wins; place roles need a place noun among the lookup's first words
_PLACE_ROLES = (
    ("burial_place", re.compile(r"\b(?:buried|burial|interred)\b")),
    ("birth_place", re.compile(r"\b(?:born|birth|birthplace)\b")),
    ("death_place", re.compile(r"\b(?:died|death|die)\b")),
    ("residence", re.compile(r"\b(?:lived|lives|living|resided|resides|residence|home)\b")),
)
_PERSON_ROLES = (
    ("father", re.compile(r"^(?:the )?father\b")),
    ("mother", re.compile(r"^(?:the )?mother\b")),
    ("spouse", re.compile(r"^(?:the )?(?:spouse|wife|husband)\b")),
    ("child", re.compile(r"^(?:the )?(?:child|children|son|daughter)\b")),
    ("sibling", re.compile(r"^(?:the )?(?:sibling|brother|sister)\b")),
)
_PERSON_ROLE_NAMES = frozenset(role for role, _ in _PERSON_ROLES)
# a person's name a word or two after an organisation's ("… Baseball pitcher Kris Benson")
_NAME_AFTER = re.compile(r"\s+(?:[a-z]+\s+){1,2}(?P<v>[A-Z][\w'\-]+(?:\s+[A-Z][\w'\-]+){1,3})")
_CITIZEN = re.compile(r"\b(?:citizen|citizenship|nationality)\b")
_LOCATED = re.compile(r"\b(?:located|situated|found|lies|is)\b")
_FIRST_WORDS = 3  # a lookup's relation noun stands among its first words ("the city where …")


def asked_place_noun(asked: str) -> str:
    """The place noun a lookup asks for ("county where Van Hook Township is located" → ``county``),
    or "" when its first words name no kind of place."""
    for word in tokens(asked)[:_FIRST_WORDS]:
        if word in STOPWORDS or word in ("the", "what", "which"):
            continue
        return word if word in PLACE_NOUNS else ""
    return ""


def lookup_role(asked: str) -> str | None:
    """The role of the fact a lookup asks (a :data:`hoprag.pipeline.role_facts.ROLES` name), or ``None``."""
    asked_words = tokens(asked)
    words = " ".join(asked_words)
    first = [w for w in asked_words[:_FIRST_WORDS] if w not in STOPWORDS and w not in ("the", "what", "which")]
    head = first[0] if first else ""
    for role, pattern in _PERSON_ROLES:
        if pattern.search(words):
            return role
    if head not in _ROLE_PLACES:
        return None
    if head == "country" and _CITIZEN.search(words):
        return "nationality"
    for role, pattern in _PLACE_ROLES:
        if pattern.search(words):
            return role
    if head == "country" and _LOCATED.search(words):
        return "country"
    return None


def role_value(text: str, role: str, noun: str) -> tuple[str, int] | None:
    """The value of ``role`` a passage states, cut to the part the place ``noun`` asks: "Rochester,
    New York" is ``Rochester`` for a city and ``New York`` for a state; the offset is the part's."""
    read = read_role(text, role)
    if read is None:
        return None
    value, offset = read
    if role in _PERSON_ROLE_NAMES and span_shape(value) != "entity":
        # "ex-wife of former Major League Baseball pitcher Kris Benson": the person follows the league
        after = _NAME_AFTER.match(text, offset + len(value))
        if after is None:
            return None
        return after.group("v"), after.start("v")
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if len(parts) < 2:
        return value, offset
    if noun in ("state", "country", "province", "region"):
        chosen = parts[-1]
    elif noun == "county":
        chosen = next((p for p in parts if p.lower().endswith(" county")), parts[0])
    else:
        chosen = parts[0]
    return chosen, offset + value.find(chosen)


def place_noun_fit(value: str, before: str, noun: str) -> float:
    """A factor for a candidate of a lookup that asks the place ``noun``: 1.5 when its shape says it
    is one ("Mountrail County" for a county, "the state of North Dakota" for a state, a country's
    name for a country), 0.5 when it says it is another kind of place ("Tripp County" for a state),
    else 1. ``before`` is the text before the candidate in its sentence."""
    if not noun:
        return 1.0
    words = tokens(value)
    if not words:
        return 1.0
    last = singular(words[-1])
    ahead = tokens(before)[-2:]
    if fold(value) in COUNTRIES:  # "United States" is a country, whatever its last word says
        return 1.5 if noun == "country" else 0.5
    if (len(words) > 1 and last == noun) or (len(ahead) == 2 and ahead[1] == "of" and singular(ahead[0]) == noun):
        return 1.5
    if len(words) > 1 and (last in PLACE_NOUNS or last in _FEATURES):
        return 0.5  # "Tripp County" for a state, "Mississippi River" for a state
    return 1.0
