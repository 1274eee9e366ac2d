"""A reply as it arrives: what a backend yields (:class:`Delta`) and what a caller reads (:class:`CompletionStream`).

:meth:`hoprag.llm.base.LLM.stream` gives a :class:`CompletionStream`: iterate it for the reply's text
in pieces, as the model makes them; once it is spent, ``completion`` holds what ``complete`` would
have returned (the whole text, usage, cost, latency, attempts). A backend implements one method for
it, ``_stream``, yielding :class:`Delta` pieces; the base class holds the retries, the deadline and the
accounting around it, the same way as for ``complete``.

:func:`text_deltas` is how a backend with no real stream (the offline and scripted ones) hands out a
finished reply: word-sized pieces (:func:`split_text`) whose concatenation is the text.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from hoprag.records import Usage

__all__ = ["CompletionStream", "Delta", "split_text", "text_deltas"]

_PIECE = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True)
class Delta:
    """One piece of a streamed reply: its text, and what the server reports once (usage, finish, model)."""

    text: str = ""
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None


def split_text(text: str) -> list[str]:
    """Word-sized pieces (a word and the space after it) whose concatenation is ``text``."""
    return _PIECE.findall(text)


class Finished(Protocol):
    """What a finished reply holds (a :class:`~hoprag.llm.base.Completion`)."""

    text: str
    usage: Usage
    finish_reason: str | None
    model: str


#: what a stream's ``completion`` is once it is spent (a Completion)
R = TypeVar("R")


def text_deltas(completion: Finished) -> Iterator[Delta]:
    """A finished reply as a stream: its words one by one, then its usage and finish reason."""
    for piece in split_text(completion.text):
        yield Delta(piece)
    yield Delta(usage=completion.usage, finish_reason=completion.finish_reason, model=completion.model)


class CompletionStream(Iterator[str], Generic[R]):
    """The text of one streamed reply, piece by piece; ``completion`` once the last piece was read.

    Close it (or use it in a ``with`` block) to abandon the reply early: the request is ended and
    its connection closed.
    """

    def __init__(self, pieces: Generator[str, None, R]) -> None:
        self._pieces = pieces
        #: the whole reply with usage and cost, set when the stream is spent (None until then)
        self.completion: R | None = None

    def __iter__(self) -> CompletionStream[R]:
        return self

    def __next__(self) -> str:
        try:
            return next(self._pieces)
        except StopIteration as done:
            self.completion = done.value
            raise

    def collect(self) -> R:
        """Read the rest and return the whole reply."""
        while True:
            try:
                next(self._pieces)
            except StopIteration as done:
                self.completion = done.value
                return done.value

    def close(self) -> None:
        self._pieces.close()

    def __enter__(self) -> CompletionStream[R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
