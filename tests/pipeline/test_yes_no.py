"""Yes/no comparisons of two named entities: real 2WikiMultihopQA and HotpotQA passages, golds by hand."""

from __future__ import annotations

import pytest

from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.yes_no import answer_both, answer_same_country, answer_same_value, country_of
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def ev(chunk_id: str, title: str, text: str, hop: int = 1) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query="q")


FORBIDDEN = ev("forbidden#0", "Forbidden Ground", "Forbidden Ground is a Hungarian film directed by Pál Gábor.")
GABOR = ev("gabor#0", "Pál Gábor", "Pál Gábor (2 November 1932 – 21 October 1987) was a Hungarian film director.", hop=2)
FREE_GUY = ev("free#0", "Free Guy", "Free Guy is a 2021 American action comedy film directed by Shawn Levy.")
LEVY = ev("levy#0", "Shawn Levy", "Shawn Adam Levy (born July 23, 1968) is a Canadian film director and producer.", hop=2)
TOTKUH = ev("totkuh#0", "Totkuh", "Totkuh is a village in Dasht-e Arzhan Rural District, Fars Province, Iran.")
FEYZABAD = ev("feyz#0", "Feyzabad, Khatam", "Feyzabad is a village in Chahak Rural District, Khatam County, Yazd Province, Iran.")
BAVEGEM = ev("bav#0", "Bavegem", "Bavegem is a village in the Denderleeuw municipality of East Flanders, Belgium.")
ECBALLIUM = ev("ecb#0", "Ecballium", "Ecballium is a genus of flowering plants in the family Cucurbitaceae.")
ELATOSTEMA = ev("ela#0", "Elatostema", "Elatostema is a genus of flowering plants in the nettle family Urticaceae.")
VIDOR = ev("vidor#0", "King Vidor", "King Wallis Vidor was an American film director, film producer, and screenwriter.")
CZIFFRA = ev("cziffra#0", "Géza von Cziffra", "Géza von Cziffra was a Hungarian-born Austrian film director and screenwriter.")


def test_a_nationality_word_and_a_location_name_their_country():
    assert country_of(GABOR.text)[0] == "hungary"
    assert country_of("Henry Edwards was an English actor.")[0] == "united kingdom"
    assert country_of(TOTKUH.text)[0] == "iran"


def test_same_country_compares_the_two_entities_countries():
    yes = answer_same_country("Are both villages, Totkuh and Feyzabad, Khatam, located in the same country?", [TOTKUH, FEYZABAD])
    no = answer_same_country("Are Bavegem and Totkuh located in the same country?", [BAVEGEM, TOTKUH])
    assert yes[0] == "yes" and no[0] == "no"


def test_same_nationality_of_a_relation_is_read_from_each_linked_passage():
    evidence = [FORBIDDEN, FREE_GUY, GABOR, LEVY]
    question = "Do director of film Forbidden Ground and director of film Free Guy share the same nationality?"
    answer = answer_same_country(question, evidence)
    # the films are Hungarian and American; their directors Hungarian and Canadian
    assert answer is not None and answer[0] == "no" and answer[1] is LEVY


def test_same_family_compares_the_names_each_passage_gives():
    assert answer_same_value("Are the flowering plants Ecballium and Elatostema in the same family?", [ECBALLIUM, ELATOSTEMA])[0] == "no"
    assert answer_same_value("Are Ecballium and Ecballium in the same family?", [ECBALLIUM]) is None  # one entity held


def test_both_asks_each_passage_for_the_property():
    assert answer_both("Are King Vidor and Géza von Cziffra both American directors?", [VIDOR, CZIFFRA])[0] == "no"
    assert answer_both("Are King Vidor and Géza von Cziffra both film directors?", [VIDOR, CZIFFRA])[0] == "yes"


def test_the_answerer_says_yes_or_no_and_cites_the_passage_compared():
    answer = extract_answer("Are both villages, Totkuh and Feyzabad, Khatam, located in the same country?", [TOTKUH, FEYZABAD])
    assert answer.text == "yes"
    assert answer.claims[0].citations[0].chunk_id == "feyz#0" and "Iran" in answer.claims[0].text


def test_a_villages_country_is_the_last_part_of_its_first_sentence():
    text = ("Feyzabad( also Romanized as Feyẕābād) is a village in Chahak Rural District, in the Central District of "
            "Khatam County, Yazd Province, Iran. At the 2006 census, its population was 62.")
    assert country_of(text)[0] == "iran"


def test_country_read_past_import_artefacts_and_from_where_a_place_is_situated():
    skier = "Sarah Schleper( born February 19, 1979 in Glenwood Springs, Colorado) is an- American alpine skier."
    assert country_of(skier)[0] == "united states"
    mansion = "The Hadjigeorgakis Kornesios Mansion is situated near the Archbishopric, in Nicosia, Cyprus, where notables lived."
    assert country_of(mansion)[0] == "cyprus"


def test_same_province_reads_the_capitalised_name_before_the_noun():
    nantong = ev("nt#0", "Nantong", "Nantong is a prefecture-level city in Jiangsu province, China.")
    jingdezhen = ev("jd#0", "Jingdezhen", "Jingdezhen is a prefecture-level city in northeastern Jiangxi province, China.")
    assert answer_same_value("Are Nantong and Jingdezhen situated in the same province ?", [nantong, jingdezhen])[0] == "no"
