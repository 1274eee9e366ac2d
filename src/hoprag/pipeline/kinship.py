"""Offline answers to kinship questions that chain two relations: "Who is the paternal grandfather
of X?" (X's father's father), "Who is X's mother-in-law?" (X's spouse's mother).

Each relation is read by its role (:func:`hoprag.pipeline.role_facts.read_role`) from the passage of
the person reached so far, starting at the passage titled for X; the person read leads to the held
passage titled by that name (:func:`hoprag.pipeline.role_facts.named_passage`), where the next
relation is read. The answer is the last name read, a span of its passage; without a held passage
for a person on the way, or a relation the passage does not state, there is no answer and the
caller falls back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.pipeline.role_facts import RoleFact, named_passage, read_role
from hoprag.records import Evidence

__all__ = ["KIN_PATHS", "kin_answer"]

# a kinship term and the relations it chains, read from the person named outward
KIN_PATHS: dict[str, tuple[str, ...]] = {
    "paternal grandfather": ("father", "father"),
    "paternal grandmother": ("father", "mother"),
    "maternal grandfather": ("mother", "father"),
    "maternal grandmother": ("mother", "mother"),
    "father-in-law": ("spouse", "father"),
    "mother-in-law": ("spouse", "mother"),
}
_KIN = "|".join(re.escape(k) for k in KIN_PATHS)
_ASK = re.compile(
    rf"^who (?:is|was) (?:the )?(?P<kin>{_KIN}) of (?P<name>.+?)\s*\??$|^who (?:is|was) (?P<name2>.+?)'s (?P<kin2>{_KIN})\s*\??$",
    re.I,
)


def kin_answer(question: str, evidence: Sequence[Evidence]) -> RoleFact | None:
    """The person a two-relation kinship question asks for, read along the held passages, or ``None``."""
    match = _ASK.match(question.strip())
    if match is None:
        return None
    kin = (match.group("kin") or match.group("kin2")).lower()
    passage = named_passage(match.group("name") or match.group("name2"), evidence)
    path = KIN_PATHS[kin]
    for step, role in enumerate(path):
        if passage is None:
            return None
        read = read_role(passage.text, role)
        if read is None:
            return None
        if step == len(path) - 1:
            return RoleFact(value=read[0], role=kin, passage=passage, offset=read[1])
        following = named_passage(read[0], evidence)
        passage = following if following is not None and following.chunk_id != passage.chunk_id else None
    return None
