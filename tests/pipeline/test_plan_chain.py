"""Where a plan's chain ends: a found value's passage after the first lookup's, and possessive lookups."""

from __future__ import annotations

import pytest

import hoprag.pipeline.extractive as extractive
from hoprag.pipeline.bridge_mentions import bridge_spans, found_bridges
from hoprag.pipeline.plan_chain import led_chain_end, plan_chain_end, same_page
from evidence_fixtures import held as ev

pytestmark = pytest.mark.unit




# MuSiQue train 2hop__704058_599261 (bundled sample), as the engine ranked it: the first lookup's passage
# (Silverton's state), then the passage its found value Colorado led to, which the question also names
HUMBOLDT_Q = "Humboldt Peak, in the state where Silverton is located, is part of what mountain range?"
FISCHER = ev("fischer#0", "Emil Fischer (cartographer)",
             "Emil B. Fischer (1838 or 1839 in Dresden, Saxony – September 23, 1898 in Silverton, Colorado) published six "
             "detailed maps of the San Juan area of southwestern Colorado between 1883 and 1898. A surveyor’s son, he came "
             "to America around 1872.", 1, "state where Silverton is located,")
HUMBOLDT = ev("humboldt#0", "Humboldt Peak (Colorado)",
              "Humboldt Peak is a high mountain summit of the Crestones in the Sangre de Cristo Range of the Rocky "
              "Mountains of North America. The fourteener is located in the Sangre de Cristo Wilderness of San Isabel "
              "National Forest, south-southwest (bearing 204°) of the Town of Westcliffe in Custer County, Colorado, "
              "United States. The Crestones are a cluster of high summits in the Sangre de Cristo Range, comprising "
              "Crestone Peak, Crestone Needle, Kit Carson Peak, Challenger Point, Humboldt Peak, and Columbia Point.",
              2, "Humboldt Peak, in is part of what mountain range")
GRANITE = ev("granite#0", "Granite Peak (Humboldt County, Nevada)",
             "Granite Peak is the highest mountain in both the Santa Rosa Range and Humboldt County, in Nevada, United "
             "States.", 2, "Humboldt Peak, in is part of what mountain range")


def test_the_passage_a_found_value_led_to_is_the_chain_end():
    # Colorado, a value the first lookup found in Fischer's passage, is named in Humboldt Peak's
    assert "Colorado" in found_bridges(HUMBOLDT_Q, [FISCHER, HUMBOLDT])[2]
    assert led_chain_end(HUMBOLDT_Q, [FISCHER, HUMBOLDT], {"fischer#0"}) == {"humboldt#0"}


def test_a_second_passage_that_names_no_found_value_is_no_chain_end():
    # Granite Peak's passage names Nevada, none of Dresden, Durango, Colorado
    assert led_chain_end(HUMBOLDT_Q, [FISCHER, GRANITE], {"fischer#0"}) == {"fischer#0"}
    # nor is a lead of one hop, or the question's own words as a lookup
    assert led_chain_end(HUMBOLDT_Q, [FISCHER, ev("f#1", "Silverton", "Silverton, Colorado.", 1, FISCHER.sub_query)], {"fischer#0"}) == {"fischer#0"}


def test_the_answer_is_read_in_the_passage_the_value_led_to(monkeypatch):
    answer = extractive.extract_answer(HUMBOLDT_Q, [FISCHER, HUMBOLDT])
    assert answer.text == "Sangre de Cristo Range"
    assert answer.claims[0].citations[0].chunk_id == "humboldt#0"
    assert answer.text in answer.claims[0].text
    # without the rule the question's naming Humboldt Peak makes Fischer's passage the chain end
    monkeypatch.setattr(extractive, "led_chain_end", lambda question, evidence, chain_end: chain_end)
    assert extractive.extract_answer(HUMBOLDT_Q, [FISCHER, HUMBOLDT]).text != "Sangre de Cristo Range"


