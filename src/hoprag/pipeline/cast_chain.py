"""A cast asked by the final question, read with the performer a plan's lookup found.

"The actor who plays Count Olaf in "A Series of Unfortunate Events" also plays which character in
Batman Under the Red Hood?" asks a part; its performer is described, not named, so the cast reader
(:func:`hoprag.pipeline.cast.read_cast`) has no name to look for in the question. The plan's lookup
found him: the values the plan's ranker reads from that lookup's passages
(:func:`hoprag.pipeline.bridge_mentions.found_bridges`, deepest hop first, best first) are tried as
the performer, and the first one a held passage casts answers ("Neil Patrick Harris as Nightwing /
Dick Grayson"). A question that names its performer ("Who did John Wayne play in True Grit?") is
read directly. The final answer only: a plan's lookups read casts in :mod:`hoprag.pipeline.value_bridges`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.pipeline.bridge_mentions import found_bridges
from hoprag.pipeline.cast import PLAYED, CastAsk, asked_cast, cast_answer, read_cast
from hoprag.pipeline.role_facts import RoleFact
from hoprag.records import Evidence

__all__ = ["CAST_ITEMS", "FOUND_TRIED", "asks_part", "chain_cast"]

CAST_ITEMS = 8  # leading evidence items read for the cast (the chain the engine ranked first, and its neighbours)
FOUND_TRIED = 3  # found values of a hop tried as the performer (the plan keeps a beam of 2-3)

# "… plays which character in …", "Who did X play in …?", "… played who in …?", "In W, who does X play?"
_ASKS_PART = re.compile(
    rf"\b{PLAYED}\s+(?:what|which)\s+(?:character|role|part)\b"
    rf"|^\s*(?:who|what character|which character|what role|which role)\s+(?:did|does|do)\s+.+?\s+{PLAYED}\s+(?:in|on)\b"
    rf"|\b{PLAYED}\s+who\s+in\b"
    rf"|^\s*in\s+.+?,\s*who\s+(?:did|does|do)\s+.+?\s+{PLAYED}\s*\?",
    re.I,
)
# a sentence's end inside a cast list read as one run ("U.S. Marshal Rooster Cogburn. Wayne …"); not an initial
_SENTENCE_END = re.compile(r"(?<=[a-z]{3})\.(?:\s.*)?$", re.S)


def asks_part(question: str) -> bool:
    """Whether the question itself (not a clause of it) asks the part a performer plays."""
    return _ASKS_PART.search(question) is not None


def chain_cast(question: str, evidence: Sequence[Evidence]) -> RoleFact | None:
    """The part the question asks, read with the performer it names or, when it describes the
    performer, with the values the plan's lookups found; ``None`` when it asks no part or no held
    passage casts one."""
    if not asks_part(question):
        return None
    lead = evidence[:CAST_ITEMS]
    direct = asked_cast(question)
    if direct is not None and direct.wanted == "part" and (fact := cast_answer(question, lead)) is not None:
        return _cut(fact)
    found = found_bridges(question, evidence)
    for hop in sorted(found, reverse=True):
        for value in found[hop][:FOUND_TRIED]:
            for item in lead:
                read = read_cast(item.text, CastAsk("part", value, ""))
                if read is not None:
                    return _cut(RoleFact(value=read[0], role="cast_part", passage=item, offset=read[1]))
    return None


def _cut(fact: RoleFact) -> RoleFact:
    """The part without the next line or sentence a cast list ran on into; still a span of its passage
    and of the line its claim cites."""
    value = _SENTENCE_END.sub("", fact.value.split("\n")[0]).strip()  # a line ends a claim too
    return fact if value == fact.value else RoleFact(value=value, role=fact.role, passage=fact.passage, offset=fact.offset)
