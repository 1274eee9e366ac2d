"""The final answer of a plan's chain of three or more lookups is read in its deepest lookup's passages."""

from __future__ import annotations

import pytest

from hoprag.pipeline.extractive import extract_answer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit

QUESTION = "Who was in charge of the country where the composer of Aschenbrodel was a citizen?"


def ev(chunk_id: str, title: str, text: str, hop: int, sub_query: str) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=hop, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query=sub_query)


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
