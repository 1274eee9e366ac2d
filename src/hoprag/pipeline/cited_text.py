"""An answer written as plain text citing ``[E1]``, ``[E2]``: how a model's answer is streamed.

A JSON answer can only be read once it is whole, so a synthesiser that streams its answer asks the
model for text instead (:func:`cited_prompt`): one or two short sentences, each followed by the
markers of the passages that support it, or ``INSUFFICIENT``. :func:`parse_cited_text` turns the
finished text into an :class:`~hoprag.records.Answer`: one claim per sentence, citing the passages
its markers name; a marker naming no passage shown is rejected and recorded, as the JSON
synthesiser does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.records import Answer, Citation, Claim, Evidence

__all__ = ["CITED_SYSTEM", "cited_prompt", "parse_cited_text"]

#: characters of each passage shown (fewer when the prompt is fitted to a small context)
CITED_WIDTH = 600
INSUFFICIENT = "INSUFFICIENT"
CITED_SYSTEM = (
    "Answer the question from the passages only, in one or two short sentences. After each "
    "statement cite the passages that support it as [E1], [E2]. The answer usually joins facts "
    f"from several passages. If the passages do not answer it, reply {INSUFFICIENT} and nothing else."
)
_MARKER = re.compile(r"\[(E\d+(?:\s*,\s*E\d+)*)\]")


def cited_prompt(question: str, evidence: Sequence[Evidence], width: int = CITED_WIDTH) -> str:
    """The user message: the question, then the passages numbered as the markers cite them."""
    width = min(width, CITED_WIDTH)
    passages = "\n\n".join(f"[E{i}] {e.title}\n{' '.join(e.text.split())[:width]}"
                           for i, e in enumerate(evidence, start=1))
    return f"Question: {question}\n\nPassages:\n{passages}"


def parse_cited_text(text: str, evidence: Sequence[Evidence]) -> Answer:
    """Claims (one per sentence) citing the ``[E<n>]`` markers they carry; unknown markers are rejected."""
    clean = text.strip()
    if not clean or clean.upper().startswith(INSUFFICIENT):
        return Answer(text="", abstained=True)
    rejected: list[str] = []
    claims: list[Claim] = []
    for sentence in re.split(r"(?<=[.!?])\s+", clean):
        cites: list[Citation] = []
        for group in _MARKER.findall(sentence):
            for ref in (r.strip() for r in group.split(",")):
                n = int(ref[1:])
                if 1 <= n <= len(evidence):
                    item = evidence[n - 1]
                    cite = Citation(chunk_id=item.chunk_id, doc_id=item.doc_id, hop=item.hop)
                    if cite not in cites:
                        cites.append(cite)
                else:
                    rejected.append(ref)
        plain = " ".join(_MARKER.sub("", sentence).split())
        if plain:
            claims.append(Claim(text=plain, citations=tuple(cites)))
    answer_text = " ".join(_MARKER.sub("", clean).split())
    return Answer(text=answer_text, claims=tuple(claims), abstained=not answer_text, rejected_citations=tuple(rejected))
