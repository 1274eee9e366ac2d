"""The final question's cast part, read with the performer it names or the one a plan's lookup found."""

from __future__ import annotations

import pytest

import hoprag.pipeline.extractive as extractive
from hoprag.pipeline.cast_chain import asks_part, chain_cast
from evidence_fixtures import held as ev

pytestmark = pytest.mark.unit




# MuSiQue dev 2hop__84971_67668 (bundled sample), the engine's leading evidence
OLAF_Q = ('The actor who plays Count Olaf in "A Series of Unfortunate Events" also plays which character in '
          "Batman Under the Red Hood?")
FIRST = 'The actor who plays Count Olaf in "A Series of Unfortunate Events" also'
OLAF = [
    ev("nph#0", "Neil Patrick Harris",
       "Neil Patrick Harris (born June 15, 1973) is an American actor, writer, producer, comedian, magician, and singer. "
       "On television, he is known for playing the title character on Doogie Howser, M.D. (1989 -- 1993), Barney Stinson "
       "on How I Met Your Mother (2005 -- 2014, for which he was nominated for four Emmy Awards), and Count Olaf in A "
       "Series of Unfortunate Events (2017 -- present).", 1, FIRST),
    ev("redhood#0", "Batman: Under the Red Hood",
       "Batman: Under the Red Hood is a 2010 American animated superhero direct - to - video film produced by Warner "
       "Bros. Animation and released by Warner Home Video. The film stars Bruce Greenwood as Bruce Wayne / Batman, "
       "Jensen Ackles as the Red Hood / Jason Todd, John DiMaggio as the Joker, Neil Patrick Harris as Nightwing / Dick "
       "Grayson, Jason Isaacs as Ra's al Ghul, and Wade Williams as Black Mask.", 2,
       "plays which character in Batman Under the Red Hood"),
    ev("asoue#0", "A Series of Unfortunate Events (TV series)",
       "Neil Patrick Harris as Count Olaf, an actor determined to claim the Baudelaire fortune for himself.", 1, FIRST),
]


def test_questions_that_ask_a_part():
    assert asks_part(OLAF_Q)
    assert asks_part("Who did John Wayne play in True Grit?")
    assert asks_part("The actor playing Barney in How I Met Your Mother played who in Batman Under The Red Hood?")
    # a cast clause inside a question that asks something else ("the sibling of …") asks no part
    assert not asks_part("Who is the sibling of the actress who played Susan Walker in Miracle on 34th street?")
    assert not asks_part("Who played Lex Luthor in Superman IV: The Quest for Peace?")


def test_a_described_performer_is_the_value_the_plan_found():
    fact = chain_cast(OLAF_Q, OLAF)
    assert fact is not None and fact.value == "Nightwing / Dick Grayson"
    assert fact.passage.chunk_id == "redhood#0"
    assert fact.passage.text[fact.offset:].startswith("Nightwing / Dick Grayson")


def test_the_final_answer_reads_the_cast(monkeypatch):
    answer = extractive.extract_answer(OLAF_Q, OLAF)
    assert answer.text == "Nightwing / Dick Grayson"
    assert answer.text in answer.claims[0].text
    assert answer.claims[0].citations[0].chunk_id == "redhood#0"
    monkeypatch.setattr(extractive, "chain_cast", lambda question, evidence: None)
    assert extractive.extract_answer(OLAF_Q, OLAF).text != "Nightwing / Dick Grayson"
    # a plan's lookup never reads it
    assert extractive.extract_answer(OLAF_Q, OLAF, lookup=True).text != "Nightwing / Dick Grayson"


def test_a_named_performer_is_read_directly_and_a_run_on_sentence_cut():
    # True Grit (1969 film), bundled MuSiQue dev 2hop__734057_88628: the part ends its sentence
    grit = ev("grit#0", "True Grit (1969 film)",
              "The screenplay was written by Marguerite Roberts. The film was directed by Henry Hathaway and starred Kim "
              "Darby as Mattie Ross and John Wayne as U.S. Marshal Rooster Cogburn. Wayne won his only Academy Award for "
              "his performance in this film and reprised his role for the 1975 sequel Rooster Cogburn.", 1,
              "Who did John Wayne play in True Grit")
    fact = chain_cast("Who did John Wayne play in True Grit?", [grit])
    assert fact is not None and fact.value == "U.S. Marshal Rooster Cogburn"
    assert chain_cast("Who is the sibling of the actress who played Susan Walker in Miracle on 34th street?", [grit]) is None


def test_a_cast_list_s_next_line_is_no_part_of_the_answer():
    # the same cast written one line a part: the part ends at its line, so the claim (that line) holds it
    grit = ev("grit#1", "True Grit (1969 film)", "John Wayne as U.S. Marshal Rooster Cogburn\nKim Darby as Mattie Ross", 1,
              "Who did John Wayne play in True Grit")
    answer = extractive.extract_answer("Who did John Wayne play in True Grit?", [grit])
    assert answer.text == "U.S. Marshal Rooster Cogburn"
    assert answer.claims[0].text == "John Wayne as U.S. Marshal Rooster Cogburn"
