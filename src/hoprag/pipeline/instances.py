""""What is X an instance of?": the noun a sentence that opens with X defines it with.

"What is the Edsa Shangri-La an instance of in …?" is answered by "Edsa Shangri-La, Manila is a
5-star luxury hotel located at Ortigas Center …": the last word of the definition's noun group,
"hotel" (:func:`hoprag.pipeline.answer_candidates.definition`). The sentence opens with the name the
question asks about, maybe qualified ("Edsa Shangri-La, Manila"). The answer is a span of
that sentence. This reads the final answer only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.pipeline.answer_candidates import definition
from hoprag.pipeline.text import STOPWORDS
from hoprag.records import Evidence

__all__ = ["QUALIFIER_CHARS", "SENTENCES_READ", "instance_of"]

SENTENCES_READ = 6  # the best sentences read for the definition
QUALIFIER_CHARS = 40  # what may follow the asked name before "is" (", Manila"; an aside is skipped by definition)
_ASKS = re.compile(r"^what (?:is|was|are|were) (?:the |an? )?(?P<name>.+?) an? (?:instance|type|kind) of\b", re.I)


def instance_of(question: str, scored: Sequence[tuple[float, int, Evidence, str]]) -> tuple[str, Evidence, str] | None:
    """``(the defining noun, its passage, its sentence)`` from the best ``scored`` sentences, or None
    when the question asks no instance or no read sentence defines the name it asks about."""
    asked = _ASKS.match(question.strip())
    if asked is None:
        return None
    name = asked.group("name").strip()
    for _, _, item, sentence in scored[:SENTENCES_READ]:
        # the name as asked, or with its qualifier ("Edsa Shangri-La, Manila is a …")
        subject = re.split(r"\s+(?:is|was|are|were)\s", sentence, maxsplit=1)[0]
        if not sentence.startswith(name) or len(subject) > len(name) + QUALIFIER_CHARS:
            continue
        group = definition(subject, sentence)
        words = [w for w in re.findall(r"[A-Za-z][\w-]*", group or "") if w.lower() not in STOPWORDS]
        if words:
            return words[-1], item, sentence
    return None
