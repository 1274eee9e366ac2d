"""Every supporting fact of every bundled dev record is an exact span of its imported document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.artefacts import clean_text
from hoprag.datasets.importers import import_dataset
from hoprag.datasets.passages import doc_id_for, paragraph_text

DATA = Path(__file__).parents[2] / "data"

pytestmark = pytest.mark.unit

SENTENCE_FILES = sorted((DATA / "hotpotqa").glob("*.json")) + sorted((DATA / "2wikimultihopqa").glob("*.json"))
MUSIQUE_FILES = sorted((DATA / "musique").glob("*.jsonl"))


def test_bundled_data_is_present() -> None:
    assert len(SENTENCE_FILES) >= 2 and MUSIQUE_FILES


@pytest.mark.parametrize("path", SENTENCE_FILES, ids=lambda p: p.name)
def test_every_sentence_supporting_fact_is_an_exact_span(path: Path) -> None:
    fmt = "hotpotqa" if path.parent.name == "hotpotqa" else "2wiki"
    result = import_dataset(fmt, [path])
    records = json.loads(path.read_text(encoding="utf-8"))
    docs = {d.id: d for d in result.documents}
    cases = {c.case_id: c for c in result.cases}
    assert len(cases) == len(records) == result.stats["records"] == result.stats["cases"]
    checked = 0
    for record in records:
        case = cases[record["_id"]]
        context = {title: sentences for title, sentences in reversed(record["context"])}
        for title, sent_id in record["supporting_facts"]:
            sentences = context.get(title)
            if sentences is None or not 0 <= sent_id < len(sentences):
                assert any(title in w for w in case.warnings)
                continue
            doc_id = doc_id_for(title, paragraph_text(sentences)[0])
            fact = case.facts[f"{doc_id}:s{sent_id}"]
            [span] = fact.spans
            assert fact.source_id == doc_id and fact.title == title and fact.entities == [title]
            # the sentence as the source gives it, less the artefacts removed at import
            assert span.text == docs[doc_id].text[span.start : span.end] == clean_text(sentences[sent_id]).strip()
            checked += 1
        assert set(case.facts) <= {f for chain in case.valid_chains for f in chain}
    assert checked > 0


@pytest.mark.parametrize("path", MUSIQUE_FILES, ids=lambda p: p.name)
def test_every_musique_step_is_a_whole_paragraph_fact(path: Path) -> None:
    result = import_dataset("musique", [path])
    docs = {d.id: d for d in result.documents}
    cases = {c.case_id: c for c in result.cases}
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(cases) == len(records)
    for record in records:
        case = cases[record["id"]]
        paragraphs = {p["idx"]: p for p in record["paragraphs"]}
        for step in record["question_decomposition"]:
            para = paragraphs[step["paragraph_support_idx"]]
            doc_id = doc_id_for(para["title"], para["paragraph_text"])
            [span] = case.facts[f"{doc_id}:p{step['paragraph_support_idx']}"].spans
            assert span.text == docs[doc_id].text[span.start : span.end] == para["paragraph_text"]
        assert len(case.edges) >= len(record["question_decomposition"]) - 1
