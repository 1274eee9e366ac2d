"""The offline answerer's reading rules, each on hand-made passages: the chain end's facts first, the
last lookup's words for a date or number, the word that says what kind."""

from __future__ import annotations

import pytest

from hoprag.pipeline.amounts import answer_amounts, parse_amounts
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


# Sizes and counts compared ("higher", "more members", "a longer life"): read from each option's passages.
BROAD = ev("broad", "Broad Peak", "Broad Peak is the 12th highest mountain in the world at 8051 m above sea level.")
NANDA = ev("nanda", "Nanda Devi", "Nanda Devi is the second highest mountain in India.")
NANDA_PARK = ev("park", "Nanda Devi National Park",
                "The Nanda Devi National Park is situated around the peak of Nanda Devi (7816 m) in Uttarakhand.", 2)


def test_the_higher_mountain_is_read_from_each_options_passages():
    # Nanda Devi's own page states no height: the park titled with its name does
    question = "Which mountain is higher, Nanda Devi or Broad Peak?"
    answer = extract_answer(question, [NANDA, BROAD, NANDA_PARK])
    assert answer.text == "Broad Peak" and answer.claims[0].citations[0].chunk_id == "broad"
    lower = extract_answer("Which mountain is lower, Nanda Devi or Broad Peak?", [NANDA, BROAD, NANDA_PARK])
    assert lower.text == "Nanda Devi" and lower.claims[0].citations[0].chunk_id == "park"


def test_feet_are_compared_as_metres():
    tall = ev("a", "Mount A", "Mount A rises to 9,000 ft.")  # 2,743 m
    short = ev("b", "Mount B", "Mount B rises to 2,800 m.")
    assert extract_answer("Which mountain is taller, Mount A or Mount B?", [tall, short]).text == "Mount B"


def test_more_members_reads_counts_and_group_words():
    trio = ev("t", "The Trio Band", "The Trio Band is a Christian rap and rock trio formed in 1987.")
    five = ev("f", "Five Piece", "Five Piece is an indie band with five current members.")
    answer = extract_answer("Which music group has the most members, The Trio Band or Five Piece?", [trio, five])
    assert answer.text == "Five Piece"


def test_a_longer_life_is_the_years_between_birth_and_death():
    albee = ev("albee", "Edward Albee", "Edward Albee (March 12, 1928 – September 16, 2016) was an American playwright.")
    barrie = ev("barrie", "J. M. Barrie", "Sir James Barrie (9 May 1860 19 June 1937) was a Scottish novelist and playwright.")
    answer = extract_answer("Which playwright lived a longer life, Edward Albee or J. M. Barrie?", [barrie, albee])
    assert answer.text == "Edward Albee" and answer.claims[0].citations[0].chunk_id == "albee"


def test_an_amount_missing_for_one_option_falls_back():
    # no height for Nanda Devi anywhere: the amount reader abstains and the option reader answers
    question = "Which mountain is higher, Nanda Devi or Broad Peak?"
    assert parse_amounts(question) is not None and parse_amounts("Which film came out first, A or B?") is None
    assert answer_amounts(question, [NANDA, BROAD]) is None
    assert extract_answer(question, [NANDA, BROAD]).text in {"Nanda Devi", "Broad Peak"}


def test_a_year_before_members_is_no_count():
    # "formed in 1987 by members of …" names no count: the trio is three
    trio = ev("t", "Trio Band", "Formed in 1987 by members of a church choir, Trio Band is a rock trio.")
    four = ev("f", "Four Band", "Four Band has four members.")
    question = "Which group has more members, Trio Band or Four Band?"
    assert answer_amounts(question, [trio, four]) == ("Four Band", four)


def test_a_profession_is_the_role_after_the_nationality():
    pilot = ev("amy", "Amy Johnson", "Amy Johnson (1903 – 1941) was a pioneering British aviator who flew alone to Australia.")
    film = ev("film", "They Flew Alone", "They Flew Alone is a 1942 British biopic about aviator Amy Johnson.")
    answer = extract_answer("What was the profession of Amy Johnson, featured in They Flew Alone?", [film, pilot])
    assert answer.text == "aviator" and answer.claims[0].citations[0].chunk_id == "amy"
    _claim_holds(answer)


def test_a_position_is_what_a_player_plays_as():
    player = ev("nuno", "Nuno Diogo", "Nuno Diogo (born 1981 in Lisbon) is a Portuguese footballer who plays as a central defender for Famalicao.", 2)
    answer = extract_answer("What position does the footballer born in Lisbon play?", [player])
    assert answer.text == "central defender"
    _claim_holds(answer)


def test_a_profession_both_hold_is_listed_by_both():
    crosland = ev("alan", "Alan Crosland", "Alan Crosland (1894 – 1936) was an American stage actor and film director.")
    voss = ev("kurt", "Kurt Voss", "Kurt Voss is an American film director, screenwriter and musician-songwriter.")
    answer = extract_answer("What profession did Alan Crosland and Kurt Voss both hold?", [crosland, voss])
    assert answer.text == "film director"
    _claim_holds(answer)


def test_what_was_the_population_asks_a_number():
    born = ev("kerry", "Kerry Saxby", "Kerry Saxby (born 2 June 1961 in Young, New South Wales) is an Australian race walker.")
    town = ev("young", "Young, New South Wales", "Young is a town in New South Wales. At the 2011 census, Young had a population of 6,960.", 2)
    question = "At the 2011 census, what was the population of the town where Kerry Saxby was born?"
    answer = extract_answer(question, [born, town])
    assert answer.text == "6,960"
    _claim_holds(answer)
    # a plan's lookup reads names as before: its bridge is the town, not a count
    assert extract_answer(question, [born, town], lookup=True).text != "6,960"
