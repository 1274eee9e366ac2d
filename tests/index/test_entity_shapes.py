"""The surface-shape regexes against their readable reference forms: the same spans, kinds and offsets.

``hoprag.index.entities`` writes each shape to open with a character class (so the regex engine skips
to candidate characters); the plain forms below are the definitions, and every span the fast forms
find must be the one the plain forms find, on real passages and on generated text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.datasets.importers import import_dataset
from hoprag.index.entities import _DIGITS, spans_by_kind, surface_spans

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data"

_WORD = r"(?:[A-Z]\.(?:[ \t]?[A-Z]\.)*|[A-Z\u00C0-\u00DE][\w\u00C0-\u024F'\-]*)"
CAPITALISED = re.compile(
    r"(?<![\w'])(?:" + _WORD + r"|\d{1,2}(?:st|nd|rd|th))"
    r"(?:[ \t]+(?:(?:of|the|de|la|le|von|van|der|du|da|di|del|&|for|on|y)[ \t]+)*"
    r"(?:" + _WORD + r"|\d{1,2}(?:st|nd|rd|th)))*"
)
QUOTED = re.compile(r"[\"\u201c]([^\"\u201d]*[^\W\d_][^\"\u201d]*)[\"\u201d]")
IDENTIFIER = re.compile(r"\b[A-Z]{1,6}-?\d{1,6}[A-Z]?\b|\b[A-Z]+-[A-Z0-9]+(?:-[A-Z0-9]+)*\b")
DATE = re.compile(
    r"\b(?:\d{1,2}\s+)?(?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December)(?:\s+\d{1,2},?)?\s+\d{3,4}\b|\b1[0-9]{3}\b|\b20[0-9]{2}\b"
)


def reference_spans(text: str) -> list[tuple[str, str, int]]:
    """The spans by the plain patterns, in surface_spans's order (quoted, identifier, date, entity)."""
    found = [(m.group(1), "quoted", m.start()) for m in QUOTED.finditer(text)]
    found += [(m.group(0), "identifier", m.start()) for m in IDENTIFIER.finditer(text)]
    found += [(m.group(0), "date", m.start()) for m in DATE.finditer(text)]
    found += [(m.group(0), "entity", m.start()) for m in CAPITALISED.finditer(text)]
    return found


def _by_kind(spans: list[tuple[str, str, int]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for raw, kind, _ in spans:
        out.setdefault(kind, []).append(raw)
    return out


def _check(text: str) -> None:
    expected = reference_spans(text)
    assert surface_spans(text) == expected
    assert {k: v for k, v in spans_by_kind(text) if v} == _by_kind(expected)


def test_shapes_match_the_reference_on_real_passages() -> None:
    documents = [
        *import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"]).documents,
        *import_dataset("musique", [DATA / "musique_dev_slice.jsonl"]).documents,
        *import_dataset("2wiki", [DATA / "2wiki_dev_slice.json"]).documents,
    ]
    assert len(documents) > 50
    for doc in documents:
        _check(doc.text)
        _check(doc.title)


@pytest.mark.parametrize("text", [
    'Rush released "Counterparts" on 19 October 1993; "1993" alone is no title.',
    'An unclosed "quote runs to the end, and \u201cKaty Lied\u201d closes.',
    "KP-214, K-9 and F-16A met X-MEN-2 at AB12 but not at aKP-214 or KP-214x.",
    "March 1990, 5 March 1990, March 5, 1990, in May 2003, 2099, 1066 and 20210.",
    "J. R. R. Tolkien met the 3rd Duke of Wellington and Pál Gábor at the Hall of Fame.",
    "O'Brien's band, 'Rush' and l'Orchestre de la Suisse Romande; x1st and 21st Century Fox.",
    "\u00c9cole Normale Sup\u00e9rieure \u00d7 \u00deingvellir",
    # digits beyond ASCII open ordinals and dates like ASCII ones; other characters of the digit
    # table (an emoji, a CJK numeral) open nothing
    "\u0661\u0662st Street, 3 March \u0661\u0669\u0669\u0660, \uff11\uff19\uff19\uff10, \U0001d7d9\U0001d7e0nd \U0001f600 \u4e09 KP-\u0662",
])
def test_shapes_match_the_reference_on_edge_cases(text: str) -> None:
    _check(text)


_PIECES = st.sampled_from([
    "A", "B", "J", "M", "O", "N", "D", "S", "F", "KP", "X", "a", "b", "x", "of", "the", "de", "y", "&",
    "0", "1", "2", "5", "19", "20", "1990", "2003", "st", "nd", "th", "January", "May", "March", "June",
    "Hall", "Fame", "\u00c9", "\u00e9", "\u00d7", "'", "\u2019s", "'s", "-", ".", ",", ";", '"', "\u201c",
    "\u201d", " ", " ", "\t", "\n", "(", ")", "_", "\u0661", "\uff19", "\U0001d7d9", "\U0001f600", "\u4e09",
])


def test_the_digit_table_holds_every_digit() -> None:
    # the shapes' opening classes hold ``_DIGITS`` in place of ``\d`` and check ``\d`` behind it: a
    # superset is exact, a digit missing from it would be missed
    table = re.compile("[" + _DIGITS + "]")
    missing = [hex(c) for c in range(0x110000) if re.fullmatch(r"\d", chr(c)) and not table.fullmatch(chr(c))]
    assert not missing, f"add these decimal digits to entities._DIGITS: {missing}"


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_shapes_match_the_reference_on_generated_text(text: str) -> None:
    _check(text)
