"""HotpotQA's dict placeholders are removed at import, and every span still holds its sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.artefacts import clean_text
from hoprag.datasets.importers import import_dataset

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
DEV = ROOT / "data" / "hotpotqa" / "hotpot_dev_distractor_migres_part1.json"


def test_placeholders_are_dropped_and_their_non_empty_values_kept() -> None:
    # real HotpotQA dev sentences (Neil Peart, Abdus Salam)
    assert clean_text("Neil Ellwood Peart, {'1': \", '2': \", '3': \", '4': \"} ( ; born September 12, 1952), is") == (
        "Neil Ellwood Peart, ( ; born September 12, 1952), is"
    )
    assert clean_text("Mohammad Abdus Salam {'1': \", '2': \", '3': 'NI, SPk, KBE', '4': \"} (Punjabi") == (
        "Mohammad Abdus Salam NI, SPk, KBE (Punjabi"
    )
    plain = "A set {'a'} in code stays."  # not a numbered placeholder
    assert clean_text(plain) == plain


def test_imported_hotpotqa_holds_no_placeholder_and_every_span_is_valid() -> None:
    result = import_dataset("hotpotqa", [DEV])
    docs = {d.id: d for d in result.documents}
    assert not any("{'1': " in d.text for d in result.documents)
    peart = next(d for d in result.documents if d.title == "Neil Peart")
    assert peart.text.startswith("Neil Ellwood Peart, ( ; born September 12, 1952)")
    spans = [(f.source_id, s) for c in result.cases for f in c.facts.values() for s in f.spans]
    assert spans and all(docs[source].text[s.start : s.end] == s.text for source, s in spans)
