"""The offline answerer's reading rules, each on hand-made passages: the chain end's facts first, the
last lookup's words for a date or number, the word that says what kind."""

from __future__ import annotations

import pytest

from hoprag.pipeline.descriptions import asked_description
from hoprag.pipeline.extractive import extract_answer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def ev(chunk_id: str, title: str, text: str, hop: int = 1, sub_query: str = "q") -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id, score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query=sub_query)


ANNA = ev("anna", "Anna Benson", "Anna Benson's husband Kris Benson pitched on a Major League Baseball team.")
KRIS = ev("kris", "Kris Benson", "A highly touted prospect, Benson was drafted first overall by the Pittsburgh Pirates in 1996.", hop=2)


def _claim_holds(answer) -> None:
    assert answer.text in answer.claims[0].text  # the answer is a span of the sentence it cites


def test_the_chain_end_passage_answers_before_the_named_one():
    # the named passage shares more of the question's words, but the chain ends on Kris Benson's page
    answer = extract_answer("What team was Anna Benson's husband on?", [ANNA, KRIS])
    assert answer.text == "Pittsburgh Pirates"
    assert answer.claims[0].citations[0].chunk_id == "kris"
    _claim_holds(answer)


def test_a_lookup_keeps_the_lighter_chain_end_weight():
    # a plan's lookup reads as before, so the bridges it finds (and retrieval) stay as they were
    lookup = extract_answer("What team was Anna Benson's husband on?", [ANNA, KRIS], lookup=True)
    assert lookup.claims[0].citations[0].chunk_id == "anna" and lookup.text != "Pittsburgh Pirates"


QUESTION = "When did the country where the village of Clonbrook is located become a member of CARICOM?"
PLAN = [
    ev("clonbrook", "Clonbrook", "Clonbrook is a village in the Demerara-Mahaica region of Guyana.", 1, "village of Clonbrook"),
    ev("guyana", "Guyana", "Guyana is a sovereign state on the northern mainland of South America.", 2, "country where is located"),
    ev("caricom", "Caribbean Community",
       "The country where the village of its secretariat is located held a summit in 1990. "
       "Guyana became a member on 1 August 1973.", 3, "When did become a member of CARICOM"),
]


def test_a_date_is_read_from_the_sentence_stating_the_last_lookup():
    # "country", "village", "located" lead to the bridge; "member" is what the answer's sentence states
    answer = extract_answer(QUESTION, PLAN)
    assert answer.text == "1 August 1973"
    _claim_holds(answer)


def test_without_a_lookup_of_its_own_the_question_words_alone_score():
    # the same passages found by the question itself (no plan): the earlier clauses' words win
    alone = [ev(e.chunk_id, e.title, e.text, e.hop, QUESTION) for e in PLAN]
    assert extract_answer(QUESTION, alone).text == "1990"


def test_what_kind_of_asks_for_the_word_before_the_noun():
    wife = ev("nadya", "Nadezhda Tolokonnikova",
              "Nadezhda Tolokonnikova is a Russian conceptual artist and political activist. She married Pyotr Verzilov.", 2)
    verzilov = ev("pyotr", "Pyotr Verzilov", "Pyotr Verzilov is a Russian-Canadian activist and the publisher of Mediazona.")
    answer = extract_answer("Pyotr Verzilov is married to a Russian conceptual artist and what kind of activist?", [verzilov, wife])
    assert answer.text == "political"
    assert answer.claims[0].citations[0].chunk_id == "nadya"
    _claim_holds(answer)


def test_what_kind_of_without_a_describing_word_falls_back():
    assert asked_description("What type of plane dropped the bomb?") == "plane"
    assert asked_description("Who directed Forbidden Ground?") is None
    # "an activist": a determiner is no kind, so the usual span reader answers
    plain = ev("x", "Jane Roe", "Jane Roe is an activist born in Dublin.")
    assert extract_answer("What kind of activist is Jane Roe?", [plain]).text != "an"
