"""Offline answers to date comparisons: "Which film came out first, A or B?", "Who was born later?".

The two options are read from the question; each is matched to the held passage titled by it. When
the question compares something *of* each option ("whose director died earlier") the passage of the
linked entity is used instead: the held passage whose title the option's passage mentions. Dates are
read from the passage text (``2 November 1932``, ``July 23, 1968``, ``1968``): a birth is the first
date of a biography, a death the date after "died" or after the dash of a ``(born – died)`` range,
a release or founding the first date otherwise. The option with the earlier (or later) date wins;
without a date for both options the comparison gives no answer and the caller falls back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hoprag.pipeline.bridges import title_key
from hoprag.pipeline.role_facts import linked_subjects
from hoprag.records import Evidence

_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), start=1
    )
}
_DATE = re.compile(
    r"\b(?:(?P<d1>\d{1,2})\s+(?P<m1>[A-Z][a-z]+)\s+(?P<y1>\d{3,4})"
    r"|(?P<m2>[A-Z][a-z]+)\s+(?P<d2>\d{1,2}),?\s+(?P<y2>\d{3,4})"
    r"|(?P<y3>1\d{3}|20\d{2}))\b"
)
_LATER = re.compile(r"\b(later|last|more recent(?:ly)?|younger|newer|after|most recent(?:ly)?)\b", re.I)
_EARLIER = re.compile(r"\b(earlier|first|older|oldest|before|sooner|earliest)\b", re.I)
_DEATH = re.compile(r"\b(died|death|dies|passed away)\b", re.I)
_BIRTH = re.compile(r"\b(born|birth|younger|older|age)\b", re.I)
_LINKED = re.compile(r"\b(director|directors|author|writer|composer|father|mother|founder|creator|performer|producer)\b", re.I)
_OPTIONS = re.compile(r",\s*(?P<a>[^,?]+?)\s+or\s+(?P<b>[^,?]+?)\s*\??\s*$", re.I)
# "Was A or B born first?", "Is A or B further west?": the options inside, what is compared after
_INLINE = re.compile(
    r"^(?i:was|were|is|are|did|does|do)\s+(?P<a>[^,?]+?)\s+or\s+(?P<b>[A-Z0-9][^\s?]*(?:\s+[A-Z0-9][^\s?]*)*)\s+"
    r"(?P<tail>[a-z][^?]*)\?\s*$"
)
# "Which band was formed first The Exies or Circus Diablo?": the options right after the direction
_AFTER_DIRECTION = re.compile(
    r"\b(?:first|earlier|later|last|older|younger|earliest|latest|recently)\s+(?P<a>[^,?]+?)\s+or\s+(?P<b>[^,?]+?)\s*\?\s*$", re.I
)


# "Which film has the director born earlier, The Adventures Of Priscilla, Queen Of The Desert or
# Harvest: 3,000 Years?": the options run from the first comma, split at the first " or "
_AFTER_COMMA = re.compile(r"^(?P<head>[^,]+),\s*(?P<a>.+?),?\s+or\s+(?P<b>.+?)\s*\??\s*$", re.I)


def options_in(question: str) -> tuple[tuple[str, str], str] | None:
    """``((A, B), the words before them)`` of a question offering two options, or ``None``."""
    inline = inline_options(question)
    if inline is not None:
        return inline
    match = _AFTER_COMMA.match(question.strip()) or _OPTIONS.search(question) or _AFTER_DIRECTION.search(question)
    if match is None:
        return None
    options = (match.group("a").strip(" \"'"), match.group("b").strip(" \"'"))
    return (options, question[: match.start("a")]) if all(options) else None


def inline_options(question: str) -> tuple[tuple[str, str], str] | None:
    """``((A, B), what is compared)`` of a question that names its options inside ("Was A or B born
    first?"), or ``None``."""
    match = _INLINE.match(question.strip())
    if match is None:
        return None
    return (match.group("a").strip(" \"'"), match.group("b").strip(" \"'")), match.group("tail")


@dataclass(frozen=True)
class Comparison:
    options: tuple[str, str]
    attribute: str  # "birth" | "death" | "date"
    later_wins: bool
    linked: bool


def parse_comparison(question: str) -> Comparison | None:
    """A date comparison between two named options, or ``None`` when the question is not one."""
    offered = options_in(question)
    if offered is None:
        return None
    options, head = offered
    later, earlier = _LATER.search(head), _EARLIER.search(head)
    if not later and not earlier:
        return None
    if _DEATH.search(head):
        attribute = "death"
    elif _BIRTH.search(head):
        attribute = "birth"
    else:
        attribute = "date"
    # "younger" means born later; "older" born earlier.
    later_wins = bool(later) and not (earlier and earlier.start() < later.start())
    return Comparison(
        options=options,
        attribute=attribute,
        later_wins=later_wins,
        linked=bool(_LINKED.search(head)),
    )


def _dates(text: str) -> list[tuple[int, tuple[int, int, int]]]:
    found = []
    for m in _DATE.finditer(text):
        if m.group("y1"):
            month = _MONTHS.get(m.group("m1").lower())
            if month is None:
                continue
            found.append((m.start(), (int(m.group("y1")), month, int(m.group("d1")))))
        elif m.group("y2"):
            month = _MONTHS.get(m.group("m2").lower())
            if month is None:
                continue
            found.append((m.start(), (int(m.group("y2")), month, int(m.group("d2")))))
        else:
            found.append((m.start(), (int(m.group("y3")), 0, 0)))
    return found


def date_of(text: str, attribute: str) -> tuple[int, int, int] | None:
    dates = _dates(text)
    if not dates:
        return None
    if attribute == "death":
        died = _DEATH.search(text)
        if died:
            after = [d for pos, d in dates if pos > died.start()]
            if after:
                return after[0]
        dash = re.search(r"[–—-]\s*(?=\d|[A-Z][a-z]+ \d)", text[:200])
        if dash:
            after = [d for pos, d in dates if pos > dash.start()]
            if after:
                return after[0]
        return dates[1][1] if len(dates) > 1 else None
    return dates[0][1]


def _passage_for(option: str, evidence: Sequence[Evidence]) -> Evidence | None:
    key = title_key(option)
    for item in evidence:
        if title_key(item.title) == key:
            return item
    for item in evidence:
        if key and key in title_key(item.title):
            return item
    return None


def _linked_passage(anchor: Evidence, evidence: Sequence[Evidence], attribute: str, exclude: Sequence[str]) -> Evidence | None:
    """The passage the anchor names that states the date compared (a film's director with a life range)."""
    linked = linked_subjects(anchor, evidence, exclude=exclude)
    return next((item for item in linked if date_of(item.text, attribute) is not None), None)


def answer_comparison(question: str, evidence: Sequence[Evidence]) -> tuple[str, Evidence] | None:
    """``(winning option, the passage its date came from)``, or ``None`` when it cannot decide."""
    comparison = parse_comparison(question)
    if comparison is None:
        return None
    dated: list[tuple[tuple[int, int, int], str, Evidence]] = []
    options = [title_key(option) for option in comparison.options]
    for option in comparison.options:
        passage = _passage_for(option, evidence)
        if passage is None:
            return None
        attribute = comparison.attribute
        if comparison.linked and attribute == "date":
            attribute = "birth"
        if comparison.linked:
            passage = _linked_passage(passage, evidence, attribute, options) or passage
        when = date_of(passage.text, attribute)
        if when is None:
            return None
        dated.append((when, option, passage))
    (first, a, pa), (second, b, pb) = dated
    if first == second:
        return None
    a_later = first > second
    if a_later == comparison.later_wins:
        return a, pa
    return b, pb
