"""A final answer's number is the one its sentence names beside the bridge an earlier hop found."""

from __future__ import annotations

import pytest

from hoprag.pipeline.bridge_mentions import bridge_spans, found_bridges, nearest_to_bridge
from hoprag.pipeline.extractive import extract_answer
from evidence_fixtures import held as ev

pytestmark = pytest.mark.unit




# MuSiQue dev 2hop__455392_40315 (bundled sample): the first lookup's passage and the second's sentence
CAMPUSES_Q = "How many campuses are there in the institution that Desert Studies Center is a part of?"
DESERT = ev("dsc#0", "Desert Studies Center",
            "The Desert Studies Center (DSC) is a field station of the California State University located in Zzyzx, "
            "California, United States in the Mojave Desert.", 1, "institution that Desert Studies Center is a part of")
SOCAL = ev("socal#0", "Southern California",
           "Amongst these include 5 University of California campuses (Irvine, Los Angeles, Riverside, Santa Barbara, "
           "and San Diego); 12 California State University campuses (Bakersfield, Channel Islands, Dominguez Hills, "
           "Fullerton, Los Angeles, Long Beach, Northridge, Pomona, San Bernardino, San Diego, San Marcos, and San Luis "
           "Obispo).", 2, "How many campuses are there in")

# MuSiQue train 2hop__732691_37939 (bundled sample): the Olympiad was held in Thessaloniki
TEUS_Q = "What amount of TEUs did the location where the 26th Chess Olympiad occur handle in 2010?"
OLYMPIAD = ev("olympiad#0", "26th Chess Olympiad",
              "The 26th Chess Olympiad, organized by FIDE and comprising an open and a women's tournament, as well as "
              "several other events designed to promote the game of chess, took place between November 18 and December "
              "5, 1984, in Thessaloniki, Greece.", 1, "location where the 26th Chess Olympiad occur handle in 2010")
PORTS = ev("ports#0", "Economy of Greece",
           "In 2010 Piraeus handled 513,319 TEUs, followed by Thessaloniki, which handled 273,282 TEUs.", 2,
           "What amount of TEUs did")


def test_the_number_beside_the_found_institution_answers():
    # both numbers count campuses; the first lookup found California State University, so 12, not 5
    answer = extract_answer(CAMPUSES_Q, [DESERT, SOCAL])
    assert answer.text == "12"
    assert answer.text in answer.claims[0].text
    assert answer.claims[0].citations[0].chunk_id == "socal#0"


def test_the_number_beside_the_found_city_answers():
    answer = extract_answer(TEUS_Q, [OLYMPIAD, PORTS])
    assert answer.text == "273,282"
    assert answer.text in answer.claims[0].text


def test_a_lookup_reads_as_before():
    # a plan's lookup never takes the final answer's rules (its bridges, hence retrieval, stay put):
    # it reads "What amount" as a name, as it did before the rule (the first name of the best sentence)
    assert extract_answer(TEUS_Q, [OLYMPIAD, PORTS], lookup=True).text == "Piraeus"
    assert extract_answer(CAMPUSES_Q, [DESERT, SOCAL], lookup=True).text == "5"


def test_found_bridges_are_the_plan_lookups_values_and_a_bridge_hops_query():
    found = found_bridges(CAMPUSES_Q, [DESERT, SOCAL])
    assert found[2][0] == "California State University"  # the value ranker's best for the first lookup
    # a hop whose query is no part of the question searched that value ("Eugene V. Debs")
    debs = ev("debs#0", "Eugene V. Debs", "Debs ran for president five times.", 2, "Eugene V. Debs")
    assert found_bridges("What party was the socialist who ran for president in 1912 a member of?",
                         [ev("q#0", "1912 election", "Debs ran.", 1, "socialist who ran for president in 1912"), debs]
                         )[2] == ("Eugene V. Debs",)


def test_the_best_ranked_bridge_named_is_the_one_read():
    sentence = SOCAL.text
    # "California State University" is words 18-20; the lesser "California" (also in "University of
    # California", words 6-8) is not read once the better value is named
    assert bridge_spans(sentence, ["California State University", "California"]) == [(18, 21)]
    assert bridge_spans(sentence, ["Zzyzx"]) == []


def test_nearest_candidate_and_the_bridge_itself():
    sentence = PORTS.text
    spans = bridge_spans(sentence, ["Greece", "Thessaloniki"])  # Greece is not named: Thessaloniki is read
    assert nearest_to_bridge(sentence, ["513,319", "273,282"], spans) == {"273,282"}  # 2 words apart, not 3
    # a candidate that is (or holds) the bridge is never beside it
    assert nearest_to_bridge(sentence, ["Thessaloniki"], spans) == set()
    assert nearest_to_bridge(sentence, ["513,319"], []) == set()


def test_the_number_in_the_bracket_after_the_bridge_is_its_own():
    # MuSiQue train 4hop1__709382 (the Publix page): both 42 and 35 touch "North Carolina"; 35 is its bracket
    sentence = ("Publix operates throughout the Southeastern United States, with locations in Florida (785), Georgia (186), "
                "Tennessee (42), North Carolina (35), and Virginia (8).")
    bridges = bridge_spans(sentence, ["North Carolina"])
    assert nearest_to_bridge(sentence, ["785", "186", "42", "35", "8"], bridges) == {"35"}
