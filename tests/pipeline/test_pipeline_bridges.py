from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.pipeline.bridges import extract_bridges, title_key
from hoprag.pipeline.roles import without_subject

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[1] / "data"
# A real HotpotQA paragraph ("Nobody's Hero", a supporting fact of the first slice record) and its question.
_RECORD = json.loads((DATA / "hotpotqa_dev_slice.json").read_text(encoding="utf-8"))[0]
NOBODYS_HERO = "".join(dict(_RECORD["context"])["Nobody's Hero"])
QUESTION = (
    'Which Canadian rock band released a song called "Counterparts" and had a drummer who was inducted '
    "into the Modern Drummer Hall of Fame?"
)


def values(candidates):
    return [c.value for c in candidates]


def test_bridge_entity_of_a_real_paragraph_ranks_first():
    found = extract_bridges(NOBODYS_HERO, question=QUESTION, own_title="Nobody's Hero")
    assert values(found)[0] == "Rush"
    assert "Neil Peart" in values(found)


def test_values_the_question_already_names_are_not_bridges():
    found = values(extract_bridges(NOBODYS_HERO, question=QUESTION, own_title="Nobody's Hero", limit=20))
    assert "Counterparts" not in found and "Canadian" not in found
    assert "Nobody's Hero" not in found  # the passage's own title is not a bridge


def test_a_candidate_that_names_a_document_is_preferred():
    plain = values(extract_bridges(NOBODYS_HERO, question=QUESTION, own_title="Nobody's Hero"))
    linked = values(
        extract_bridges(NOBODYS_HERO, question=QUESTION, own_title="Nobody's Hero", known_titles={"neil peart"})
    )
    assert plain.index("Neil Peart") > 0
    assert linked[0] == "Neil Peart"


TWF = ("Thumb Wrestling Federation: TWF is an American children's live-action television series. It aired on "
       "Cartoon Network in the United States, YTV in Canada, and BBC One, BBC Two and the CBBC in the United Kingdom.")


def test_a_name_ending_in_the_noun_the_question_asks_for_keeps_its_novelty():
    # HotpotQA: the network is the bridge, and its name ends in the question's own word "network"
    question = "Thumb Wrestling Federation is on a network founded by who?"
    plain = extract_bridges(TWF, question=question, own_title="Thumb Wrestling Federation", limit=10)
    typed = extract_bridges(TWF, question=question, own_title="Thumb Wrestling Federation", limit=10, type_nouns=True)
    score = {c.value: c.score for c in plain}
    typed_score = {c.value: c.score for c in typed}
    # novelty 1/2 ("network" is the question's) becomes 1/1: the score doubles, the others stay
    assert typed_score["Cartoon Network"] == pytest.approx(2 * score["Cartoon Network"])
    assert typed_score["United States"] == score["United States"]
    assert "Cartoon Network" not in values(plain[:3]) and "Cartoon Network" in values(typed[:3])
    # a capitalised question word is a name it gives, not a noun it asks for
    named = extract_bridges(TWF, question="Is Cartoon Network on air?", own_title="Thumb Wrestling Federation",
                            limit=10, type_nouns=True)
    assert "Cartoon Network" not in values(named)


def test_a_bridge_query_drops_the_name_of_the_passage_it_came_from():
    question = "Thumb Wrestling Federation is on a network founded by who?"
    assert without_subject(question, "Thumb Wrestling Federation", "Cartoon Network") == "is on a network founded by who?"
    # a disambiguation is no part of the name: "film" stays a word the hop asks about
    asked = "The Black Market (Film) Which film has the director who is older"
    assert without_subject(asked, "The Black Market (film)", "Yoon Je-kyoon") == "The (Film) Which film has the director who is older"
    # words the bridge shares with the subject stay, and a query of nothing but the name is kept whole
    assert without_subject("Where was Rush formed?", "Rush (band)", "Rush Tour") == "Where was Rush formed?"
    assert without_subject("Thumb Wrestling Federation", "Thumb Wrestling Federation", "TWF") == "Thumb Wrestling Federation"
    # a title the question does not name keeps the question whole: "wipe" is the question's own word
    wipe = "Which wipe method is required when the gateways used under Project Wren are decommissioned?"
    assert without_subject(wipe, "Device Decommissioning and Data Wipe Standard (POL-20)", "Hardware Operations") == wipe


def test_identifiers_and_dates_have_their_own_kinds():
    text = "Project Orion acquires Plan KP-214 (Tern Pro) for 400 aerial sensor units from 1 March 2026."
    found = {c.value: c.kind for c in extract_bridges(text, question="Which plan did Project Orion buy?", limit=10)}
    assert found["KP-214"] == "identifier"
    assert found["1 March 2026"] == "date"
    assert "Project Orion" not in found


def test_excluded_values_are_skipped_and_limit_is_respected():
    found = extract_bridges(NOBODYS_HERO, question=QUESTION, exclude=("Rush",), limit=2)
    assert len(found) == 2 and "Rush" not in values(found)


@pytest.mark.parametrize(
    "title, key",
    [
        ("Forbidden Ground (2013 film)", "forbidden ground"),
        ("The von Trapps", "von trapps"),
        ("Pál Gábor", "pal gabor"),
        ("  A Hard Day's Night (film) ", "hard day's night"),
    ],
)
def test_title_key(title, key):
    assert title_key(title) == key
