"""Synthetic 2-hop cases: valid schema, provenance, bridge not named, audited."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.audit import audit, mentions, norm
from hoprag.datasets.synth import GENERATOR, synthesize
from hoprag.ingest.loaders import load_documents
from hoprag.records import Document

pytestmark = pytest.mark.unit
DOCS = load_documents(Path(__file__).parents[2] / "data" / "enterprise" / "corpus.jsonl")


def test_synth_on_enterprise() -> None:
    result = synthesize(DOCS, max_cases=8, seed=7)
    assert 0 < len(result.cases) <= 8 and result.proposed >= len(result.cases)
    by_id = {d.id: d for d in DOCS}
    for case in result.cases:
        meta = case.metadata
        assert meta["generated"] is True and meta["generator"] == GENERATOR
        assert not mentions(norm(case.query), meta["bridge"])  # the bridge is never named
        for fact in case.facts.values():
            for span in fact.spans:
                assert by_id[fact.source_id].text[span.start : span.end] == span.text
        assert case.edges[0].bridge_value == meta["bridge"] and case.fact_layers()[case.valid_chains[0][1]] == 2
    assert audit(result.cases, DOCS).findings == []  # flagged proposals were dropped
    assert synthesize(DOCS, max_cases=8, seed=7).cases == result.cases


def test_synth_title_link_by_hand() -> None:
    docs = [
        Document(id="a", title="Ridge Tunnel", text="The Ridge Tunnel was dug by Halvard Engineering Group in 1931."),
        Document(id="b", title="Halvard Engineering Group", text="Halvard Engineering Group was founded in Bergen Harbour in 1902."),
    ]
    result = synthesize(docs, max_cases=5, keep_flagged=True)
    queries = {c.query: c for c in result.cases}
    assert queries, "a title link between the two documents should give a case"
    case = next(iter(queries.values()))
    assert case.metadata["from_doc"] == "a" and case.metadata["to_doc"] == "b"
    assert case.metadata["bridge"] == "Halvard Engineering Group"
