"""The final answer of a plan's chain of three or more lookups is read in its deepest lookup's passages."""

from __future__ import annotations

import pytest

from hoprag.pipeline.extractive import extract_answer
from evidence_fixtures import held as ev

pytestmark = pytest.mark.unit

QUESTION = "Who was in charge of the country where the composer of Aschenbrodel was a citizen?"




ASCHENBRODEL = ev("aschenbrodel#0", "Aschenbrödel",
                  "Aschenbrödel (Cinderella) is a ballet in three acts by Johann Strauss II.", 1, "composer of Aschenbrodel")
ORCHESTRA = ev("orchestra#0", "Vienna Walzer Orchestra",
               "The Wiener Walzer Orchester plays the music of Johann Strauss II in Austria.", 2, "country where was a citizen")
AUSTRIA = ev("austria#0", "Austria",
             "After the war, Karl Renner was in charge of the provisional government of Austria.", 3, "Who was in charge of")


def test_the_deepest_lookup_of_a_three_lookup_chain_holds_the_answer():
    answer = extract_answer(QUESTION, [ASCHENBRODEL, ORCHESTRA, AUSTRIA])
    assert answer.text == "Karl Renner"
    assert answer.claims[0].citations[0].chunk_id == "austria#0"


def test_a_two_lookup_chain_keeps_its_second_passage():
    # "What country was the author of Brand a citizen of?": two lookups, then a bridge hop past the
    # plan that asks a value ('Nora Bergliot Ibsen'), not the question's own words
    question = "What country was the author of Brand a citizen of?"
    brand = ev("brand#0", "Brand (play)", "Brand is a verse tragedy by the Norwegian playwright Henrik Ibsen.", 1, "author of Brand")
    nora = ev("nora#0", "Nora Ibsen", "Nora Bergliot Ibsen, granddaughter of Henrik Ibsen, was a citizen of Norway.", 2,
              "What country was a citizen of")
    visa = ev("visa#0", "Visa requirements for New Zealand citizens",
              "Visa requirements for New Zealand citizens are set by the authorities of other states.", 3, "Nora Bergliot Ibsen")
    answer = extract_answer(question, [brand, nora, visa])
    assert answer.text == "Norway"
    assert answer.claims[0].citations[0].chunk_id == "nora#0"


def test_a_lookup_reads_as_before():
    # a plan's lookup (its bridges, hence retrieval) never takes the final answer's rule
    answer = extract_answer(QUESTION, [ASCHENBRODEL, ORCHESTRA, AUSTRIA], lookup=True)
    assert answer.claims[0].citations[0].chunk_id != "austria#0"


def test_the_deepest_passage_answers_even_when_the_question_names_it():
    # MuSiQue train 3hop1__144142_643936_36283: the last lookup's passage is the one the question names
    # (Namibia); it still holds the answer, not the middle hop's dam opened "in 1995"
    question = "When did the country where the city where Steven Blankaart was born is located refuse to surrender Namibia?"
    blankaart = ev("blankaart#0", "Steven Blankaart",
                   "Steven Blankaart (24 October 1650, Middelburg – 23 February 1704, Amsterdam) was a Dutch physician.",
                   1, "city where Steven Blankaart was born")
    dam = ev("dam#0", "Boschmanskop No 1 Dam",
             "Boschmanskop No 1+2 Dam, is an earth-fill type dam near Middelburg, Mpumalanga, South Africa. "
             "It was established in 1995.", 2, "country where is located")
    namibia = ev("namibia#0", "Namibia",
                 "In 1946 South Africa refused to surrender its earlier mandate of the territory.", 3,
                 "When did refuse to surrender Namibia")
    answer = extract_answer(question, [blankaart, dam, namibia])
    assert answer.text == "1946"
    assert answer.claims[0].citations[0].chunk_id == "namibia#0"
