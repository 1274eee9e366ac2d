"""The lean query tokeniser must give exactly what bm25s.tokenize gives the corpus."""

from __future__ import annotations

import bm25s
import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.errors import ConfigError
from hoprag.index.tokenize import Tokenizer
from hoprag.ingest.text import fold_accents

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


ALPHABET = list("aeiouRSTLNéßİ1_-.' ") + ["ø", "Ł", "æ", "o\u0308", "ﬁ"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["the", "and", "running", "İstanbul", "Policies", "ß", "1_2", "-", ". ", "\n", " ", "Aschenbrödel"])
        | st.lists(st.sampled_from(ALPHABET), max_size=8).map("".join),
        max_size=12,
    ).map(" ".join)
)
def test_same_tokens_as_bm25s(text: str) -> None:
    """Query and corpus tokens are bm25s's: of the folded text when folding, of the text as it is otherwise."""
    stemmer = Stemmer.Stemmer("english")

    def bm25s_tokens(t: str) -> list[str]:
        return bm25s.tokenize(t, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)[0]

    assert Tokenizer().query(text) == bm25s_tokens(fold_accents(text))
    assert Tokenizer(fold_accents=False).query(text) == bm25s_tokens(text)
    for tokenizer in (Tokenizer(), Tokenizer(fold_accents=False)):
        corpus = tokenizer.corpus([text])
        inverse = {i: t for t, i in corpus.vocab.items()}
        assert [inverse[i] for i in corpus.ids[0]] == tokenizer.query(text)


def test_folding_puts_query_and_corpus_in_base_letters() -> None:
    assert Tokenizer().query("Aschenbrödel by Strauß") == Tokenizer().query("Aschenbrodel by Strauss") == ["aschenbrodel", "strauss"]
    assert Tokenizer(fold_accents=False).query("Aschenbrödel") == ["aschenbrödel"]
    # bm25s lowercases 'İ' to 'i' + a combining dot, which splits the word; folding keeps it whole
    assert Tokenizer().query("İstanbul") == ["istanbul"]
    assert Tokenizer(fold_accents=False).query("İstanbul") == ["stanbul"]


def test_stopwords_are_folded_with_the_text() -> None:
    # bm25s's German list spells 'für' and 'über': folded, they still drop 'fur' and 'uber'
    assert Tokenizer(stemmer=None, stopwords="de").query("Musik für Kinder über Lieder") == ["musik", "kinder", "lieder"]
    assert Tokenizer(stemmer=None, stopwords="de", fold_accents=False).query("Musik fur Kinder") == ["musik", "fur", "kinder"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET + ["a", "ab", "_", "\u0301", "١٢", "日本", "\t"]), max_size=40).map("".join))
def test_build_word_pattern_finds_the_token_pattern_words(text: str) -> None:
    # the index build splits with the faster pattern; it must find exactly what TOKEN_PATTERN finds
    import re

    from hoprag.index.bm25_build import WORD_RUNS
    from hoprag.index.tokenize import TOKEN_PATTERN

    assert re.findall(WORD_RUNS, text) == re.findall(TOKEN_PATTERN, text)
    assert re.findall(WORD_RUNS, text.lower()) == re.findall(TOKEN_PATTERN, text.lower())
