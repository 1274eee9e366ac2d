"""A sentence that opens with a name and defines it with the noun group the question asks about
answers with that name; "years" is no cue for a date."""

from __future__ import annotations

import pytest

from hoprag.pipeline.answer_candidates import defined_subject_bonus, head_nouns
from hoprag.pipeline.extractive import extract_answer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit

# HotpotQA dev 5a7e689f55429934daa2fc1c (bundled sample)
DADDY_Q = ("Daddy was an American Pit Bull who was integral to the work of what Mexican-American dog behaviorist with over "
           "25 years of canine experience?")
MILLAN = ("Cesar Millan ( ; born César Felipe Millán Favela, ] ; August 27, 1969) is a Mexican-American dog behaviorist with "
          "over 25 years of canine experience.")
DADDY = ("Daddy (1994 ‒ February 19, 2010) was an American Pit Bull Terrier integral to dog trainer Cesar Millan's work and "
         "his television series, \"Dog Whisperer\".")
# MuSiQue train (bundled sample) and HotpotQA dev (bundled sample): definitions that name no answer
FREDERICTON = "The Diocese of Fredericton is a diocese of the Ecclesiastical Province of Canada of the Anglican Church of Canada."
SILVERS = ("Phil Silvers (May 11, 1911 – November 1, 1985) was an American entertainer and comedic actor, known as "
           "\"The King of Chutzpah\".")


def ev(chunk_id: str, title: str, text: str) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id, score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=1, step_id="s1", sub_query=DADDY_Q)


def test_the_name_a_sentence_defines_with_the_asked_noun_group():
    heads = head_nouns(DADDY_Q)
    assert {"dog", "behaviorist"} <= heads
    # the life-span aside is skipped: "Cesar Millan … is a Mexican-American dog behaviorist"
    assert defined_subject_bonus("Cesar Millan", MILLAN, heads) == 1.0
    assert defined_subject_bonus("César Felipe Millán Favela", MILLAN, heads) == 0.0  # not what the sentence opens with


def test_a_definition_whose_own_noun_is_another_kind_names_no_answer():
    # "a diocese of … the Anglican Church": the definition's noun group is "diocese", not "church"
    assert defined_subject_bonus("Diocese of Fredericton", FREDERICTON, head_nouns("Of what church is the Diocese of X?")) == 0.0
    # the question describes the bridge (the actor) in other words; it asks a nickname
    assert defined_subject_bonus("Phil Silvers", SILVERS, {"nickname"}) == 0.0
    assert defined_subject_bonus("Phil Silvers", SILVERS, set()) == 0.0  # no asked noun: no rule


def test_the_final_answer_is_the_defined_name_and_years_ask_no_date():
    evidence = [ev("daddy", "Daddy (dog)", DADDY), ev("millan", "Cesar Millan", MILLAN)]
    answer = extract_answer(DADDY_Q, evidence)
    assert answer.text == "Cesar Millan"  # before: "August 27, 1969", as "years" read as "year"
    assert answer.text in answer.claims[0].text
    # a plan's lookup reads "year" in "years" as before (its bridges, hence retrieval, stay put)
    assert extract_answer(DADDY_Q, evidence, lookup=True).text == "August 27, 1969"
