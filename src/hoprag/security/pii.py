"""PII detectors: emails, phone numbers, payment cards (Luhn), IBANs (mod 97) and national-ID patterns.

One detector set for the whole package: the data gate counts what it finds in documents
(:mod:`hoprag.gates.checks.pii`) and :mod:`hoprag.security.redaction` replaces it in everything
stored. Findings carry the kind, an owner id and character offsets, never the matched text: a
scan's output goes into logs and the metric table, and must not become a second copy of the leak.

Emails take internationalised local parts and IDN domains (``zoë@exämple.com``, ``用户@例子.广告``,
``xn--`` labels). Phones are international (``+CC ...``), North American (``(555) 123-4567``,
``1-800-555-0199``) or national with a trunk ``0`` and separators (``020 7946 0958``, ``030/1234567``,
``01 23 45 67 89``): a bare run of digits is never a phone, so years, dates, page ranges, version
numbers, ISBNs and scores are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["PII_KINDS", "PiiFinding", "iban_valid", "luhn_valid", "might_hold_pii", "scan_text"]

PII_KINDS = ("email", "phone", "card", "iban", "national_id")

# \w is Unicode-aware: an accented or CJK local part or domain label is a word character. A top-level
# domain is letters (any script) or an IDN's punycode form.
_EMAIL = re.compile(r"(?<![\w.%+-])\w[\w.%+-]*@[^\W_](?:[\w-]*[^\W_])?"
                    r"(?:\.[^\W_](?:[\w-]*[^\W_])?)*\.(?:[^\W\d_]{2,24}|xn--[a-z0-9-]{2,59})(?![\w-])")
# International (+CC ...), North-American with dashes/dots or a bracketed area code (with an optional
# leading 1), or national with a trunk 0 (then not 0) and at least one separator between its groups; never
# right after "digit," or "digit." (the tail of 275,000 is not a phone).
_PHONE = re.compile(
    r"(?<![\w+])(?<!\d[,.])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){2,4}"
    r"|(?:1[ .-])?\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}"
    r"|(?:1[.-])?\d{3}[.-]\d{3}[.-]\d{4}"
    r"|\(0[1-9]\d{0,3}\) ?\d{3,4}[ -]?\d{3,4}"
    r"|0[1-9]\d{0,3}[ /-]\d{3,8}(?:[ -]\d{2,4}){0,2}"
    r"|0[1-9](?: \d\d){4}|0[1-9](?:\.\d\d){4})(?![\w-])"
)
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])")
# US SSN (area not 000/666/9xx, group not 00, serial not 0000) and UK National Insurance numbers.
_SSN = re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])")
_NINO = re.compile(r"(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                   r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])")
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[068]|35|6011|65|64[4-9])")
_SEPARATORS = " .-/"
# Every detector needs an "@" (email) or a digit (all the others): text without either is clean.
# Unicode digits count: \d matches them, so a phone in Arabic-Indic digits is not waved through.
_CANDIDATE = re.compile(r"[@\d]")


@dataclass(frozen=True)
class PiiFinding:
    """Where a PII pattern matched: kind, the id of the text's owner (a document) and offsets (no text)."""

    kind: str
    doc_id: str
    start: int
    end: int

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "doc_id": self.doc_id, "start": self.start, "end": self.end}


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check of a digit string."""
    if not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    """ISO 13616 check: move the first four characters to the end, letters to numbers, mod 97 == 1."""
    iban = candidate.replace(" ", "").upper()
    if not 15 <= len(iban) <= 34 or not iban[:2].isalpha() or not iban[2:4].isdigit():
        return False
    rearranged = iban[4:] + iban[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def might_hold_pii(text: str) -> bool:
    """False when no detector can match ``text`` (a cheap test before :func:`scan_text`)."""
    return _CANDIDATE.search(text) is not None


def _digit_count(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def _card_valid(match: str) -> bool:
    digits = re.sub(r"[ -]", "", match)
    return 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None and luhn_valid(digits)


def _phone_valid(match: str) -> bool:
    return 10 <= _digit_count(match) <= 15


def _valid_matches(pattern: re.Pattern[str], text: str, valid: Callable[[str], bool]) -> Iterator[tuple[int, int]]:
    """Spans of ``pattern`` in ``text`` whose matched text is ``valid``.

    A value next to another number (``4111 1111 1111 1111 1966``, ``+44 20 7946 0958 2021``) first
    matches as one long run that fails its check; the run is then cut back at each separator, and
    tried again from its next group, so the value inside is still found.
    """
    pos = 0
    while (found := pattern.search(text, pos)) is not None:
        start, end = found.span()
        if valid(found.group()):
            yield start, end
            pos = end
            continue
        cuts = [p for p in range(end - 1, start, -1) if text[p] in _SEPARATORS and text[p - 1] not in _SEPARATORS]
        for cut in cuts:
            shorter = pattern.match(text, start, cut)  # the lookahead sees the cut as the end: a separator follows
            if shorter is not None and valid(shorter.group()):
                yield start, shorter.end()
                pos = shorter.end()
                break
        else:
            pos = start + 1


def scan_text(text: str, doc_id: str = "") -> list[PiiFinding]:
    """Every PII finding in ``text``, in order of position; overlapping kinds are reported once."""
    if not might_hold_pii(text):
        return []
    found: list[PiiFinding] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, start: int, end: int) -> None:
        if any(start < e and s < end for s, e in taken):
            return
        taken.append((start, end))
        found.append(PiiFinding(kind, doc_id, start, end))

    if "@" in text:  # the guards skip a pattern that cannot match: scanning every word for one is slow
        for m in _EMAIL.finditer(text):
            add("email", m.start(), m.end())
    for start, end in _valid_matches(_IBAN, text, iban_valid):
        add("iban", start, end)
    for start, end in _valid_matches(_CARD, text, _card_valid):
        add("card", start, end)
    for pattern in (_SSN, _NINO) if "-" in text else (_NINO,):
        for m in pattern.finditer(text):
            add("national_id", m.start(), m.end())
    for start, end in _valid_matches(_PHONE, text, _phone_valid):
        add("phone", start, end)
    return sorted(found, key=lambda f: (f.start, f.end))
