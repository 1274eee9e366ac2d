"""Sentence-aware chunking with exact character offsets.

A document is cut into *sentences*: at ``.``/``!``/``?`` (optionally followed by closing quotes or
brackets) followed by whitespace and then a capital letter, a digit or an opening quote, and at
blank lines. Sentences are packed greedily into chunks of at most ``max_chars`` characters; each
new chunk starts with whole trailing sentences of the previous chunk (up to ``overlap_chars``).
A sentence longer than ``max_chars`` is the only thing ever split inside, at whitespace.

Invariant: ``chunk.text == doc.text[chunk.start:chunk.end]`` for every chunk; chunk offsets start
and end on non-whitespace. Ids are ``f"{doc.id}#{index}"``, so the same text and config always give
the same ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hoprag.records import Chunk, Document

__all__ = ["ChunkConfig", "chunk_document", "chunk_documents", "sentence_spans"]

# A sentence end: terminal punctuation, optional closers, then the whitespace that separates it.
_SENTENCE_END = re.compile(r"[.!?][\"'\)\]\u201d\u2019\u00bb]*(\s+)")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_OPENERS = "\"'(\u201c\u2018\u00ab["
# Titles that are followed by a capitalised name, never by a new sentence.
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "gen", "col", "capt", "lt", "sgt", "rev",
     "hon", "vs"}
)


class ChunkConfig(BaseModel):
    """How documents are cut into chunks (all sizes in characters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_chars: int = Field(1200, ge=20, description="largest chunk")
    overlap_chars: int = Field(150, ge=0, description="whole trailing sentences repeated, at most this long")
    min_chars: int = Field(
        200,
        ge=0,
        description="a final chunk shorter than this is extended backwards by whole sentences",
    )

    @model_validator(mode="after")
    def _sizes_fit(self) -> ChunkConfig:
        # defaults that do not fit a small max_chars shrink with it; explicit values must fit
        if "overlap_chars" not in self.model_fields_set and self.overlap_chars >= self.max_chars:
            object.__setattr__(self, "overlap_chars", self.max_chars // 8)
        if "min_chars" not in self.model_fields_set and self.min_chars > self.max_chars:
            object.__setattr__(self, "min_chars", self.max_chars // 4)
        if self.overlap_chars >= self.max_chars:
            raise ValueError(
                f"overlap_chars ({self.overlap_chars}) must be smaller than max_chars ({self.max_chars})"
            )
        if self.min_chars > self.max_chars:
            raise ValueError(f"min_chars ({self.min_chars}) must not exceed max_chars ({self.max_chars})")
        return self


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence, trimmed of surrounding whitespace, in order."""
    cuts: set[int] = set()
    for match in _SENTENCE_END.finditer(text):
        after = match.end(1)
        if after >= len(text):
            continue
        nxt = text[after]
        if not (nxt.isupper() or nxt.isdigit() or nxt in _OPENERS):
            continue
        if _is_abbreviation(text, match.start()):
            continue
        cuts.add(match.start(1))
    for match in _BLANK_LINE.finditer(text):
        cuts.add(match.start())
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in sorted(cuts) + [len(text)]:
        span = _trim(text, start, cut)
        if span is not None:
            spans.append(span)
        start = cut
    return spans


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the period at ``dot`` closes a title (``Dr.``) or an initial (``J.``)."""
    if text[dot] != ".":
        return False
    begin = dot
    while begin > 0 and text[begin - 1].isalpha():
        begin -= 1
    word = text[begin:dot]
    before = text[begin - 1] if begin > 0 else " "
    if len(word) == 1 and word.isupper():
        # an initial ("J. R. R. Tolkien") or a dotted acronym ("U.S. Army")
        return before.isspace() or before in "(\"'."
    return (before.isspace() or before in "(\"'") and word.lower() in _ABBREVIATIONS


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _split_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut one over-long sentence at whitespace into pieces of at most ``max_chars``."""
    pieces: list[tuple[int, int]] = []
    while end - start > max_chars:
        limit = start + max_chars
        cut = limit
        # the last whitespace that keeps the piece within max_chars
        while cut > start and not text[cut].isspace():
            cut -= 1
        if cut == start:
            cut = limit  # one unbroken token longer than max_chars: hard cut
        span = _trim(text, start, cut)
        if span is not None:
            pieces.append(span)
        nxt = _trim(text, cut, end)
        if nxt is None:
            return pieces
        start = nxt[0]
    pieces.append((start, end))
    return pieces


def _units(text: str, max_chars: int) -> list[tuple[int, int]]:
    units: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        if end - start > max_chars:
            units.extend(_split_long(text, start, end, max_chars))
        else:
            units.append((start, end))
    return units


def _pack(units: list[tuple[int, int]], config: ChunkConfig) -> list[tuple[int, int]]:
    """Greedy packing into ``(first_unit, last_unit)`` index ranges (inclusive)."""
    ranges: list[tuple[int, int]] = []
    first = 0
    n = len(units)
    while first < n:
        last = first
        while last + 1 < n and units[last + 1][1] - units[first][0] <= config.max_chars:
            last += 1
        ranges.append((first, last))
        if last == n - 1:
            break
        nxt = last + 1
        # overlap: whole trailing sentences of this chunk, newer than its first sentence
        start = nxt
        while (
            start - 1 > first
            and units[last][1] - units[start - 1][0] <= config.overlap_chars
            and units[nxt][1] - units[start - 1][0] <= config.max_chars
        ):
            start -= 1
        first = start
    if len(ranges) > 1 and config.min_chars:
        first, last = ranges[-1]
        prev_first = ranges[-2][0]
        while (
            units[last][1] - units[first][0] < config.min_chars
            and first - 1 > prev_first
            and units[last][1] - units[first - 1][0] <= config.max_chars
        ):
            first -= 1
        ranges[-1] = (first, last)
    return ranges


def chunk_document(doc: Document, config: ChunkConfig | None = None) -> list[Chunk]:
    """Cut one document into chunks; a whitespace-only document gives no chunks."""
    config = config or ChunkConfig()
    text = doc.text
    units = _units(text, config.max_chars)
    chunks: list[Chunk] = []
    for index, (first, last) in enumerate(_pack(units, config)):
        start, end = units[first][0], units[last][1]
        chunks.append(Chunk(id=f"{doc.id}#{index}", doc_id=doc.id, text=text[start:end],
                            start=start, end=end, index=index))
    return chunks


def chunk_documents(docs: Iterable[Document], config: ChunkConfig | None = None) -> list[Chunk]:
    """Chunk every document, in document order."""
    config = config or ChunkConfig()
    out: list[Chunk] = []
    for doc in docs:
        out.extend(chunk_document(doc, config))
    return out
