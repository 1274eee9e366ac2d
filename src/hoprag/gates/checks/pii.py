"""PII scan: emails, phone numbers, payment cards (Luhn), IBANs (mod 97) and national-ID patterns.

Findings carry the kind, the document id and character offsets, never the matched text: the
scan's output goes into logs and the metric table, and must not become a second copy of the leak.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from hoprag.records import Document

__all__ = ["PII_KINDS", "PiiFinding", "iban_valid", "luhn_valid", "scan_pii", "scan_text"]

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


@dataclass(frozen=True)
class PiiFinding:
    """Where a PII pattern matched: kind, document and offsets (no text)."""

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


def _digit_count(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def scan_text(text: str, doc_id: str = "") -> list[PiiFinding]:
    """Every PII finding in ``text``, in order of position; overlapping kinds are reported once."""
    found: list[PiiFinding] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, start: int, end: int) -> None:
        if any(start < e and s < end for s, e in taken):
            return
        taken.append((start, end))
        found.append(PiiFinding(kind, doc_id, start, end))

    for m in _EMAIL.finditer(text):
        add("email", m.start(), m.end())
    for m in _IBAN.finditer(text):
        if iban_valid(m.group()):
            add("iban", m.start(), m.end())
    for m in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group())
        if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and luhn_valid(digits):
            add("card", m.start(), m.end())
    for pattern in (_SSN, _NINO):
        for m in pattern.finditer(text):
            add("national_id", m.start(), m.end())
    for m in _PHONE.finditer(text):
        if 10 <= _digit_count(m.group()) <= 15:
            add("phone", m.start(), m.end())
    return sorted(found, key=lambda f: (f.start, f.end))


def scan_pii(documents: Iterable[Document], *, include_titles: bool = True) -> list[PiiFinding]:
    """Scan each document's text (and title, offsets then relative to the title, kind ``title:…``)."""
    findings: list[PiiFinding] = []
    for doc in documents:
        findings.extend(scan_text(doc.text, doc.id))
        if include_titles and doc.title:
            findings.extend(PiiFinding(f"title:{f.kind}", f.doc_id, f.start, f.end) for f in scan_text(doc.title, doc.id))
    return findings


def pii_counts(findings: Iterable[PiiFinding]) -> Counter[str]:
    """Counts per kind (``title:`` findings count under their kind)."""
    return Counter(f.kind.removeprefix("title:") for f in findings)
