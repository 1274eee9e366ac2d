"""Accent folding: base letters for what NFKD decomposes and for the letters it leaves whole."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.ingest.text import SPELLED, fold, fold_accents, tokens

pytestmark = pytest.mark.unit


def _whole_text(text: str) -> str:
    """The definition, over the whole text at once: NFKD, combining marks dropped, then each letter
    NFKD leaves whole spelled in base letters (the listed ones, or the base letter of its name)."""
    kept = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    named = {"ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ħ": "h", "ƒ": "f"}
    return "".join(SPELLED.get(c) or named.get(c) or c for c in kept)


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Aschenbrödel", "Aschenbrodel"),  # NFKD: o + combining diaeresis
        ("Pál Gábor", "Pal Gabor"),
        ("Hàn Quốc", "Han Quoc"),  # two marks on one letter
        ("Aschenbro\u0308del", "Aschenbrodel"),  # already decomposed input
        ("ﬁnal", "final"),  # a compatibility ligature
        ("İstanbul", "Istanbul"),
        # letters NFKD leaves whole
        ("Straße", "Strasse"), ("GROẞ", "GROSS"), ("Æsir", "AEsir"), ("Cæsar", "Caesar"), ("Œuvre", "OEuvre"),
        ("Søren", "Soren"), ("Øresund", "Oresund"), ("Łódź", "Lodz"), ("Đorđe", "Dorde"), ("Guðrún", "Gudrun"),
        ("Þór", "THor"), ("Ħal Saflieni", "Hal Saflieni"), ("Kırıkkale", "Kirikkale"), ("ƒ", "f"),
        ("Ǿ", "O"),  # O with stroke and acute: NFKD takes the acute, the name gives the O
        # other scripts lose their marks only
        ("Ωμέγα", "Ωμεγα"), ("Ёлка", "Елка"), ("東京", "東京"),
        ("", ""),
    ],
)
def test_base_letters(text: str, folded: str) -> None:
    assert fold_accents(text) == folded
    assert fold(text) == folded.lower()


def test_ascii_text_is_returned_as_it_is() -> None:
    text = "Who composed Aschenbrodel?"
    assert fold_accents(text) is text


def test_tokens_fold_the_letters_nfkd_leaves_whole() -> None:
    assert tokens("Søren Kierkegaard, Straße") == ["soren", "kierkegaard", "strasse"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aoEIß ,.-'\n") + list("öéÅçñøØłŁđæœþðıİ\u0301\u0308ﬁǾΩέ東"))))
def test_run_by_run_is_the_whole_text_definition_and_idempotent(text: str) -> None:
    folded = fold_accents(text)
    assert folded == _whole_text(text)
    assert fold_accents(folded) == folded
