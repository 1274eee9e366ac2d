"""One tokeniser for corpus and queries, matching ``bm25s.tokenize`` token for token.

bm25s lowercases, splits with ``(?u)\\b\\w\\w+\\b``, drops stopwords *before* stemming and stems
with PyStemmer. Queries go through :meth:`Tokenizer.query`, a lean re-implementation of the same
steps (no progress bars, no vocabulary building) so the retrieval hot path stays cheap; the test
suite checks both give identical tokens. An index saves its stopword list beside the BM25 arrays
(:meth:`Tokenizer.save`), so answering queries never imports bm25s (a second of cold start).

With ``fold_accents`` (on by default; an index records its choice in its manifest) every text, and
the stopword list, is first put in base letters (:func:`hoprag.ingest.text.fold_accents`:
'Aschenbrödel' and 'Aschenbrodel' give one token); the tokens are then exactly bm25s's for the
folded text. Only the analysed copy is folded: chunks, spans and offsets stay the original text's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import Stemmer

from hoprag.errors import ConfigError
from hoprag.ingest.text import fold_accents as _fold

__all__ = ["TOKEN_PATTERN", "Tokenizer"]

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
STOPWORDS_FILE = "stopwords.json"


class Tokenizer:
    """Fold accents, lowercase, split, drop stopwords, stem. ``fold_accents=False``, ``stemmer=None``
    or ``stopwords=None`` turns a step off."""

    def __init__(
        self, stemmer: str | None = "english", stopwords: str | None = "en", *, words: Iterable[str] | None = None,
        fold_accents: bool = True,
    ) -> None:
        """``words``: the stopword list itself (as an index saved it), instead of bm25s's for ``stopwords``."""
        self.stemmer_language = stemmer
        self.stopwords_language = stopwords
        self.fold_accents = fold_accents
        #: what is done to a text before it is lowercased and split
        self.fold: Callable[[str], str] = _fold if fold_accents else _unchanged
        try:
            self._stemmer = Stemmer.Stemmer(stemmer) if stemmer else None
        except KeyError:
            raise ConfigError(
                f"unknown stemmer language '{stemmer}'; valid: {', '.join(Stemmer.algorithms())}"
            ) from None
        if words is None:
            words = _stopwords(stopwords) if stopwords else ()
        self.stopwords: frozenset[str] = frozenset(map(self.fold, words))  # 'für' is dropped as 'fur' is
        self._split = re.compile(TOKEN_PATTERN).findall

    def query(self, text: str) -> list[str]:
        """Tokens of one query string, in order (duplicates kept)."""
        stop = self.stopwords
        tokens = [t for t in self._split(self.fold(text).lower()) if t not in stop]
        if self._stemmer is not None and tokens:
            return self._stemmer.stemWords(tokens)
        return tokens

    def save(self, directory: Path) -> None:
        """Write the stopword list where :meth:`with_saved_stopwords` reads it."""
        (directory / STOPWORDS_FILE).write_text(json.dumps(sorted(self.stopwords), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, stemmer: str | None = "english", stopwords: str | None = "en", *,
             fold_accents: bool = True) -> Tokenizer:
        """The tokeniser an index in ``directory`` saved (its stopword list); built from the language
        names when none is saved. ``ValueError`` if the saved list is damaged."""
        path = directory / STOPWORDS_FILE
        if not path.is_file():
            return cls(stemmer, stopwords, fold_accents=fold_accents)
        words = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise ValueError(f"{STOPWORDS_FILE} is not a list of words")
        return cls(stemmer, stopwords, words=words, fold_accents=fold_accents)

    def corpus(self, texts: Sequence[str]) -> Any:
        """``bm25s.tokenization.Tokenized`` (ids + vocab) for many texts, via ``bm25s.tokenize``."""
        import bm25s

        return bm25s.tokenize(
            [self.fold(t) for t in texts],
            lower=True,
            token_pattern=TOKEN_PATTERN,
            stopwords=list(self.stopwords),
            stemmer=self._stemmer,
            return_ids=True,
            show_progress=False,
        )


def _unchanged(text: str) -> str:
    return text


def _stopwords(language: str) -> Sequence[str]:
    import bm25s.tokenization  # only where a list is not saved with the index

    try:
        return bm25s.tokenization._infer_stopwords(language)
    except ValueError:
        raise ConfigError(f"unknown stopwords language '{language}'; use e.g. 'en', 'de', 'fr' or none") from None
