"""The numbers an extractive answer reads: counts, durations and measures with their units.

A plan's lookups and the final answer read counts (``NUMBER``) and durations (``DURATION``) alike;
the final answer alone asks a quantity by its noun ("What is the usual average snowfall …?",
``ASKS_QUANTITY``) and keeps a measure's unit ("6.8 inches", ``MEASURE``), so tuning them never moves
the bridges a lookup finds.
"""

from __future__ import annotations

import re

__all__ = ["ASKS_QUANTITY", "DURATION", "MEASURE", "NUMBER", "UNITS", "counts_people"]

UNITS = r"(?:%|percent|years?|months?|weeks?|days?|hours?|minutes?|seconds?|business days?|miles?|km|kilometres?|kilometers?)"
NUMBER = re.compile(r"\b\d[\d,.]*(?:\s*" + UNITS + r"\b)?")
DURATION = re.compile(r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|twelve)\s*" + UNITS + r"\b", re.I)
# "What was the population / number of …?", "What is the usual average snowfall …?": a number, as "how many" asks
ASKS_QUANTITY = re.compile(
    r"\bwhat (?:is|was|were|are) (?:\w+ ){0,3}?(?:population|number of|snowfall|rainfall|precipitation|temperature|"
    r"elevation|height|length|area|depth|distance|capacity|attendance|budget|revenue)\b", re.I)
# "%" is no word, so it takes no word boundary after it ("5%")
MEASURE = re.compile(
    r"\b\d[\d,.]*(?:\s*(?:%|(?:percent|years?|months?|weeks?|days?|hours?|minutes?|seconds?|business days?|miles?|km|"
    r"kilometres?|kilometers?|inch(?:es)?|feet|foot|ft|metres?|meters?|cm|mm|m|acres?|hectares?|sq mi|"
    r"square (?:miles|kilometres|kilometers)|tonnes?|tons?|pounds?|lbs?|kg|mph)\b))?")


_PEOPLE = re.compile(r"\bpopulation\b", re.I)


def counts_people(question: str, value: str) -> bool:
    """False for a measure with a unit where a population is asked ("82,278 sq mi" is the state's area)."""
    return not (_PEOPLE.search(question) and re.search(r"\d\s*[A-Za-z%]", value))
