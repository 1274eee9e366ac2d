from __future__ import annotations

import pytest

from hoprag.pipeline.comparisons import answer_comparison, date_of, parse_comparison
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def ev(title: str, text: str) -> Evidence:
    hit = Hit(chunk_id=title + "#0", doc_id=title, score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=1, step_id="s1", sub_query="")


# Real 2WikiMultihopQA paragraphs (dev record b088d3ca08e211ebbda4ac1f6bf848b6).
FORBIDDEN = ev("Forbidden Ground", "Forbidden Ground is a Hungarian film directed by Pál Gábor. It was released in 1968.")
FREE_GUY = ev(
    "Free Guy",
    "Free Guy is an upcoming 2020 American science fiction action comedy film directed by Shawn Levy, a story by Matt Lieberman.",
)
GABOR = ev("Pál Gábor", "Pál Gábor (2 November 1932 – 21 October 1987) was a Hungarian film director and screenwriter.")
LEVY = ev("Shawn Levy", "Shawn Adam Levy( born July 23, 1968) is a Canadian film director, producer, and actor.")


def test_parse_reads_options_attribute_and_direction():
    c = parse_comparison("Which film whose director is younger, Forbidden Ground or Free Guy?")
    assert c.options == ("Forbidden Ground", "Free Guy") and c.attribute == "birth" and c.later_wins and c.linked
    c = parse_comparison("Which film has the director died earlier, Payment On Demand or My Cousin From Warsaw?")
    assert c.attribute == "death" and not c.later_wins
    assert parse_comparison("Who directed Forbidden Ground?") is None
    assert parse_comparison("Which band is Canadian, Rush or Toto?") is None  # no date direction


def test_dates_of_a_biography():
    assert date_of(GABOR.text, "birth") == (1932, 11, 2)
    assert date_of(GABOR.text, "death") == (1987, 10, 21)
    assert date_of(LEVY.text, "birth") == (1968, 7, 23)
    assert date_of(FORBIDDEN.text, "date") == (1968, 0, 0)


def test_linked_comparison_follows_each_option_to_its_director():
    # Levy (born 1968) is younger than Gábor (born 1932): the answer is Free Guy.
    answer, passage = answer_comparison(
        "Which film whose director is younger, Forbidden Ground or Free Guy?", [FORBIDDEN, FREE_GUY, GABOR, LEVY]
    )
    assert answer == "Free Guy" and passage.title == "Shawn Levy"


def test_direct_comparison_and_undecidable_cases():
    answer, _ = answer_comparison("Which film came out first, Forbidden Ground or Free Guy?", [FORBIDDEN, FREE_GUY])
    assert answer == "Forbidden Ground"
    assert answer_comparison("Which film came out first, Forbidden Ground or Free Guy?", [FORBIDDEN]) is None


def test_a_passage_of_the_options_own_name_is_not_its_director():
    # the 2013 film of the same name names no director with a date; Gábor's page does
    same_name = ev("Forbidden Ground (2013 film)", "Forbidden Ground is a 2013 Australian action drama film.")
    answer, passage = answer_comparison(
        "Which film whose director is younger, Forbidden Ground or Free Guy?", [FORBIDDEN, FREE_GUY, same_name, GABOR, LEVY]
    )
    assert answer == "Free Guy" and passage.title == "Shawn Levy"


def test_options_named_inside_the_question():
    c = parse_comparison("Was Pál Gábor or Shawn Levy born first?")
    assert c.options == ("Pál Gábor", "Shawn Levy") and c.attribute == "birth" and not c.later_wins
    answer, passage = answer_comparison("Was Pál Gábor or Shawn Levy born first?", [LEVY, GABOR])
    assert answer == "Pál Gábor" and passage.title == "Pál Gábor"


def test_options_inside_a_question_end_at_the_first_lowercase_word():
    from hoprag.pipeline.comparisons import inline_options

    assert inline_options("Is Rutgers University or Brown University public?") == (("Rutgers University", "Brown University"), "public")
    assert inline_options("Was Diego Lugano or John R. Gunn born first?") == (("Diego Lugano", "John R. Gunn"), "born first")
    c = parse_comparison("Which band was formed first The Exies or Circus Diablo ?")
    assert c is not None and c.options == ("The Exies", "Circus Diablo") and not c.later_wins


def test_options_may_hold_commas_and_question_marks():
    from hoprag.pipeline.comparisons import options_in

    question = "Which film has the director born earlier, The Adventures Of Priscilla, Queen Of The Desert or Harvest: 3,000 Years?"
    assert options_in(question)[0] == ("The Adventures Of Priscilla, Queen Of The Desert", "Harvest: 3,000 Years")
    question = "Which film has the director who died later, What Will You Do When You Catch Me? or School On Fire?"
    assert options_in(question)[0] == ("What Will You Do When You Catch Me?", "School On Fire")
    assert options_in("Which music group has the most members, DC Talk, or Manchester Orchestra?")[0] == ("DC Talk", "Manchester Orchestra")
    assert options_in("Who directed the film that was shot in or around Leland, North Carolina in 1986") is None
