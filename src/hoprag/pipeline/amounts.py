"""Offline answers to size and count comparisons: "Which mountain is higher, A or B?", "Which group
has more members, A or B?", "Which playwright lived a longer life, A or B?".

The two options are read as :mod:`hoprag.pipeline.comparisons` reads them. Each option's amount is
read from the held passages about it (the one it titles, then those whose title holds its name:
"Nanda Devi National Park" states "Nanda Devi (7816 m)"): a height is the first number in metres
or feet (feet turned to metres), a count of members the number before "members" or the word that
says it ("trio", "quartet"), a life's length the years between the birth and death dates. The
larger (or smaller) amount wins; when either option's amount is not stated the comparison gives
no answer and the caller falls back. The answer is an option, cited by the passage its amount
came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hoprag.pipeline.bridges import title_key
from hoprag.pipeline.comparisons import date_of, options_in
from hoprag.pipeline.text import tokens
from hoprag.records import Evidence

__all__ = ["AmountQuestion", "answer_amounts", "parse_amounts"]

_FEET_IN_METRES = 0.3048
_NUMBER = r"(?P<n>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_HEIGHT = re.compile(rf"{_NUMBER}\s*(?P<unit>m|metres|meters|ft|feet)\b")
_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
          "eleven": 11, "twelve": 12, "duo": 2, "trio": 3, "quartet": 4, "quintet": 5, "sextet": 6, "septet": 7, "octet": 8}
# "five current members", never "formed in 1987 by members": one describing word at most between
_MEMBERS = re.compile(rf"\b(?:{_NUMBER}|(?P<w>two|three|four|five|six|seven|eight|nine|ten|eleven|twelve))\s+"
                      r"(?:(?!(?:by|of|and|the|with|from|for|to|in|as|its|their)\b)[a-z\-]+\s+)?members\b"
                      r"|\b(?P<g>duo|trio|quartet|quintet|sextet|septet|octet)\b", re.I)
# what is compared, and whether the larger amount wins
_ASKS = (
    ("height", True, re.compile(r"\b(?:higher|taller|highest|tallest)\b", re.I)),
    ("height", False, re.compile(r"\b(?:lower|shorter)\b(?!.*\blife\b)", re.I)),
    ("members", True, re.compile(r"\b(?:more|most)\s+(?:\w+\s+)?members\b", re.I)),
    ("members", False, re.compile(r"\b(?:fewer|fewest|less)\s+(?:\w+\s+)?members\b", re.I)),
    ("life", True, re.compile(r"\blonger\s+life\b|\blived\s+longer\b|\blonger[- ]lived\b", re.I)),
    ("life", False, re.compile(r"\bshorter\s+life\b", re.I)),
)


@dataclass(frozen=True)
class AmountQuestion:
    options: tuple[str, str]
    amount: str  # "height" | "members" | "life"
    larger_wins: bool


def parse_amounts(question: str) -> AmountQuestion | None:
    """A size or count comparison between two named options, or ``None`` when the question is not one."""
    offered = options_in(question)
    if offered is None:
        return None
    options, head = offered
    for amount, larger_wins, pattern in _ASKS:
        if pattern.search(head):
            return AmountQuestion(options=options, amount=amount, larger_wins=larger_wins)
    return None


def _height(text: str) -> float | None:
    match = _HEIGHT.search(text)
    if match is None:
        return None
    value = float(match.group("n").replace(",", ""))
    return value * _FEET_IN_METRES if match.group("unit") in ("ft", "feet") else value


def _members(text: str) -> float | None:
    match = _MEMBERS.search(text)
    if match is None:
        return None
    if match.group("n"):
        return float(match.group("n").replace(",", ""))
    return float(_WORDS[(match.group("w") or match.group("g")).lower()])


def _life(text: str) -> float | None:
    born, died = date_of(text, "birth"), date_of(text, "death")
    if born is None or died is None or died <= born:
        return None
    return (died[0] - born[0]) + ((died[1] or 0) - (born[1] or 0)) / 12 + ((died[2] or 0) - (born[2] or 0)) / 365


_READERS: dict[str, Callable[[str], float | None]] = {"height": _height, "members": _members, "life": _life}


def _about(option: str, evidence: Sequence[Evidence]) -> list[Evidence]:
    """The passages about ``option``: the one it titles first, then those whose title holds its name."""
    key = tokens(title_key(option))
    if not key:
        return []
    exact = [e for e in evidence if tokens(title_key(e.title)) == key]
    holding = f" {' '.join(key)} "
    rest = [e for e in evidence if e not in exact and holding in f" {' '.join(tokens(e.title))} "]
    return exact + rest


def answer_amounts(question: str, evidence: Sequence[Evidence]) -> tuple[str, Evidence] | None:
    """``(winning option, the passage its amount came from)``, or ``None`` when it cannot decide."""
    asked = parse_amounts(question)
    if asked is None:
        return None
    read = _READERS[asked.amount]
    found: list[tuple[float, str, Evidence]] = []
    for option in asked.options:
        amount = next(((value, item) for item in _about(option, evidence) if (value := read(item.text)) is not None), None)
        if amount is None:
            return None
        found.append((amount[0], option, amount[1]))
    (a, option_a, passage_a), (b, option_b, passage_b) = found
    if a == b:
        return None
    return (option_a, passage_a) if (a > b) == asked.larger_wins else (option_b, passage_b)
