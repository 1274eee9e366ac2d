"""What a question must be before an engine works on it: the one limit for ask, run and the service.

Every engine's ``answer()`` calls :func:`check_question` first, so the command line (``ask``),
a cases file (``run``: the runner records the refusal as the case's error trace and goes on) and
the HTTP service (which also declares :data:`MAX_QUESTION_CHARS` in its request schema) refuse the
same questions with the same words. Retrieval and planning cost grows faster than the question's
length (40,000 characters took 22 s of one run), so the limit is what keeps a run from stalling on
one pasted document.
"""

from __future__ import annotations

from hoprag.errors import InputError

__all__ = ["MAX_QUESTION_CHARS", "check_question"]

#: the longest question any entry point accepts, in characters
MAX_QUESTION_CHARS = 10_000


def check_question(text: str, what: str = "question") -> str:
    """``text`` unchanged when it is a question an engine can answer; otherwise an InputError with the fix."""
    if not isinstance(text, str):
        raise InputError(f"the {what} is {type(text).__name__}, not text", fix=f"give the {what} as a string")
    if len(text) > MAX_QUESTION_CHARS:
        raise InputError(
            f"the {what} is {len(text):,} characters long; a {what} may hold at most {MAX_QUESTION_CHARS:,}",
            fix=f"shorten the {what} (long background text belongs in the corpus)",
        )
    if not text.strip():
        raise InputError(f"the {what} is empty", fix=f"give the {what} in words, e.g. \"Who founded Kestrel Dynamics?\"")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: bytes that were not UTF-8 on the way in
            raise InputError(
                f"the {what} holds bytes that are not UTF-8 text (at character {exc.start + 1})",
                fix=f"type the {what} again, or set the terminal to UTF-8 (e.g. export LANG=C.UTF-8)",
            ) from None
    return text
