"""Two-relation kinship questions read along held passages: real 2WikiMultihopQA passages."""

from __future__ import annotations

import pytest

from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.kinship import kin_answer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def ev(chunk_id: str, title: str, text: str, hop: int = 1) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query="q")


MORDAUNT = ev("m4#0", "Sir Mordaunt Martin, 4th Baronet", "Sir Mordaunt Martin, 4th Baronet (c. 1740 – 24 September 1815) "
              "was son of Sir Roger Martin, 3rd Baronet and Sophia Mordaunt.")
ROGER5 = ev("r5#0", "Sir Roger Martin, 5th Baronet", "Sir Roger Martin, 5th Baronet (22 February 1778 - 15 December 1854) "
            "was son of Sir Mordaunt Martin, 4th Baronet and Everilda-Dorothea Smith.")
ROGER3 = ev("r3#0", "Sir Roger Martin, 3rd Baronet", "Sir Roger Martin, 3rd Baronet (c. 1689 - 12 June 1762) was son of "
            "Sir Roger Martin, 2nd Baronet and Anna-Marie Harvey.", hop=2)


def test_a_paternal_grandfather_is_the_fathers_father_read_on_the_fathers_page():
    # the 5th Baronet's page also starts with "Sir Roger Martin": the title with the 3rd is the father's
    fact = kin_answer("Who is Sir Mordaunt Martin, 4Th Baronet's paternal grandfather?", [MORDAUNT, ROGER5, ROGER3])
    assert fact is not None and fact.value == "Sir Roger Martin, 2nd Baronet" and fact.passage is ROGER3
    # the paternal grandmother is the father's mother
    assert kin_answer("Who is the paternal grandmother of Sir Mordaunt Martin, 4th Baronet?", [MORDAUNT, ROGER3]).value == "Anna-Marie Harvey"


def test_without_the_middle_persons_page_there_is_no_kinship_answer():
    assert kin_answer("Who is Sir Mordaunt Martin, 4Th Baronet's paternal grandfather?", [MORDAUNT, ROGER5]) is None
    assert kin_answer("Who directed Boden's Boy?", [MORDAUNT]) is None


def test_the_answer_is_a_span_of_the_claim_it_cites():
    answer = extract_answer("Who is Sir Mordaunt Martin, 4Th Baronet's paternal grandfather?", [MORDAUNT, ROGER5, ROGER3])
    assert answer.text == "Sir Roger Martin, 2nd Baronet"
    assert answer.text in answer.claims[0].text and answer.claims[0].citations[0].chunk_id == "r3#0"
