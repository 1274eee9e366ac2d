"""PII scan of documents for the data gate: the package's one detector set (:mod:`hoprag.security.pii`)
applied to each document's text and title.

Findings carry the kind, the document id and character offsets, never the matched text: the
scan's output goes into logs and the metric table, and must not become a second copy of the leak.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from hoprag.security.pii import PII_KINDS, PiiFinding, iban_valid, luhn_valid, scan_text
from hoprag.records import Document

__all__ = ["PII_KINDS", "PiiFinding", "iban_valid", "luhn_valid", "pii_counts", "scan_pii", "scan_text"]


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
