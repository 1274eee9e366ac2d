"""Facts read by their role: a birth or death date, a birth or death place, a nationality, read from
the passage of the entity a question is about, which is often not the entity it names.

No model: the role is read from the question's words ("When did … die?", "the place of birth of …",
"What nationality …"), the subject from the chain ("X's father", "the director of film X": the held
passage whose title X's passage mentions), and the value from the words around it in the subject's
passage ("born in Weston-super-Mare, Somerset", "(9 January 1794 – 10 September 1859)", "was an
English actor"). Every value is a span of its passage, so the answer stays a span of its cited
sentence. Both the offline answerer (:mod:`hoprag.pipeline.extractive`) and the yes/no comparisons
(:mod:`hoprag.pipeline.yes_no`) read facts here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from hoprag.index.entities import title_key
from hoprag.pipeline.text import fold, tokens
from hoprag.records import Evidence

__all__ = ["ROLES", "RoleFact", "asked_role", "kin_reads", "linked_subject", "linked_subjects", "named_passage", "read_role", "role_answer"]

ROLES = ("birth_date", "death_date", "birth_place", "death_place", "burial_place", "residence", "nationality",
         "country", "father", "mother", "spouse", "child", "sibling")

_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
# a full date as the passage writes it, or a year (never a bare day or month)
DATE_SPAN = rf"(?:\d{{1,2}}\s+{_MONTH},?\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{3,4}}|{_MONTH}\s+\d{{3,4}}|\b\d{{3,4}}\b)"
_DATE = re.compile(DATE_SPAN)
# a capitalised word; a full stop only in a short abbreviation ("St. Louis"), never a sentence's end
_NAME_WORD = r"(?:(?:St|Mt|Ft|Jr|Sr)\.|[A-Z\u00C0-\u00DE\u0100-\u024F][\w'\u2019\-]*)"


def _place(parts: int) -> str:
    """A place: capitalised words, "of"/"de"/"upon" inside, then at most ``parts`` ", Region" parts."""
    word = _NAME_WORD
    return rf"{word}(?:\s+(?:(?:of|de|del|da|di|upon|sur|am|an|la|le|the)\s+)?{word})*(?:,\s+{word}(?:\s+{word})*){{0,{parts}}}"


_PLACE = _place(2)
_PLACE_AFTER = {
    "birth_place": re.compile(rf"\b(?i:born)\b[^.;()]{{0,60}}?\b(?:in|at)\s+(?:the\s+)?(?P<v>{_PLACE})"),
    # "died in X", and a place the death closes a stay in ("retired to Edirne, where he resided until his death")
    "death_place": re.compile(
        rf"\b(?i:died|death|killed)\b[^.;()]{{0,60}}?\b(?:in|at)\s+(?:the\s+)?(?P<v>{_PLACE})"
        rf"|\b(?:in|to|at)\s+(?P<w>{_place(0)}),\s+where\s+(?:he|she)\s+(?:lived|resided|remained|stayed|spent)\b"
        rf"[^.;()]{{0,40}}?\b(?:until|till)\s+(?:his|her)\s+(?:\w+\s+)?death"
    ),
    "burial_place": re.compile(rf"\b(?i:buried|interred|entombed)\b[^.;()]{{0,40}}?\b(?:in|at)\s+(?:the\s+)?(?P<v>{_PLACE})"),
    # where someone lived: "moved to Nashville, Tennessee", "lived in Madison", "settled in Ohio"
    "residence": re.compile(
        rf"\b(?i:lived|lives|resided|resides|settled|moved|relocated)\b\s+(?:\w+\s+){{0,2}}?(?:in|to|at)\s+(?:the\s+)?(?P<v>{_PLACE})"
    ),
}
_BORN_DATE = re.compile(rf"(?:\b(?i:born)\b|\(\s*b\.)[^.;]{{0,50}}?(?P<v>{DATE_SPAN})")  # "( b. 1127 – d. …)" too
_DIED_DATE = re.compile(rf"\b(?i:died|death|d\.)\s[^.;]{{0,60}}?(?P<v>{DATE_SPAN})")
# a life's range near a passage's start, places optional: "(9 January 1794 – 10 September 1859)",
# "(June 7, 1909 in Jiménez, Chihuahua – September 4, 1986 in Mexico City)", "(6 June 1906, Graz – …)"
_AT = rf"(?:(?:,\s*|\s+in\s+)(?P<GROUP>{_PLACE}))?"
_RANGE = re.compile(
    rf"\(\s*(?:[^()]*?[;,]\s*)??(?:c\.\s*|born\s+)?(?P<b>{DATE_SPAN}){_AT.replace('GROUP', 'bp')}\s*[\u2013\u2014-]+\s*"
    rf"(?:c\.\s*|died\s+)?(?P<d>{DATE_SPAN}){_AT.replace('GROUP', 'dp')}"
)
_LIFE_GROUP = {"birth_date": "b", "death_date": "d", "birth_place": "bp", "death_place": "dp"}
_TRAILING_MONTH = re.compile(rf"\s+(?:on|in|of|the)\s+{_MONTH}$|,\s*{_MONTH}$|,$")
# "was an English actor", "is a 1936 American comedy film": the nationality word of a first sentence
_NATIONALITY = re.compile(
    r"\b(?:is|was|are|were)\s+(?:an?-?|the)\s+(?:(?:[a-z0-9][\w\-]*|\d{4}s?)\s+){0,3}?"
    r"(?P<v>[A-Z][a-z]+(?:[\-\u2013][A-Z][a-z]+)?)\b"
)
_DEMONYM_END = re.compile(r"(?:an|ese|ish|ch|i|ic|ss|ek|ai|ot)$")
_DEMONYM = re.compile(r"\b[A-Z][a-z]+(?:an|ese|ish|ch|i|ic|ss|ek|ai|ot)\b")
# "is a village in Bavegem District, East Flanders, Belgium": the country is the last part
_LOCATED = re.compile(
    rf"\b(?:is|was)\s+(?:an?-?|the|situated|located)\s+[^.;]{{0,80}}?\b(?:in|of)\s+(?:the\s+)?(?P<v>{_place(6)})"
)

_WHAT = r"^(?:what|which) (?:is|was|are|were) (?:the )?"
_IN_WHAT = r"^(?:in )?(?:what|which) (?:city|town|country|state|county|place|village)\b"
# the role asked, from the question's opening words: "of what church is the diocese of the
# birthplace of X" asks for a church, not a birthplace
_ASKS = (
    ("birth_date", re.compile(rf"{_WHAT}(?:date of birth|birth ?date|birthday)\b|^when (?:was|is) .+ (?:born|birthday)\b|^(?:in )?what year was .+ born\b", re.I)),
    ("death_date", re.compile(rf"{_WHAT}(?:date of death|death ?date)\b|^when did .+ (?:die|pass away)\b|^(?:in )?what year did .+ die\b", re.I)),
    ("birth_place", re.compile(rf"{_WHAT}(?:place of birth|birthplace)\b|^where (?:was|is) .+ born\b|{_IN_WHAT} .+ born\b", re.I)),
    ("death_place", re.compile(rf"{_WHAT}place of death\b|^where (?:was|is) the place of death\b|^where did .+ die\b|{_IN_WHAT} .+ die\b", re.I)),
    ("burial_place", re.compile(rf"{_WHAT}place of burial\b|^where (?:was|is) .+ buried\b", re.I)),
    ("father", re.compile(r"^who (?:is|was) (?:the )?father of\b|^who (?:is|was) (?:(?! of ).)+'s father\s*\??$", re.I)),
    ("mother", re.compile(r"^who (?:is|was) (?:the )?mother of\b|^who (?:is|was) (?:(?! of ).)+'s mother\s*\??$", re.I)),
    ("spouse", re.compile(r"^who (?:is|was) (?:the )?(?:spouse|wife|husband) of\b|^who (?:is|was) (?:(?! of ).)+'s (?:spouse|wife|husband)\s*\??$", re.I)),
    ("child", re.compile(r"^who (?:is|was) (?:the )?(?:child|son|daughter) of\b|^who (?:is|was) (?:(?! of ).)+'s (?:child|son|daughter)\s*\??$", re.I)),
    ("sibling", re.compile(r"^who (?:is|was) (?:the )?(?:sibling|brother|sister) of\b|^who (?:is|was) (?:(?! of ).)+'s (?:sibling|brother|sister)\s*\??$", re.I)),
    ("nationality", re.compile(r"^what nationality\b|^what is the nationality of\b|^which country .+ (?:is|was|are|were) from\b", re.I)),
)
_PARTICLE = r"(?:de|da|di|von|van|der|del|la|le|bin|ibn|of)"
# a person's name, with the title that tells peers apart ("Sir Roger Martin, 3rd Baronet",
# "Jerome, 4th Count de Salis-Soglio"), which is how their pages are titled
_PERSON = (
    rf"{_NAME_WORD}(?:\s+(?:{_PARTICLE}\s+)?{_NAME_WORD})*"
    rf"(?:,\s+(?:\d+(?:st|nd|rd|th)\s+)?(?:Baronet|Earl|Duke|Count|Countess|Baron|Baroness|Marquess|Viscount|Prince|Princess)"
    rf"(?:\s+{_PARTICLE}\s+{_NAME_WORD}(?:\s+{_NAME_WORD})*)?)?"
)
_LEAD = r"(?:the\s+)?(?:[a-z]+\s+){0,2}?"  # "the late", "actress": words before a name
# "daughter of Lady Sarah Amherst and her husband John Hay-Williams": a child's parents
_PARENTS = re.compile(
    rf"\b(?:son|daughter|child|(?i:born)(?:\s+in\s+{_NAME_WORD})?\s+to)\s+(?:of\s+)?(?P<lead>{_LEAD})(?P<a>{_PERSON})"
    rf"(?:\s+and\s+(?:(?:his|her)\s+(?P<rel>wife|husband),?\s+)?{_LEAD}(?P<b>{_PERSON}))?"
)
_FEMININE = re.compile(r"\b(?:actress|singer|dancer|lady|queen|princess|mrs|widow|mother)\b")
_PARENT = {role: re.compile(rf"\b(?:his|her|whose) {role},?\s+(?:was\s+)?{_LEAD}(?P<v>{_PERSON})") for role in ("father", "mother")}
_SPOUSE = re.compile(
    rf"\bmarried\s+(?:to\s+)?{_LEAD}(?P<v>{_PERSON})|\b(?:his|her) (?:wife|husband|spouse),?\s+{_LEAD}(?P<w>{_PERSON})"
    rf"|\b(?:wife|husband|widow|widower)(?: and (?:empress|queen|consort|king|emperor))? of\s+{_LEAD}(?P<x>{_PERSON})"
)
# "his son, Chiang Hsiao-wu", "father of Arthur Peel"; "her sister Lana Wood", "brother of Jamie Murray"
_KIN_OF = {
    "child": re.compile(rf"\b(?i:his|her|their)\s+(?:\w+\s+)?(?:son|daughter|child|children|sons|daughters),?\s+(?:were\s+|was\s+)?"
                        rf"(?P<v>{_PERSON})|\b(?:father|mother)\s+of\s+{_LEAD}(?P<w>{_PERSON})"),
    "sibling": re.compile(rf"\b(?i:his|her|their)\s+(?:\w+\s+)?(?:brother|sister|sibling|brothers|sisters|siblings),?\s+(?:were\s+|was\s+)?"
                          rf"(?P<v>{_PERSON})|\b(?:brother|sister)\s+of\s+{_LEAD}(?P<w>{_PERSON})"),
}
# the words a question asks a person's relation with ("Who is X's son?"): no step of the chain
_ASKED_WORDS = {"father": "father|wife|husband", "mother": "mother|wife|husband", "spouse": "spouse|wife|husband",
                "child": "child|son|daughter", "sibling": "sibling|brother|sister"}
# the relation nouns that put the answer on another passage than the named one ("X's father")
_RELATION = re.compile(
    r"\b(?:father|mother|husband|wife|spouse|son|daughter|director|composer|performer|producer|author|"
    r"writer|creator|founder|keyboardist|singer|guitarist|drummer|screenwriter|cinematographer|editor)\b",
    re.I,
)


LINKED_TRIED = 1  # passages the anchor names by title, tried in evidence order
NEXT_TRIED = 3  # leading passages tried next when those state no such fact


# "the pianist who recorded X": a clause about someone X names is a step of the chain as well
_WHO_CLAUSE = re.compile(r"\w\s+(?:who|whom|whose)\b")


@dataclass(frozen=True)
class RoleFact:
    """A value read by its role, the passage it was read from and where it starts in its text."""

    value: str
    role: str
    passage: Evidence
    offset: int


def asked_role(question: str) -> str | None:
    """The role the question asks to read (one of :data:`ROLES` but ``country`` and ``residence``), or ``None``."""
    for role, pattern in _ASKS:
        if pattern.search(question):
            return role
    return None


def _trim(value: str) -> str:
    value = value.strip(" ,.;")
    while True:
        trimmed = _TRAILING_MONTH.sub("", value).strip(" ,.;")
        if trimmed == value:
            return value
        value = trimmed


def read_role(text: str, role: str) -> tuple[str, int] | None:
    """``(value, offset)`` of the fact of ``role`` in ``text``, or ``None`` when it is not stated."""
    if role in _PLACE_AFTER or role in ("birth_date", "death_date"):
        life = _RANGE.search(text[:300])
        group = _LIFE_GROUP.get(role, "")
        own = (_PLACE_AFTER.get(role) or (_BORN_DATE if role == "birth_date" else _DIED_DATE)).search(text)
        if group and life is not None and life.group(group) and (own is None or life.start() < own.start()):
            return _trim(life.group(group)), life.start(group)
        if own is None:
            return None
        slot = "v" if own.group("v") else "w"
        return _trim(own.group(slot)), own.start(slot)
    if role in ("father", "mother"):
        return _parent(text, role)
    if role == "spouse":
        match = _SPOUSE.search(text)
        group = next((g for g in ("v", "w", "x") if match is not None and match.group(g)), None)
        return (match.group(group), match.start(group)) if match is not None and group else None
    if role in _KIN_OF:
        return next(kin_reads(text, role), None)
    if role == "nationality":
        for match in _NATIONALITY.finditer(text[:400]):
            if not _DEMONYM_END.search(match.group("v")):
                continue
            if text.startswith("-born", match.end("v")):  # "an Austrian-born French director": French
                later = _DEMONYM.search(text, match.end("v") + 5, match.end("v") + 40)
                if later is not None:
                    return later.group(0), later.start()
            return match.group("v"), match.start("v")
        return None
    if role == "country":
        match = _LOCATED.search(text[:300])
        if match is None:
            return None
        # the last ", Name" of the sentence: "in the Central District of Khatam County, Yazd Province, Iran."
        end = text.find(". ", match.start("v"))
        where = text[match.start("v") : end if end > 0 else len(text)].rstrip(" .")
        last = where.rsplit(",", 1)[-1].strip()
        if not re.fullmatch(_place(0), last):
            last = _trim(match.group("v")).rsplit(",", 1)[-1].strip()
        return last, match.start("v") + where.rfind(last)
    return None


def kin_reads(text: str, role: str) -> Iterator[tuple[str, int]]:
    """Every ``(value, offset)`` of a child or a sibling ``text`` names, in order (a family has several)."""
    for match in _KIN_OF[role].finditer(text):
        group = "v" if match.group("v") else "w"
        yield match.group(group), match.start(group)


def _parent(text: str, role: str) -> tuple[str, int] | None:
    """A parent named by "his father, X" or by "son of A and B" (A the father, unless "and her husband B")."""
    own = _PARENT[role].search(text)
    both = _PARENTS.search(text)
    if both is not None and (own is None or both.start() < own.start()):
        # one parent named: a mother when the words before her say so ("son of actress Lillian Elliott")
        father_first = both.group("rel") != "husband" and not (both.group("b") is None and _FEMININE.search(both.group("lead")))
        group = "a" if (role == "father") == father_first else "b"
        if both.group(group):
            return both.group(group), both.start(group)
    return (own.group("v"), own.start("v")) if own else None


def named_passage(name: str, evidence: Sequence[Evidence]) -> Evidence | None:
    """The held passage titled ``name``: the same title key, else a title that goes on from it
    ("Albert I" → *Albert I, Duke of Bavaria*), else a title of two words or more inside it."""
    key = title_key(name)
    if not key:
        return None
    keys = [(title_key(item.title), item) for item in evidence]
    return (next((item for k, item in keys if k == key), None)
            or next((item for k, item in keys if k.startswith(key + ",")), None)
            or next((item for k, item in keys if " " in k and f" {k} " in f" {key} "), None))


def linked_subjects(anchor: Evidence, evidence: Sequence[Evidence], *, exclude: Sequence[str] = ()) -> list[Evidence]:
    """The held passages the anchor's text names by title (a film's page naming its director), in
    evidence order; a passage of the anchor's own name ("Forbidden Ground (2013 film)") or one whose
    name is only part of the anchor's ("The Prairie" in "The Prairie King") is none of them."""
    own = title_key(anchor.title)
    text = f" {' '.join(fold(anchor.text).split())} ".replace(own, " ") if own else ""
    found = []
    for item in evidence:
        key = title_key(item.title)
        if item.chunk_id == anchor.chunk_id or not key or key == own or key in exclude:
            continue
        if any(f" {key}{end}" in text for end in (" ", ",", ".", "'", ")")) and all(f.title != item.title for f in found):
            found.append(item)
    return found


