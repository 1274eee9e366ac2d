"""Who played whom, read from the cast sentences of real MuSiQue passages."""

from __future__ import annotations

import pytest

from hoprag.pipeline.cast import CastAsk, asked_cast, cast_answer, read_cast
from hoprag.pipeline.value_bridges import found_values
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def passage(chunk_id: str, title: str, text: str, rank: int = 1) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id, score=10.0 - rank, rank=rank, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=1, step_id="s1", sub_query="")


# MuSiQue dev 2hop__85713_84469 and 2hop__56851_343058 (the films' own passages)
THELMA = passage("thelma", "Thelma & Louise",
                 "Thelma & Louise is a 1991 American road crime film directed by Ridley Scott and written by Callie "
                 "Khouri. It stars Geena Davis as Thelma and Susan Sarandon as Louise, two friends who embark on a road "
                 "trip with unforeseen consequences.")
SHREK = passage("shrek-2", "Shrek 2",
                "Sometime after the first film, Shrek, Donkey and Fiona go to visit Fiona's parents (voiced by Andrews "
                "and Cleese), while Shrek and Donkey discover that a greedy Fairy God Mother (voiced by Saunders) and "
                "her son Prince Charming plot against them.")
TRUE_GRIT = passage("true-grit", "True Grit (1969 film)",
                    "The film was directed by Henry Hathaway and starred Kim Darby as Mattie Ross and John Wayne as "
                    "U.S. Marshal Rooster Cogburn.")


@pytest.mark.parametrize(
    ("words", "ask"),
    [
        ("actress who played Thelma in Thelma and Louise", CastAsk("performer", "Thelma", "Thelma and Louise")),
        ("actress who played the fairy god mother in Shrek 2", CastAsk("performer", "fairy god mother", "Shrek 2")),
        ("The actor who plays copper in Fox and the Hound", CastAsk("performer", "copper", "Fox and the Hound")),
        ("Who did John Wayne play in True Grit?", CastAsk("part", "John Wayne", "True Grit")),
        ("What character does Neil Patrick Harris play in Batman Under the Red Hood?",
         CastAsk("part", "Neil Patrick Harris", "Batman Under the Red Hood")),
        ("Who has played for both West Ham Ajax and", None),  # a team's player, no part
        ("performer of Night Crawler", None),
    ],
)
def test_what_a_cast_question_asks(words: str, ask: CastAsk | None) -> None:
    assert asked_cast(words) == ask


def test_the_performer_of_a_part_in_each_shape() -> None:
    assert read_cast(THELMA.text, asked_cast("actress who played Thelma in Thelma and Louise")) == (
        "Geena Davis", THELMA.text.index("Geena Davis"))
    # the part matched case aside, the performer named after "voiced by"
    assert read_cast(SHREK.text, asked_cast("actress who played the fairy god mother in Shrek 2"))[0] == "Saunders"
    # "X plays Y", "X reprising his role as Y"
    assert read_cast("Neil Patrick Harris plays Barney Stinson, a womanizer.",
                     CastAsk("performer", "Barney", "How I Met Your Mother"))[0] == "Neil Patrick Harris"
    assert read_cast("with Will Arnett reprising his role as Batman for the film",
                     CastAsk("performer", "Batman", "The Lego Batman Movie"))[0] == "Will Arnett"
    # a cast list whose line breaks were lost: the name after the last initial
    listed = "John Payne as Frederick M. Natalie Wood as Susan Walker"
    assert read_cast(listed, CastAsk("performer", "Susan Walker", "Miracle on 34th Street"))[0] == "Natalie Wood"
    # a cast list read as one line: the run before "as Copper" holds the previous part, then the name
    listed = "Mickey Rooney as Tod Kurt Russell as Copper Pearl Bailey as Big Mama"
    assert read_cast(listed, asked_cast("The actor who plays copper in Fox and the Hound"))[0] == "Kurt Russell"
    # a part without a word matches nothing
    assert read_cast("Natalie Wood as Susan", CastAsk("performer", "!!!", "x")) is None
    # a part described, not named, is not guessed
    assert read_cast(THELMA.text, CastAsk("performer", "the little girl", "Thelma & Louise")) is None


def test_the_part_of_a_performer_is_a_span_without_the_sentences_full_stop() -> None:
    value, offset = read_cast(TRUE_GRIT.text, asked_cast("Who did John Wayne play in True Grit?"))
    assert value == "U.S. Marshal Rooster Cogburn" and TRUE_GRIT.text[offset:offset + len(value)] == value
    fact = cast_answer("Who did John Wayne play in True Grit?", [THELMA, TRUE_GRIT])
    assert fact is not None and fact.passage is TRUE_GRIT and fact.value == value


def test_a_lookup_for_a_performer_follows_the_cast_not_the_director() -> None:
    found = found_values("actress who played Thelma in Thelma and Louise", [THELMA],
                         question="In A League of Their Own, who played the husband of the actress who played Thelma "
                                  "in Thelma and Louise?")
    # the cast's performer (3.0) in a passage that casts the part asked, weighed as the anchor's own
    # (3 x (0.5 + 0.5)): 9.0, far above the director and the writer, bare names after "by"
    assert found[0].value == "Geena Davis" and found[0].score == pytest.approx(9.0)
    assert {"Ridley Scott", "Callie Khouri"} <= {c.value for c in found[1:]}
