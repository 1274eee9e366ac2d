"""Offline yes/no answers to "same country" questions: "Are X and Y of the same nationality?", "Do
the directors of films A and B share the same nationality?", "Are both villages, A and B, located in
the same country?".

The two entities are the held passages whose titles the question names; when the question asks
about a relation of each ("the directors of films A and B") each one's subject is the passage its
page names (:func:`hoprag.pipeline.role_facts.linked_subject`). Each subject's country is read from
its first sentences: a nationality word ("was an English actor", "is a 1936 American film") or the
last part of where it lies ("is a village in Kerman Province, Iran"); nationality words name their
country through a short table, so "British" and "United Kingdom" agree. "yes" when both countries
are read and agree, "no" when both are read and differ, no answer (the caller falls back) otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.index.entities import title_key
from hoprag.pipeline.role_facts import linked_subject, read_role
from hoprag.pipeline.text import content_tokens, fold, tokens
from hoprag.records import Evidence

__all__ = ["COUNTRIES", "answer_same_country", "country_of"]

_SAME = re.compile(r"\bsame (?:country|nationality|citizenship)\b|\bboth (?:from|located in) the same\b", re.I)
_RELATION = re.compile(r"\b(?:directors?|composers?|performers?|producers?|authors?|writers?|creators?)\b", re.I)
_COUNTRY_OF = {
    "american": "united states", "british": "united kingdom", "english": "united kingdom",
    "scottish": "united kingdom", "welsh": "united kingdom", "french": "france", "german": "germany",
    "west german": "germany", "east german": "germany", "italian": "italy", "indian": "india",
    "iranian": "iran", "persian": "iran", "canadian": "canada", "australian": "australia",
    "mexican": "mexico", "spanish": "spain", "japanese": "japan", "chinese": "china",
    "russian": "russia", "soviet": "soviet union", "swedish": "sweden", "norwegian": "norway",
    "danish": "denmark", "dutch": "netherlands", "belgian": "belgium", "polish": "poland",
    "hungarian": "hungary", "czech": "czech republic", "austrian": "austria", "swiss": "switzerland",
    "greek": "greece", "turkish": "turkey", "brazilian": "brazil", "argentine": "argentina",
    "argentinian": "argentina", "filipino": "philippines", "korean": "south korea",
    "south korean": "south korea", "egyptian": "egypt", "irish": "ireland", "finnish": "finland",
    "portuguese": "portugal", "romanian": "romania", "bulgarian": "bulgaria", "serbian": "serbia",
    "croatian": "croatia", "ukrainian": "ukraine", "syrian": "syria", "lithuanian": "lithuania",
    "cypriot": "cyprus", "pakistani": "pakistan", "israeli": "israel", "nigerian": "nigeria",
    "uruguayan": "uruguay", "chilean": "chile", "colombian": "colombia", "peruvian": "peru",
    "venezuelan": "venezuela", "cuban": "cuba", "estonian": "estonia", "latvian": "latvia",
    "slovak": "slovakia", "slovenian": "slovenia", "icelandic": "iceland", "thai": "thailand",
    "vietnamese": "vietnam", "indonesian": "indonesia", "malaysian": "malaysia",
    "bangladeshi": "bangladesh", "sri lankan": "sri lanka", "nepali": "nepal", "afghan": "afghanistan",
    "iraqi": "iraq", "lebanese": "lebanon", "jordanian": "jordan", "moroccan": "morocco",
    "algerian": "algeria", "tunisian": "tunisia", "kenyan": "kenya", "ghanaian": "ghana",
    "usa": "united states", "u.s.": "united states", "us": "united states", "uk": "united kingdom",
    "england": "united kingdom", "scotland": "united kingdom", "wales": "united kingdom",
}

# the countries the table names, folded: what "Which country …?" is answered by
COUNTRIES: frozenset[str] = frozenset(_COUNTRY_OF.values())


def country_of(text: str) -> tuple[str, int] | None:
    """The country a passage's subject belongs to, folded (``"united kingdom"``), and the offset of
    the words it was read from; ``None`` when the passage states none."""
    found = read_role(text, "nationality") or read_role(text, "country")
    if found is None:
        return None
    key = fold(found[0]).strip()
    return _COUNTRY_OF.get(key, key), found[1]


def _named(question: str, evidence: Sequence[Evidence]) -> list[Evidence]:
    """The two held passages the question names, in the order it names them (each title once)."""
    asked = f" {' '.join(tokens(question))} "
    spans: list[tuple[int, int, Evidence]] = []
    for item in evidence:
        key = f" {' '.join(tokens(title_key(item.title)))} "
        at = asked.find(key) if key.strip() else -1
        if at >= 0 and all(title_key(item.title) != title_key(other.title) for _, _, other in spans):
            spans.append((at, at + len(key), item))
    # the longest names first; a name inside another's span is part of it ("Kerman" in "Cheshmehha, Kerman")
    kept: list[tuple[int, int, Evidence]] = []
    for start, end, item in sorted(spans, key=lambda s: s[0] - s[1]):
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, item))
    return [item for _, _, item in sorted(kept, key=lambda s: s[0])][:2]


def answer_same_country(question: str, evidence: Sequence[Evidence]) -> tuple[str, Evidence, int] | None:
    """``("yes" | "no", the passage the second country was read from, its offset there)``, or
    ``None`` when it cannot decide."""
    if not _SAME.search(question):
        return None
    named = _named(question, evidence[:10])
    if len(named) < 2:
        return None
    linked = bool(_RELATION.search(question))
    countries: list[tuple[str, Evidence, int]] = []
    for item in named:
        subject = (linked_subject(item, evidence, exclude=[title_key(n.title) for n in named]) if linked else None) or item
        read = country_of(subject.text)
        if read is None and subject is not item:  # the film's own country stands in for its director's
            subject, read = item, country_of(item.text)
        if read is None:
            return None
        countries.append((read[0], subject, read[1]))
    (first, _, _), (second, passage, offset) = countries
    return ("yes" if first == second else "no"), passage, offset


_SAME_NOUN = re.compile(r"\bsame (?P<noun>[a-z]+)\b", re.I)
_BOTH = re.compile(r"\bboth\b", re.I)
_NOT_PROPERTY = frozenset({"both", "same", "located", "situated", "also"})


def _value_by(noun: str, text: str) -> tuple[str, int] | None:
    """The name the passage gives its ``noun`` ("the family Rosaceae", "Jiangsu province")."""
    after = re.search(rf"\b(?i:{noun})\s+(?:of\s+)?(?P<v>[A-Z][\w\-]+(?:\s+[A-Z][\w\-]+)*)", text)
    before = re.search(rf"(?P<v>[A-Z][\w\-]+(?:\s+[A-Z][\w\-]+)*)\s+(?i:{noun})\b", text)
    found = [m for m in (after, before) if m is not None and m.group("v")[:1].isupper()]
    if not found:
        return None
    best = min(found, key=lambda m: m.start())
    return best.group("v"), best.start("v")


def answer_same_value(question: str, evidence: Sequence[Evidence]) -> tuple[str, Evidence, int] | None:
    """"Are X and Y in the same family?": the name each passage gives that noun, compared."""
    match = _SAME_NOUN.search(question)
    if match is None or _SAME.search(question):
        return None
    named = _named(question, evidence[:10])
    if len(named) < 2:
        return None
    noun = match.group("noun").lower()
    values = [(_value_by(noun, item.text), item) for item in named]
    if any(v is None for v, _ in values):
        return None
    (first, _), (second, passage) = values
    return ("yes" if fold(first[0]) == fold(second[0]) else "no"), passage, second[1]


def answer_both(question: str, evidence: Sequence[Evidence]) -> tuple[str, Evidence, int] | None:
    """"Are X and Y both American writers?": "yes" when each named passage holds the property's words."""
    if not _BOTH.search(question) or _SAME_NOUN.search(question):
        return None
    named = _named(question, evidence[:10])
    if len(named) < 2:
        return None
    names = set().union(*(tokens(title_key(item.title)) for item in named))
    wanted = {t for t in tokens(question) if t not in names and t not in _NOT_PROPERTY} & _content(question)
    if not wanted:
        return None
    shares = [len(wanted & _content(item.text)) / len(wanted) for item in named]
    return ("yes" if min(shares) >= 0.5 else "no"), named[-1], 0


def _content(text: str) -> set[str]:
    """Content words with a plural's final s dropped, so "writers" meets "writer"."""
    return {t[:-1] if len(t) > 3 and t.endswith("s") else t for t in content_tokens(text)}
