"""PII detectors: emails, phone numbers, payment cards (Luhn), IBANs (mod 97) and national-ID patterns.

One detector set for the whole package: the data gate counts what it finds in documents
(:mod:`hoprag.gates.checks.pii`) and :mod:`hoprag.redact` replaces it in everything stored.
Findings carry the kind, an owner id and character offsets, never the matched text: a scan's
output goes into logs and the metric table, and must not become a second copy of the leak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PII_KINDS", "PiiFinding", "iban_valid", "luhn_valid", "might_hold_pii", "scan_text"]

PII_KINDS = ("email", "phone", "card", "iban", "national_id")

_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![\w-])")
# International (+CC ...), North-American with dashes/dots or a bracketed area code.
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){2,4}"
    r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}"
    r"|\d{3}[.-]\d{3}[.-]\d{4})(?![\w-])"
)
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])")
# US SSN (area not 000/666/9xx, group not 00, serial not 0000) and UK National Insurance numbers.
_SSN = re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])")
_NINO = re.compile(r"(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                   r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])")
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[068]|35|6011|65|64[4-9])")
# Every detector needs an "@" (email) or a digit (all the others): text without either is clean.
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
    for m in _IBAN.finditer(text):
        if iban_valid(m.group()):
            add("iban", m.start(), m.end())
    for m in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group())
        if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and luhn_valid(digits):
            add("card", m.start(), m.end())
    for pattern in (_SSN, _NINO) if "-" in text else (_NINO,):
        for m in pattern.finditer(text):
            add("national_id", m.start(), m.end())
    for m in _PHONE.finditer(text):
        if 10 <= _digit_count(m.group()) <= 15:
            add("phone", m.start(), m.end())
    return sorted(found, key=lambda f: (f.start, f.end))

