"""hoprag.record with the real frameworks' result objects and their default ids: LlamaIndex nodes (a
UUID each) and Haystack documents (a content hash each), the corpus id only in their metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

import hoprag
from hoprag.io.traces import read_traces

pytestmark = pytest.mark.integration

RUSH = "5a7f6fd75542992e7d278cfa"  # chain: Nobody's Hero -> Neil Peart


def test_framework_objects_are_recorded_by_their_corpus_ids(slice_files, tmp_path: Path) -> None:
    schema = pytest.importorskip("llama_index.core.schema")
    haystack = pytest.importorskip("haystack")
    result, cases_file, corpus_file = slice_files
    docs = {d.id: d for d in result.documents}
    hero, peart = docs["nobody-s-hero-913d4abd"], docs["neil-peart-d82c2916"]
    node = schema.NodeWithScore(node=schema.TextNode(text=hero.text, metadata={"doc_id": hero.id}), score=2.5)
    document = haystack.Document(content=peart.text, meta={"title": peart.title}, score=1.5)  # no id key at all
    assert node.node.node_id != hero.id and document.id != peart.id  # the frameworks' own ids

    plain = hoprag.Recorder(tmp_path / "plain.jsonl")
    with plain.case(RUSH) as r:
        got = r.retrieval("q", (n for n in [node]))  # a generator: its hits come back as a list
        assert got == [node]
    assert [h.doc_id for h in read_traces(tmp_path / "plain.jsonl")[0].steps[0].hits] == [hero.id]

    resolved = hoprag.Recorder(tmp_path / "resolved.jsonl", corpus=corpus_file)
    with resolved.case(RUSH, result.cases[0].query) as r:
        r.retrieval("Counterparts", [node])
        r.retrieval("Neil Peart", [document], bridge="Neil Peart")
        r.answer("Rush", citations=[node, document])
    trace = read_traces(tmp_path / "resolved.jsonl")[0]
    assert [h.doc_id for s in trace.steps for h in s.hits] == [hero.id, peart.id]
    assert resolved.routes == {"metadata": 1, "content": 1}  # the citations are the hits: not counted again
    assert [c.hop for c in trace.answer.claims[0].citations] == [1, 2]
    assert [h.score for s in trace.steps for h in s.hits] == [2.5, 1.5]
