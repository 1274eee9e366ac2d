"""Chunking with exact character offsets: sentence-packed (``fixed``) or paragraph-true (``paragraph``).

A document is cut into *sentences*: at ``.``/``!``/``?`` (optionally followed by closing quotes or
brackets) followed by whitespace and then a capital letter, a digit or an opening quote, and at
blank lines.

``fixed`` packs sentences greedily into chunks of at most ``max_chars`` characters; each new chunk
starts with whole trailing sentences of the previous chunk (up to ``overlap_chars``). A sentence
longer than ``max_chars`` is the only thing ever split inside, at whitespace.

``paragraph`` cuts the document at blank lines into paragraphs and keeps each one whole when it
holds at most ``max_tokens`` tokens (:func:`token_count`: words and punctuation marks). A longer
paragraph is split at sentence boundaries into the fewest chunks that fit the budget, of near-equal
size, so no chunk is a stub; a paragraph of fewer than ``min_tokens`` tokens (a heading such as
"Retention schedule:") joins the paragraph after it, so it is never a chunk of its own. Every chunk
is indexed with its document's title (:func:`hoprag.index.bm25.index_text`), so a sentence cut from
the start of its paragraph keeps the entity the paragraph is about.

Invariant: ``chunk.text == doc.text[chunk.start:chunk.end]`` for every chunk; chunk offsets start
and end on non-whitespace. Ids are ``f"{doc.id}#{index}"``, so the same text and config always give
the same ids.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hoprag.records import Chunk, Document

__all__ = ["CHUNKING_MODES", "ChunkConfig", "chunk_document", "chunk_documents", "paragraph_spans", "sentence_spans", "token_count"]

#: the chunker modes of :class:`ChunkConfig` (``hoprag index --chunking``)
CHUNKING_MODES = ("paragraph", "fixed")

# A sentence end: terminal punctuation, optional closers, then the whitespace that separates it.
_SENTENCE_END = re.compile(r"[.!?][\"'\)\]\u201d\u2019\u00bb]*(\s+)")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_OPENERS = "\"'(\u201c\u2018\u00ab["
# Titles that are followed by a capitalised name, never by a new sentence.
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "gen", "col", "capt", "lt", "sgt", "rev",
     "hon", "vs"}
)


class ChunkConfig(BaseModel):
    """How documents are cut into chunks (``fixed``: sizes in characters; ``paragraph``: in tokens)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["paragraph", "fixed"] = Field("fixed", description="paragraph-true or sentence-packed chunks")
    max_tokens: int = Field(400, ge=8, description="paragraph mode: largest paragraph kept whole")
    min_tokens: int = Field(8, ge=0, description="paragraph mode: a shorter paragraph joins the next one")

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
        if "min_tokens" not in self.model_fields_set and self.min_tokens >= self.max_tokens:
            object.__setattr__(self, "min_tokens", self.max_tokens // 4)
        if self.min_tokens >= self.max_tokens:
            raise ValueError(f"min_tokens ({self.min_tokens}) must be smaller than max_tokens ({self.max_tokens})")
        return self


def token_count(text: str) -> int:
    """Words and punctuation marks: a tokenizer-independent count."""
    return len(_TOKEN.findall(text))


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


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each blank-line-separated paragraph, trimmed of surrounding whitespace."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BLANK_LINE.finditer(text):
        span = _trim(text, start, match.start())
        if span is not None:
            spans.append(span)
        start = match.end()
    span = _trim(text, start, len(text))
    if span is not None:
        spans.append(span)
    return spans


def _token_ends(text: str, start: int, end: int) -> list[int]:
    """End offset of every token in ``text[start:end]``, in order."""
    return [m.end() for m in _TOKEN.finditer(text, start, end)]


def _split_tokens(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """Cut one sentence of more than ``max_tokens`` tokens after every ``max_tokens`` tokens."""
    pieces: list[tuple[int, int]] = []
    ends = _token_ends(text, start, end)
    for i in range(max_tokens - 1, len(ends) - 1, max_tokens):
        span = _trim(text, start, ends[i])
        if span is not None:
            pieces.append(span)
        start = ends[i]
    span = _trim(text, start, end)
    if span is not None:
        pieces.append(span)
    return pieces


def _sentence_pieces(text: str, start: int, end: int, config: ChunkConfig) -> list[tuple[int, int]]:
    """A paragraph over the budget as whole-sentence pieces: the fewest that fit, of near-equal size."""
    units: list[tuple[int, int, int]] = []
    for a, b in sentence_spans(text[start:end]):
        a, b = a + start, b + start
        n = token_count(text[a:b])
        if n > config.max_tokens:
            units.extend((p, q, token_count(text[p:q])) for p, q in _split_tokens(text, a, b, config.max_tokens))
        else:
            units.append((a, b, n))
    return _balanced(units, config.max_tokens)


def _balanced(units: list[tuple[int, int, int]], budget: int) -> list[tuple[int, int]]:
    """Consecutive ``(start, end, tokens)`` units packed into ranges of at most ``budget`` tokens.

    Each range aims at an equal share of what is left, split into the fewest ranges the budget
    allows: a unit joins the range while that brings the range nearer its share (never past the
    budget), so the last range is no stub."""
    ranges: list[tuple[int, int]] = []
    left = sum(n for _, _, n in units)
    target = _share(left, budget)
    first, size = 0, 0
    for i, (_, _, n) in enumerate(units):
        if i > first and (size + n > budget or size + n - target > target - size):
            ranges.append((units[first][0], units[i - 1][1]))
            left -= size
            target = _share(left, budget)
            first, size = i, 0
        size += n
    if units:
        ranges.append((units[first][0], units[-1][1]))
    return ranges


def _share(tokens: int, budget: int) -> int:
    return math.ceil(tokens / max(1, math.ceil(tokens / budget)))


def _paragraph_ranges(text: str, config: ChunkConfig) -> list[tuple[int, int]]:
    """Whole paragraphs packed up to the budget; a paragraph over it is cut into sentence pieces."""
    # a heading-sized paragraph is glued to the one after it (into its first piece, when that one
    # is split), so no chunk ends on a heading
    atoms: list[tuple[int, int, int]] = []
    glue: int | None = None
    for start, end in paragraph_spans(text):
        start = start if glue is None else glue
        n = token_count(text[start:end])
        glue = start if n < config.min_tokens else None
        if glue is None:
            atoms.append((start, end, n))
    if glue is not None:
        atoms.append((glue, len(text.rstrip()), token_count(text[glue:])))
    ranges: list[tuple[int, int]] = []
    run: list[tuple[int, int, int]] = []  # consecutive paragraphs that fit the budget
    for start, end, n in atoms:
        if n <= config.max_tokens:
            run.append((start, end, n))
            continue
        ranges.extend(_balanced(run, config.max_tokens))
        run = []
        ranges.extend(_sentence_pieces(text, start, end, config))
    ranges.extend(_balanced(run, config.max_tokens))
    return ranges


def chunk_document(doc: Document, config: ChunkConfig | None = None) -> list[Chunk]:
    """Cut one document into chunks; a whitespace-only document gives no chunks."""
    config = config or ChunkConfig()
    text = doc.text
    if config.mode == "paragraph":
        ranges = _paragraph_ranges(text, config)
    elif len(text) <= config.max_chars:
        # every sentence fits and _pack keeps them all in one chunk: the text, trimmed of whitespace
        # (most passages of a large corpus; the sentence scan was a sixth of a build's time)
        whole = _trim(text, 0, len(text))
        ranges = [whole] if whole is not None else []
    else:
        units = _units(text, config.max_chars)
        ranges = [(units[first][0], units[last][1]) for first, last in _pack(units, config)]
    return [
        Chunk(id=f"{doc.id}#{index}", doc_id=doc.id, text=text[start:end], start=start, end=end, index=index)
        for index, (start, end) in enumerate(ranges)
    ]


def chunk_documents(docs: Iterable[Document], config: ChunkConfig | None = None) -> list[Chunk]:
    """Chunk every document, in document order."""
    config = config or ChunkConfig()
    out: list[Chunk] = []
    for doc in docs:
        out.extend(chunk_document(doc, config))
    return out
