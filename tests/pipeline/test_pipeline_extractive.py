from __future__ import annotations

import pytest

from hoprag.pipeline.extractive import extract_answer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def ev(chunk_id: str, title: str, text: str, hop: int = 1, rank: int = 1) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=rank, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query="q")


# Real 2WikiMultihopQA sentences.
FORBIDDEN = ev("forbidden#0", "Forbidden Ground", "Forbidden Ground is a Hungarian film directed by Pál Gábor. It was released in 1968.")
GABOR = ev(
    "gabor#0", "Pál Gábor", "Pál Gábor (2 November 1932 – 21 October 1987) was a Hungarian film director and screenwriter.", hop=2
)


def test_no_evidence_abstains():
    answer = extract_answer("Who directed Forbidden Ground?", [])
    assert answer.abstained and answer.text == "" and answer.claims == ()


def test_entity_answer_with_citation_to_its_sentence():
    answer = extract_answer("Who directed the film Forbidden Ground?", [FORBIDDEN, GABOR])
    assert answer.text == "Pál Gábor"
    # the chain ends on the director's page, whose facts come first; the answer is a span of the
    # sentence its first claim cites, and the film's sentence is cited as the chain's other step
    first = answer.claims[0]
    assert first.citations[0].chunk_id == "gabor#0" and "Pál Gábor" in first.text
    assert any(c.citations[0].hop == 1 and "directed by Pál Gábor" in c.text for c in answer.claims[1:])


def test_when_questions_want_a_date():
    answer = extract_answer("When was Pál Gábor born?", [GABOR])
    assert answer.text == "2 November 1932"


def test_two_option_questions_answer_with_an_option():
    answer = extract_answer("Which film came out first, Forbidden Ground or Free Guy?", [FORBIDDEN])
    assert answer.text in {"Forbidden Ground", "Free Guy"}
    assert answer.text == "Forbidden Ground"  # the only option the evidence mentions


def test_yes_no_questions_answer_yes_or_no():
    yes = extract_answer("Is Forbidden Ground a Hungarian film?", [FORBIDDEN])
    no = extract_answer("Is Forbidden Ground a Brazilian opera about penguins?", [FORBIDDEN])
    assert yes.text == "yes" and no.text == "no"


def test_how_long_questions_want_a_duration_with_its_unit():
    # Real enterprise text (Kestrel retention policy, version 2), one list row per line.
    policy = ev(
        "policy-8-v2#0",
        "Retention schedule",
        "Section 11.3 applies.\nRetention schedule:\n- Skyline Telemetry: customer telemetry records are retained for 7 years.",
    )
    answer = extract_answer("How long are Skyline Telemetry customer telemetry records retained?", [policy])
    assert answer.text == "7 years"


def test_possessive_options_answer_with_the_bare_name():
    orion = ev("contract-14#0", "Orion", "Kestrel keeps the records of Project Orion for 7 years.")
    answer = extract_answer("Whose records are kept longer, Project Orion's or Project Halyard's?", [orion])
    assert answer.text == "Project Orion"


def test_a_name_most_passages_mention_is_background_not_an_answer():
    items = [
        ev("a#0", "Policy", "Kestrel Dynamics stores data in KR-West for Skyline Telemetry plans."),
        ev("b#0", "Memo", "Kestrel Dynamics moved the archive."),
        ev("c#0", "Ticket", "Kestrel Dynamics support answered."),
    ]
    answer = extract_answer("In which hosting region is Skyline Telemetry data stored?", items)
    assert answer.text == "KR-West"


def test_evidence_without_text_abstains_for_every_question_shape():
    empty = ev("empty#0", "Forbidden Ground", "")
    for question in ("Is Forbidden Ground a Hungarian film?", "Which came first, Forbidden Ground or Free Guy?", "Who directed it?"):
        answer = extract_answer(question, [empty])
        assert answer.abstained and answer.text == ""
