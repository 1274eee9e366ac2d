"""Known artefacts of benchmark text, removed at import so users never read them as evidence.

HotpotQA's Wikipedia dump replaced some templates (pronunciations, post-nominal letters) with the
text of a Python dict whose empty values lost their closing quote::

    Neil Ellwood Peart, {'1': ", '2': ", '3': ", '4': "} ( ; born September 12, 1952), is …
    Mohammad Abdus Salam {'1': ", '2': ", '3': 'NI, SPk, KBE', '4': "} (Punjabi, …

:func:`clean_text` drops such a placeholder and the space before it, keeping any non-empty values
("Mohammad Abdus Salam NI, SPk, KBE (Punjabi, …"). Importers clean each sentence *before* computing
its offsets (:func:`hoprag.datasets.passages.paragraph_text`) and every document's text
(:func:`hoprag.datasets.passages.make_document`), so every span stays valid and a paragraph read
from a question's context and the same paragraph read from a pooled corpus keep one id.
"""

from __future__ import annotations

import re

__all__ = ["clean_text"]

_VALUE = r"(?:\"|'[^'{}]*')"
_PLACEHOLDER = re.compile(r"\s?\{'\d+': " + _VALUE + r"(?:, '\d+': " + _VALUE + r")*\}")
_KEPT = re.compile(r"'\d+': '([^'{}]*)'")


def _kept(match: re.Match[str]) -> str:
    values = [v.strip() for v in _KEPT.findall(match.group(0)) if v.strip()]
    return " " + ", ".join(values) if values else ""


def clean_text(text: str) -> str:
    """``text`` without HotpotQA's dict placeholders (unchanged when it has none)."""
    if "{'" not in text:
        return text
    return _PLACEHOLDER.sub(_kept, text)
