"""Value bridges: the value a plan's lookup found, read from its passages by the relation it names.

In "the city where the performers of Brother were formed", the lookup *performers of Brother* is
answered by a value inside a passage ("'Brother' is a song by the American rock band **Pearl Jam**"),
rarely by a title. Each candidate is a typed span (:mod:`hoprag.pipeline.answer_types`) of a
sentence of the lookup's passages, scored

    score(v) = Σ_passages  weight(p) · max_sentences  fit(v) · cue(s, v) · position(s)

- ``weight(p)`` is 3 for a passage whose title is the lookup's anchor (``Brother (Pearl Jam song)``
  for *Brother*: the article about the thing asked), 1.5 for one whose text names the anchor, 0.5
  otherwise, times ``0.5 + relevance(p)`` (how well it holds the lookup's words);
- ``fit`` is how well the span's shape fits the kind the relation asks for (a *performer* is a person
  or a group, a *country* a place);
- ``cue`` is 1.5 when a word of the relation (its stem: *performed* for *performers*, *born* for a
  birthplace) stands within five words of the span, 1 otherwise;
- ``position`` favours a passage's first sentence (1.0, then 0.8).

Summing over passages rewards agreement: a value two passages state outranks one that one passage
states. A value the question already names, the anchor itself and a passage's own subject are not
values. The best ``beam`` candidates whose score is at least ``BEAM_SHARE`` of the best are followed,
and every candidate with its score goes into the trace (the step's ``bridge["candidates"]``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from hoprag.index.entities import title_key
from hoprag.pipeline.answer_types import relation_kind, typed_spans
from hoprag.pipeline.cast import asked_cast, read_cast
from hoprag.pipeline.lookup_roles import asked_place_noun, lookup_role, place_noun_fit, role_value
from hoprag.pipeline.text import STOPWORDS, fold, sentences_with_offsets, tokens
from hoprag.records import Evidence

__all__ = ["BEAM", "BEAM_SHARE", "CANDIDATES_KEPT", "FoundValue", "beam", "found_values", "named_anchor"]

BEAM = 3
BEAM_SHARE = 0.3
CANDIDATES_KEPT = 8  # candidates recorded in the trace
ROLE_SCORE = 3.0  # a value read by the lookup's role in its anchor's passage (twice the best span's)
_TITLE_WEIGHT, _NAMED_WEIGHT, _OTHER_WEIGHT = 3.0, 1.5, 0.5
_CUE_WINDOW = 5
# words that state a relation without naming it ("a song *by* X", "*born in* X")
_CUE_WORDS = {"person": ("by",), "place": ("in", "born", "located"), "organisation": ("by", "for", "at")}
# the tail of a disambiguated title that says what the page is ("Brother (Pearl Jam song)")
_WORK = re.compile(r"^(?P<by>.+?)\s+(?:song|album|single|film|novel|book|play|opera|ballet|EP|band|group|TV series|series)$")
_DEMONYM = re.compile(r"^[A-Z][a-z]+(?:an|ian|ese|ish|ic|i)$")
_NAME_RUN = re.compile(r"(?:[A-Z0-9\u00C0-\u00DE][\w.'\-\u00C0-\u024F]*)(?:\s+(?:(?:of|the|de|von|van|and|&)\s+)?[A-Z0-9\u00C0-\u00DE][\w.'\-\u00C0-\u024F]*)*")
_PARENTHESIS = re.compile(r"\(([^()]+)\)\s*$")


@dataclass(frozen=True)
class FoundValue:
    """One candidate value of a lookup: its text, score, the passages that state it, the best one."""

    value: str
    score: float
    support: int
    chunk_id: str

    def as_json(self) -> list:
        return [self.value, round(self.score, 4), self.support]


def named_anchor(asked: str) -> str:
    """The name a lookup's words hold: ``performers of Brother`` → ``Brother``, ``city where Ada
    Quill was born`` → ``Ada Quill`` (the longest run of capitalised words after the first word)."""
    best = ""
    for match in _NAME_RUN.finditer(asked):
        run = match.group(0).strip()
        if match.start() == 0 and " " not in run:
            continue  # a capitalised first word is the sentence's, not a name ("Who", "What")
        if len(run) > len(best):
            best = run
    return best


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    for suffix in ("ers", "er", "ed", "ing", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=4096)
def _sentence_words(sentence: str) -> tuple[list[str], list[str]]:
    """A sentence's tokens and their stems, read at every hop the passage is held (the lists are
    shared: read them, never change them)."""
    words = tokens(sentence)
    return words, [_stem(w) for w in words]


def _cues(asked: str, anchor: str, kind: str) -> set[str]:
    anchor_words = set(tokens(anchor))
    words = {_stem(w) for w in tokens(asked) if w not in STOPWORDS and w not in anchor_words}
    if {"birthplac", "birth"} & words:
        words.add("born")
    if "death" in words or "di" in words:
        words.add("died")
    return words | set(_CUE_WORDS.get(kind, ()))


def _cue(words: list[str], stems: list[str], value: str, cues: set[str]) -> float:
    target = tokens(value)
    if not target:
        return 1.0
    for i in range(len(words) - len(target) + 1):
        if words[i] == target[0] and words[i : i + len(target)] == target:
            around = stems[max(0, i - _CUE_WINDOW) : i] + stems[i + len(target) : i + len(target) + _CUE_WINDOW]
            return 1.5 if cues.intersection(around) else 1.0
    return 1.0


def _anchor_weight(item: Evidence, anchor: str) -> float:
    if not anchor:
        return _OTHER_WEIGHT
    key, title = title_key(anchor), title_key(item.title)
    if key and (title == key or fold(item.title).startswith(fold(anchor) + " (")):
        return _TITLE_WEIGHT
    return _NAMED_WEIGHT if fold(anchor) in fold(item.text) else _OTHER_WEIGHT


def _demonym_place(demonym: str, titles: Collection[str]) -> str:
    """The place a demonym names, when the corpus has a passage titled so ("Austrian" → "Austria")."""
    stem = demonym.lower()
    for cut, add in ((1, ""), (2, ""), (3, ""), (3, "y"), (2, "a"), (3, "a"), (4, "")):
        guess = stem[:-cut] + add
        if len(guess) > 3 and guess in titles:
            return demonym[: len(demonym) - cut] + add
    return ""


def _title_value(item: Evidence) -> str:
    """``Brother (Pearl Jam song)`` → ``Pearl Jam``: the maker a disambiguated title names."""
    match = _PARENTHESIS.search(item.title)
    work = _WORK.match(match.group(1)) if match else None
    by = work.group("by").strip() if work else ""
    return by if by[:1].isupper() else ""


def found_values(
    asked: str,
    evidence: Sequence[Evidence],
    *,
    question: str = "",
    anchors: Mapping[str, str] | None = None,
    relevance: Callable[[Evidence], float] | None = None,
    titles: Collection[str] = (),
) -> list[FoundValue]:
    """Candidate values of the lookup ``asked`` in its ``evidence``, best first (all of them).

    ``anchors`` maps a step id to the value that step looked up (a dependent lookup's anchor is the
    value found before it); a first lookup's anchor is the name its words end with. ``titles`` (the
    corpus's title keys) turn a demonym into the place it names when a place is asked ("Austrian" →
    *Austria*, when a passage is titled so)."""
    kind = relation_kind(asked)
    noun = asked_place_noun(asked) if kind == "place" else ""
    role = lookup_role(asked)
    cast = asked_cast(asked)  # "actress who played Susan Walker in …": the cast lists say who
    folded_question = fold(question)
    named = named_anchor(asked)
    totals: dict[str, list] = {}  # key -> [value, score, support, best chunk, best passage score]
    for item in evidence:
        anchor = (anchors or {}).get(item.step_id) or named
        about = _anchor_weight(item, anchor)  # how much the passage is about the lookup's anchor
        share = 0.5 + (relevance(item) if relevance is not None else 0.5)
        weight = about * share
        cues = _cues(asked, anchor, kind)
        skip = {title_key(anchor), title_key(item.title)} - {""}
        best: dict[str, tuple[str, float]] = {}
        maker = _title_value(item) if weight and about == _TITLE_WEIGHT else ""
        if maker:
            best[fold(maker)] = (maker, 1.5)
        for position, (start, end) in enumerate(sentences_with_offsets(item.text)):
            sentence = item.text[start:end]
            words, stems = _sentence_words(sentence)
            for span in typed_spans(sentence, kind):
                key = fold(span.value)
                if not key or key in folded_question or title_key(span.value) in skip:
                    continue
                score = span.fit * _cue(words, stems, span.value, cues) * (1.0 if position == 0 else 0.8)
                score *= place_noun_fit(span.value, sentence[: span.offset], noun)
                if _DEMONYM.match(span.value):
                    country = _demonym_place(span.value, titles) if kind == "place" else ""
                    value = span.value  # the demonym itself, unless it names a country the question does not
                    if country and fold(country) not in folded_question:
                        key, value, score = fold(country), country, score * 0.9
                    else:
                        score *= 0.3
                    if key not in best or score > best[key][1]:
                        best[key] = (value, score)
                    continue
                if key not in best or score > best[key][1]:
                    best[key] = (span.value, score)
        read = role_value(item.text, role, noun) if role and about == _TITLE_WEIGHT else None
        if read is not None:  # the fact the lookup asks, where the anchor's own passage states it
            value = read[0]
            if _DEMONYM.match(value) and kind == "place":  # "a Scottish poet": Scotland, when a passage is titled so
                value = _demonym_place(value, titles) or value
            if fold(value) and fold(value) not in folded_question and title_key(value) not in skip:
                _read_as_role(best, value)
        played = read_cast(item.text, cast) if cast is not None else None
        if played is not None and fold(played[0]) not in folded_question:
            _read_as_role(best, played[0])
        # a passage that casts the part asked is about it, whatever its title: weighed as the anchor's
        cast_weight = _TITLE_WEIGHT * share if played else weight
        for key, (value, score) in best.items():
            row = totals.setdefault(key, [value, 0.0, 0, item.chunk_id, 0.0])
            row[1] += (cast_weight if played and key == fold(played[0]) else weight) * score
            row[2] += 1
            if weight * score > row[4]:
                row[3], row[4] = item.chunk_id, weight * score
    ranked = sorted(totals.values(), key=lambda r: (-r[1], r[0]))
    return [FoundValue(value=r[0], score=r[1], support=r[2], chunk_id=r[3]) for r in ranked]


def _read_as_role(best: dict[str, tuple[str, float]], value: str) -> None:
    """A value the passage states in the relation asked scores ``ROLE_SCORE`` at least."""
    key = fold(value)
    best[key] = (value, max(ROLE_SCORE, best.get(key, ("", 0.0))[1]))


def beam(candidates: Sequence[FoundValue], size: int = BEAM) -> list[FoundValue]:
    """The candidates followed: the best ``size`` whose score is at least ``BEAM_SHARE`` of the best."""
    if not candidates:
        return []
    floor = candidates[0].score * BEAM_SHARE
    return [c for c in candidates[:size] if c.score >= floor]
