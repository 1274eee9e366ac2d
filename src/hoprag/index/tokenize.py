"""One tokeniser for corpus and queries, matching ``bm25s.tokenize`` token for token.

bm25s lowercases, splits with ``(?u)\\b\\w\\w+\\b``, drops stopwords *before* stemming and stems
with PyStemmer. Queries go through :meth:`Tokenizer.query`, a lean re-implementation of the same
steps (no progress bars, no vocabulary building) so the retrieval hot path stays cheap; the test
suite checks both give identical tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import bm25s
import Stemmer

from hoprag.errors import ConfigError

__all__ = ["TOKEN_PATTERN", "Tokenizer"]

TOKEN_PATTERN = r"(?u)\b\w\w+\b"


class Tokenizer:
    """Lowercase, split, drop stopwords, stem. ``stemmer=None`` or ``stopwords=None`` turns a step off."""

    def __init__(self, stemmer: str | None = "english", stopwords: str | None = "en") -> None:
        self.stemmer_language = stemmer
        self.stopwords_language = stopwords
        try:
            self._stemmer = Stemmer.Stemmer(stemmer) if stemmer else None
        except KeyError:
            raise ConfigError(
                f"unknown stemmer language '{stemmer}'; valid: {', '.join(Stemmer.algorithms())}"
            ) from None
        try:
            words = bm25s.tokenization._infer_stopwords(stopwords) if stopwords else ()
        except ValueError:
            raise ConfigError(
                f"unknown stopwords language '{stopwords}'; use e.g. 'en', 'de', 'fr' or none"
            ) from None
        self.stopwords: frozenset[str] = frozenset(words)
        self._split = re.compile(TOKEN_PATTERN).findall

    def query(self, text: str) -> list[str]:
        """Tokens of one query string, in order (duplicates kept)."""
        stop = self.stopwords
        tokens = [t for t in self._split(text.lower()) if t not in stop]
        if self._stemmer is not None and tokens:
            return self._stemmer.stemWords(tokens)
        return tokens

    def corpus(self, texts: Sequence[str]) -> Any:
        """``bm25s.tokenization.Tokenized`` (ids + vocab) for many texts, via ``bm25s.tokenize``."""
        return bm25s.tokenize(
            list(texts),
            lower=True,
            token_pattern=TOKEN_PATTERN,
            stopwords=list(self.stopwords),
            stemmer=self._stemmer,
            return_ids=True,
            show_progress=False,
        )
