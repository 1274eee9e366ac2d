"""Who played whom: a cast read from the sentences that state it, without a model.

"The actress who played Susan Walker in Miracle on 34th Street" asks for the performer of a part;
"Who did John Wayne play in True Grit?" for the part of a performer. Passages state casts in a few
fixed shapes, and this module reads those:

- "Natalie Wood as Susan Walker", "stars Geena Davis as Thelma and Susan Sarandon as Louise";
- "Fairy God Mother (voiced by Saunders)", "Jennifer … was played by Claudia Wells";
- "Colin Firth plays the future King George VI".

The part is matched by its words, case aside ("fairy god mother" in "Fairy God Mother"); a part
described rather than named ("the little girl", "Marty's girlfriend") is read the same way and is
simply not found when no passage names it so. The value read is a span of its passage, so an answer
built on it stays a span of its cited sentence. The value bridges of a plan's lookups
(:mod:`hoprag.pipeline.value_bridges`) and the offline answerer (:mod:`hoprag.pipeline.extractive`)
both read casts here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hoprag.pipeline.role_facts import RoleFact
from hoprag.records import Evidence

__all__ = ["PLAYED", "CastAsk", "asked_cast", "cast_answer", "read_cast"]

#: the verbs that say who plays a part
PLAYED = r"(?:played|plays|play|playing|play's|portrayed|portrays|voiced|voices|voice)"
# "actress who played Susan Walker in Miracle on 34th Street", "who plays copper in Fox and the Hound"
_PERFORMER_ASK = re.compile(
    rf"(?:^|\b(?:actor|actress|person|performer|star|one|who|that)\s+)(?:(?:who|that)\s+)?(?:also\s+)?{PLAYED}\s+"
    r"(?:the\s+(?:voice|role)\s+of\s+|the\s+(?=[A-Z]))?(?P<part>.+?)\s+(?:in|on|from)\s+(?:the\s+)?(?P<work>.+?)\s*\??$",
    re.I,
)
# "Who did John Wayne play in True Grit?", "what character does Neil Patrick Harris play in …"
_PART_ASK = re.compile(
    rf"^(?:who|what character|which character|what role|which role)\s+(?:did|does|do)\s+(?P<performer>.+?)\s+{PLAYED}\s+"
    r"(?:in|on)\s+(?:the\s+)?(?P<work>.+?)\s*\??$",
    re.I,
)
_NAME = r"[A-Z][\w'.\-\u00C0-\u024F]*(?:\s+(?:[A-Z][\w'.\-\u00C0-\u024F]*|de|van|von|da|del|la|le|J\.))*"
_DESCRIBED = frozenset("the a an little young old main his her their".split())
_WINDOW = 60  # characters between a part and the "by" that names its performer


@dataclass(frozen=True)
class CastAsk:
    """What a question or lookup asks of a cast: the ``performer`` of ``part``, or the ``part`` of ``performer``."""

    wanted: str  # "performer" or "part"
    known: str  # the part (or the performer) the words name
    work: str


def asked_cast(text: str) -> CastAsk | None:
    """The cast fact ``text`` asks for, or ``None``."""
    text = " ".join(text.split())
    match = _PART_ASK.match(text)
    if match is not None:
        return CastAsk("part", match.group("performer").strip(" ,"), match.group("work"))
    match = _PERFORMER_ASK.search(text)
    if match is not None:
        part = match.group("part").strip(" ,\"'")
        if part and len(part.split()) <= 5:
            return CastAsk("performer", part, match.group("work"))
    return None


def _part_pattern(part: str) -> str:
    words = [w for w in re.findall(r"[\w'\-]+", part) if w.lower() not in _DESCRIBED] or re.findall(r"[\w'\-]+", part)
    # "fairy god mother" meets "Fairy God Mother" and "Fairy Godmother"
    return r"(?i:\b" + r"\s*".join(re.escape(w) for w in words) + r"\b)"


def read_cast(text: str, ask: CastAsk) -> tuple[str, int] | None:
    """``(value, offset)`` of what ``ask`` wants, as ``text`` states it, or ``None``."""
    if ask.wanted == "part":
        name = re.escape(ask.known)
        found = re.search(rf"\b{name}\s+as\s+(?:the\s+)?(?P<v>{_NAME}(?:\s*/\s*{_NAME})?)", text)
        if found is None:
            found = re.search(rf"\b{name}\s+{PLAYED}\s+(?:the\s+(?:role|part)\s+of\s+)?(?P<v>{_NAME})", text)
        return (_trimmed(found.group("v")), found.start("v")) if found else None
    if not re.search(r"\w", ask.known):
        return None  # a part without a word names nothing to find
    part = _part_pattern(ask.known)
    for shape in (
        # "Natalie Wood as Susan Walker", "Will Arnett reprising his role as Batman"
        rf"(?P<v>{_NAME})\s+(?:,?\s*(?:reprising|reprises|reprised|in)\s+(?:his|her|the)\s+role\s+)?as\s+(?:the\s+)?(?:[\w.]+\s+){{0,3}}?{part}",
        rf"{part}[^.;]{{0,{_WINDOW}}}?\b(?:voiced|played|portrayed)\s+by\s+(?:actor\s+|actress\s+)?(?P<v>{_NAME})",
        rf"(?P<v>{_NAME})\s+(?:plays|played|portrays|portrayed|voices|voiced)\s+(?:the\s+)?(?:[\w.]+\s+){{0,2}}?{part}",
    ):
        found = re.search(shape, text)
        if found is not None:
            run = found.group("v")
            if text[: found.start("v")].endswith(" as ") and len(run.split()) > 2:
                run = " ".join(run.split()[-2:])  # "Mickey Rooney as Tod Kurt Russell as Copper": the part, then the name
            value, offset = _person(run), found.start("v")
            if value and not re.fullmatch(part, value):
                return value, offset + found.group("v").rfind(value)
    return None


def _trimmed(value: str) -> str:
    """A name without the full stop that ends its sentence ("… Rooster Cogburn.", not "U.S.")."""
    value = value.strip()
    last = value.split()[-1] if value.split() else ""
    return value[:-1] if last.endswith(".") and len(last) > 3 and not re.fullmatch(r"(?:[A-Z]\.)+", last) else value


def _person(run: str) -> str:
    """The performer's name at the end of a run of capitalised words: a cast list written without its
    line breaks reads "Frederick M. Natalie Wood as Susan Walker", where the name follows the initial."""
    words = _trimmed(run).split()
    if len(words) > 3:
        cut = max((i for i, w in enumerate(words[:-2]) if re.fullmatch(r"[A-Z]\.", w)), default=-1)
        words = words[cut + 1:]
    return " ".join(words)


def cast_answer(question: str, evidence: Sequence[Evidence]) -> RoleFact | None:
    """The performer (or part) a cast question asks for, read in the held passages in order."""
    ask = asked_cast(question)
    if ask is None:
        return None
    for item in evidence:
        read = read_cast(item.text, ask)
        if read is not None:
            return RoleFact(value=read[0], role=f"cast_{ask.wanted}", passage=item, offset=read[1])
    return None
