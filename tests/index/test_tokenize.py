"""The lean query tokeniser must give exactly what bm25s.tokenize gives the corpus."""

from __future__ import annotations

import bm25s
import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.errors import ConfigError
from hoprag.index.tokenize import Tokenizer

pytestmark = pytest.mark.unit


def test_query_tokens() -> None:
    tok = Tokenizer()
    # lowercased, stopwords ("the", "of", "for") dropped, one-letter tokens dropped, stemmed
    assert tok.query("The retention of Pilot data for 7 years, A-grade") == ["retent", "pilot", "data", "year", "grade"]
    assert tok.query("the of and") == []
    assert tok.query("") == []


def test_switches() -> None:
    assert Tokenizer(stemmer=None).query("The policies") == ["policies"]
    assert Tokenizer(stopwords=None).query("The policies") == ["the", "polici"]
    with pytest.raises(ConfigError, match="unknown stemmer language 'klingon'"):
        Tokenizer(stemmer="klingon")
    with pytest.raises(ConfigError, match="unknown stopwords language"):
        Tokenizer(stopwords="klingon")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["the", "and", "running", "İstanbul", "Policies", "ß", "1_2", "-", ". ", "\n", " "])
        | st.text(alphabet=st.sampled_from(list("aeiouRSTLNéßİ1_-.' ")), max_size=8),
        max_size=12,
    ).map(" ".join)
)
def test_same_tokens_as_bm25s(text: str) -> None:
    stemmer = Stemmer.Stemmer("english")
    expected = bm25s.tokenize(text, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)[0]
    assert Tokenizer().query(text) == expected
