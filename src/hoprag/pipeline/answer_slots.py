"""The slot a question's wh-word holds in place: the answer follows the words that lead to it.

A question that keeps its wh-word where the answer stands ("… plays for a team in the autonomous
community of what?", "… won the award for his role in which play?", "… is based where?") says the
words its answer follows: the sentence that states the fact repeats them ("… in the autonomous
community of Murcia.", "for his role in "Cymbeline"", "based in Columbus, Ohio"). A candidate that
begins within ``SLOT_WINDOW`` words after the last of those words fills the slot. A question that
opens with its wh-word ("What county is …?") holds no such slot. This reads the final answer only.
"""

from __future__ import annotations

import re

from hoprag.pipeline.answer_candidates import stem
from hoprag.pipeline.text import STOPWORDS, tokens

__all__ = ["SLOT_TAIL", "SLOT_WINDOW", "slot_bonus", "slot_words"]

SLOT_WINDOW = 3  # words between the slot's last word and the candidate (articles, "the sitcom")
SLOT_TAIL = 4  # an in-place wh-word is among the question's last words ("… in what for seven years?")
_WH = re.compile(r"\b(?:what|which|whom|where|who)\b", re.I)


def slot_words(question: str) -> str | None:
    """The content word (stemmed) right before a wh-word that stands in place, or None when the
    question opens with its wh-word or holds none after its first words."""
    words = tokens(question)
    spots = [i for i, w in enumerate(words) if _WH.fullmatch(w)]
    if not spots or spots[-1] < 2 or len(words) - spots[-1] > SLOT_TAIL:
        # "What county …", "In which country …": a fronted wh-word holds no slot; "the player who
        # has won …": a relative pronoun far from the question's end asks nothing
        return None
    before = [w for w in words[max(0, spots[-1] - 3): spots[-1]] if w not in STOPWORDS]
    return stem(before[-1]) if before else None


def slot_bonus(slot: str | None, value: str, sentence: str) -> float:
    """1 when ``value`` begins within ``SLOT_WINDOW`` words after the slot word in ``sentence``."""
    if not slot:
        return 0.0
    words, target = tokens(sentence), tokens(value)
    if not target:
        return 0.0
    starts = [i for i in range(len(words) - len(target) + 1) if words[i : i + len(target)] == target]
    slots = [i for i, w in enumerate(words) if stem(w) == slot]
    return 1.0 if any(0 < start - at <= SLOT_WINDOW + 1 for start in starts for at in slots) else 0.0
