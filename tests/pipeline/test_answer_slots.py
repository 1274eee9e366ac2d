"""A wh-word that stands where the answer does: the answer follows the words that lead to it."""

from __future__ import annotations

import pytest

from hoprag.pipeline.answer_candidates import named_head
from hoprag.pipeline.answer_slots import slot_bonus, slot_words
from hoprag.pipeline.extractive import extract_answer
from evidence_fixtures import held
from hoprag.records import Evidence

pytestmark = pytest.mark.unit

# HotpotQA dev 5a8268aa55429940e5e1a8aa (bundled sample)
HUGO_Q = "Hugo Rodríguez Romero is a Spanish footballer who plays for a team in the autonomous community of what?"
HUGO = ("Hugo Rodríguez Romero (born 30 December 1989), simply known as Hugo, is a Spanish footballer who plays for FC "
        "Cartagena as a winger.")
CARTAGENA = ("Fútbol Club Cartagena is a Spanish football team based in Cartagena, in the autonomous community of Murcia. "
             "Founded in 1995 it currently plays in Segunda División B, holding home games at \"Estadio Cartagonova\", "
             "with a capacity of 15,105 spectators.")


def ev(chunk_id: str, title: str, text: str) -> Evidence:
    return held(chunk_id, title, text, sub_query=HUGO_Q)


def test_the_word_before_an_in_place_wh_word_is_the_slot():
    assert slot_words(HUGO_Q) == "communit"  # stemmed, as the sentence's words are
    assert slot_words("Grace Krilanovich's first novel was published by a house that was founded in 2005, and is based where?") == "bas"
    assert slot_words("The actress starred in what for seven years?") == "starr"  # three words after "what": still in place
    assert slot_words("What county is Van Hook Township in?") is None  # a fronted wh-word
    assert slot_words("In which country is Mount Sulivan?") is None
    # a relative pronoun far from the end ("the player who has won …") asks nothing
    assert slot_words("Who is the brother of the player who has won the most BBC Sports Personality of the Year awards?") is None


def test_a_candidate_right_after_the_slot_word_fills_it():
    sentence = CARTAGENA.split(". ")[0]
    assert slot_bonus("communit", "Murcia", sentence) == 1.0  # "community of Murcia": one word between
    assert slot_bonus("communit", "Fútbol Club Cartagena", sentence) == 0.0  # before the slot word
    assert slot_bonus("communit", "Cartagena", sentence) == 0.0  # "based in Cartagena" comes before it
    assert slot_bonus(None, "Murcia", sentence) == 0.0


def test_the_final_answer_fills_the_slot_and_a_lookup_reads_as_before():
    evidence = [ev("hugo", "Hugo Rodríguez Romero", HUGO), ev("cartagena", "FC Cartagena", CARTAGENA)]
    answer = extract_answer(HUGO_Q, evidence)
    assert answer.text == "Murcia"  # before: "Fútbol Club Cartagena", the team the question describes
    assert answer.claims[0].citations[0].chunk_id == "cartagena" and answer.text in answer.claims[0].text
    assert extract_answer(HUGO_Q, evidence, lookup=True).text != "Murcia"  # a lookup never reads the slot


# HotpotQA dev 5a8b1a925542997f31a41c6e (bundled sample)
OLIVIER_Q = ("The actor known for his role as \"Freddie\"  in The Deep Blue Sea won the Laurence Olivier Award for his role "
             "in which play?")
HIDDLESTON = ("Thomas William Hiddleston (born 9 February 1981) is an English actor, producer and musical performer. At the "
              "beginning of his career, he appeared in West End theatre productions of \"Cymbeline\" (2007) and \"Ivanov\" "
              "(2008). He won the Laurence Olivier Award for Best Newcomer in a Play for his role in \"Cymbeline\" and was "
              "also nominated for the same award for his role as Cassio in \"Othello\".")


def test_the_question_s_own_name_with_a_tail_is_not_the_answer():
    assert named_head(OLIVIER_Q, "Laurence Olivier Award for Best Newcomer") == 1.0
    assert named_head(OLIVIER_Q, "Laurence Olivier Award") == 0.0  # the name itself: the question's, left to other rules
    assert named_head(OLIVIER_Q, "Cymbeline") == 0.0
    answer = extract_answer(OLIVIER_Q, [ev("hiddleston", "Tom Hiddleston", HIDDLESTON)])
    assert answer.text == "Cymbeline"  # "for his role in "Cymbeline"": the slot, once the award's name is out
    assert answer.text in answer.claims[0].text