def linked_subject(anchor: Evidence, evidence: Sequence[Evidence], *, exclude: Sequence[str] = ()) -> Evidence | None:
    """The first of :func:`linked_subjects`, or ``None`` when the anchor names no other held passage."""
    linked = linked_subjects(anchor, evidence, exclude=exclude)
    return linked[0] if linked else None


def _spaced(text: str) -> str:
    return f" {' '.join(tokens(text))} "


def _anchor(question: str, evidence: Sequence[Evidence]) -> Evidence | None:
    """The leading held passage whose title the question names, the longest title first ("X's
    father" names X with or without its possessive)."""
    asked = _spaced(question)
    bare = asked.replace("'s ", " ").replace("\u2019s ", " ")
    named = []
    for item in evidence[:6]:
        key = _spaced(title_key(item.title))
        at = max(asked.rfind(key), bare.rfind(key)) if key.strip() else -1
        if at >= 0:
            named.append((at + len(key), len(key), item))
    # the name the question ends on, not a phrase it asks with ("the place of birth of …")
    return max(named, key=lambda row: row[:2])[2] if named else None


def role_answer(question: str, evidence: Sequence[Evidence]) -> RoleFact | None:
    """The fact the question asks by role, read from its subject's passage: the passage the named one
    links to when the question asks about a relation of it ("X's father", "the pianist who recorded
    X"), else the named one."""
    role = asked_role(question)
    if role is None:
        return None
    anchor = _anchor(question, evidence)
    if anchor is None:
        return None
    asked = _spaced(question)
    rest = asked.replace(_spaced(title_key(anchor.title)), " ")
    if role in _ASKED_WORDS:  # the relation asked is no step of the chain
        rest = re.sub(rf"\b(?:{_ASKED_WORDS[role]})\b", " ", rest, count=1)
    subjects = [anchor]
    if _RELATION.search(rest) or _WHO_CLAUSE.search(rest):
        # the passages the anchor names by title, then the chain's next passages whatever their
        # title ("Presbyterianism" holds "John Knox (1505–1572)")
        subjects = linked_subjects(anchor, evidence[:8])[:LINKED_TRIED]
        subjects += [e for e in evidence[:NEXT_TRIED] if e.chunk_id != anchor.chunk_id and e not in subjects
                     and _spaced(title_key(e.title)) not in asked]
    for subject in subjects:
        if role in _KIN_OF:  # a child or a sibling the question names is the way there ("… Hsiao-wen's father's child")
            read = next((r for r in kin_reads(subject.text, role) if fold(r[0]) not in fold(question)), None)
        else:
            read = read_role(subject.text, role)
        if read is not None:
            return RoleFact(value=read[0], role=role, passage=subject, offset=read[1])
    return None