def test_a_lookup_reads_as_before(monkeypatch):
    # a plan's lookup never takes the rule, so the bridges it finds (and retrieval) do not move
    with_rule = extractive.extract_answer(HUMBOLDT_Q, [FISCHER, HUMBOLDT], lookup=True)
    monkeypatch.setattr(extractive, "led_chain_end", lambda question, evidence, chain_end: chain_end)
    assert extractive.extract_answer(HUMBOLDT_Q, [FISCHER, HUMBOLDT], lookup=True) == with_rule


def test_a_possessive_unfolded_by_the_planner_is_still_the_question_s_words():
    # MuSiQue train 4hop1__709382_146811_31223_91015: "Hello Love's performer" is looked up as
    # "performer of Hello Love"; the four lookups are the plan's, so the deepest passage (Publix) ends it
    question = ("How many Publix stores are in the state that borders the east of the state where Hello Love's "
                "performer lived in when he died?")
    chain = [
        ev("hello#0", "Hello Love (song)", '"Hello Love" is a 1974 single by Hank Snow.', 1, "performer of Hello Love"),
        ev("snow#0", "Hank Snow", "Snow moved to Nashville, Tennessee, in 1949.", 2, "state where lived in"),
        ev("tn#0", "Tennessee", "Tennessee is bordered by Kentucky and Virginia to the north, North Carolina to the east.",
           3, "state that borders the east of"),
        ev("publix#0", "Publix", "Publix operates throughout the Southeastern United States, with locations in Florida "
           "(785), Georgia (186), Alabama (68), South Carolina (58), Tennessee (42), North Carolina (35), and Virginia (8).",
           4, "How many Publix stores are in when he died"),
    ]
    assert plan_chain_end(question, chain) == {"publix#0"}


def test_found_bridges_are_read_once_and_shared_read_only():
    evidence = [FISCHER, HUMBOLDT]
    first = found_bridges(HUMBOLDT_Q, evidence)
    assert found_bridges(HUMBOLDT_Q, list(evidence)) is first
    with pytest.raises(TypeError):
        first[9] = ("x",)  # type: ignore[index]
    assert bridge_spans("The Crestones are in Colorado.", ()) == []
    assert bridge_spans("The Crestones are in Colorado.", ("Durango", "Colorado")) == [(4, 5)]


# MuSiQue dev 2hop__96414_47902 (bundled sample): the chain ends on The Bourne Legacy's page, whose next
# paragraph (another chunk, the same title and hop) states who plays the title character
BOURNE_Q = "Who is the actor who plays the title character of The Bourne Ultimatum?"
BOURNE_LOOKUP = "title character of The Bourne Ultimatum"
BOURNE = [
    ev("ultimatum#0", "The Bourne Ultimatum",
       'The Bourne Ultimatum is the third Jason Bourne novel written by Robert Ludlum and a sequel to "The Bourne '
       'Supremacy" (1986).', 1, BOURNE_LOOKUP),
    ev("legacy#0", "The Bourne Legacy (film)",
       "Unlike the novel, which features Jason Bourne as the principal character, the film centers on black ops agent "
       "Aaron Cross (played by Jeremy Renner), an original character. In addition to Renner, the film stars Rachel "
       "Weisz and Edward Norton.", 1, BOURNE_LOOKUP),
    ev("legacy#1", "The Bourne Legacy (film)",
       "The titular character Jason Bourne does not appear in The Bourne Legacy, because actor Matt Damon chose not to "
       "return for the fourth film, due to Paul Greengrass not directing.", 1, BOURNE_LOOKUP),
]


def test_the_chain_end_takes_the_rest_of_its_page(monkeypatch):
    assert same_page(BOURNE, {"legacy#0"}) == {"legacy#0", "legacy#1"}
    assert same_page(BOURNE, set()) == set()
    answer = extractive.extract_answer(BOURNE_Q, BOURNE)
    assert answer.text == "Matt Damon"
    assert answer.claims[0].citations[0].chunk_id == "legacy#1"
    monkeypatch.setattr(extractive, "same_page", lambda evidence, chain_end: chain_end)
    assert extractive.extract_answer(BOURNE_Q, BOURNE).text != "Matt Damon"
