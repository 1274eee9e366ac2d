"""A quantity asked by its noun is read as a number, with its unit kept."""

from __future__ import annotations

import pytest

from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.number_spans import ASKS_QUANTITY, MEASURE, NUMBER
from evidence_fixtures import held as ev

pytestmark = pytest.mark.unit

# MuSiQue train 3hop1__520721_132413_16030 (bundled sample)
SNOW_Q = "What is the usual average snowfall in the city where the performers of Brother were formed?"
SEATTLE = ("Seattle typically receives some snowfall on an annual basis but heavy snow is rare. Average annual snowfall, as "
           "measured at Sea-Tac Airport, is 6.8 inches (17.3 cm).")




def test_a_measure_keeps_its_unit_and_a_lookup_number_reads_as_before():
    sentence = "Average annual snowfall, as measured at Sea-Tac Airport, is 6.8 inches (17.3 cm). It grew 5% in 12 years."
    assert [m.group(0) for m in MEASURE.finditer(sentence)] == ["6.8 inches", "17.3 cm", "5%", "12 years"]
    # the lookups' pattern is unchanged: no inches, and "%" read without its sign (no word boundary after it)
    assert [m.group(0) for m in NUMBER.finditer(sentence)] == ["6.8", "17.3", "5", "12 years"]


def test_a_quantity_is_asked_by_its_noun():
    assert ASKS_QUANTITY.search(SNOW_Q)  # three words between the copula and the noun
    assert ASKS_QUANTITY.search("What was the population of the city at the 2011 census?")
    assert not ASKS_QUANTITY.search("What is the name of the airport in the city?")


def test_the_snowfall_is_the_measure_not_the_airport():
    evidence = [ev("pearl", "Pearl Jam", "Pearl Jam is an American rock band formed in 1990 in Seattle, Washington.", 1,
                   "city where were formed"),
                ev("seattle", "Seattle", SEATTLE, 2, "What is the usual average snowfall in")]
    answer = extract_answer(SNOW_Q, evidence)
    assert answer.text == "6.8 inches"  # before: "Sea-Tac Airport", a name read for a question that asks a quantity
    assert answer.claims[0].citations[0].chunk_id == "seattle" and answer.text in answer.claims[0].text
    assert extract_answer(SNOW_Q, evidence, lookup=True).text != "6.8 inches"  # a lookup reads as before


def test_a_population_is_no_measure_with_a_unit():
    from hoprag.pipeline.number_spans import counts_people

    # MuSiQue train "What is the population of the state where Dodge City Regional Airport is located?"
    question = "What is the population of the state where Dodge City Regional Airport is located?"
    assert not counts_people(question, "82,278 sq mi")  # Kansas's area
    assert counts_people(question, "2,913,123")
    assert counts_people("What is the area of Kansas?", "82,278 sq mi")
