""""What is X an instance of?" is answered by the noun X's defining sentence ends its noun group with."""

from __future__ import annotations

import pytest

from hoprag.pipeline.answer_candidates import definition
from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.instances import instance_of
from evidence_fixtures import held
from hoprag.records import Evidence

pytestmark = pytest.mark.unit

# MuSiQue train (bundled sample): "What is the Edsa Shangri-La an instance of in the birthplace of …?"
QUESTION = ("What is the Edsa Shangri-La an instance of in the birthplace of the person who made The Oddventures of "
            "Mr. Cool?")
HOTEL = ("Edsa Shangri-La, Manila is a 5-star luxury hotel located at Ortigas Center, Mandaluyong, Philippines and one of "
         "the three hotels managed by Shangri-La Hotels and Resorts located in Metro Manila, Philippines.")


def ev(chunk_id: str, title: str, text: str) -> Evidence:
    return held(chunk_id, title, text, sub_query=QUESTION)


def test_the_definition_of_a_name_a_sentence_opens_with():
    assert definition("Edsa Shangri-La, Manila", HOTEL) == "5-star luxury hotel"  # cut at "located"
    assert definition("Ortigas Center", HOTEL) is None  # the sentence does not open with it


def test_the_instance_is_the_defining_noun():
    item = ev("edsa", "Edsa Shangri-La, Manila", HOTEL)
    assert instance_of(QUESTION, [(1.0, 0, item, HOTEL)]) == ("hotel", item, HOTEL)
    assert instance_of("What is the Edsa Shangri-La near?", [(1.0, 0, item, HOTEL)]) is None  # no instance asked
    other = "The Manila Hotel is a historic hotel."
    assert instance_of(QUESTION, [(1.0, 0, item, other)]) is None  # no sentence opens with the name


def test_the_final_answer_is_the_noun_and_a_span_of_its_claim():
    answer = extract_answer(QUESTION, [ev("edsa", "Edsa Shangri-La, Manila", HOTEL)])
    assert answer.text == "hotel"  # before: "Resorts", a name of the sentence's tail
    assert answer.text in answer.claims[0].text
    assert extract_answer(QUESTION, [ev("edsa", "Edsa Shangri-La, Manila", HOTEL)], lookup=True).text != "hotel"
