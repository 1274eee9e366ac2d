"""What a plan's lookup asks: the role of its fact and the place noun its value must be, read on
real MuSiQue passages, and how the value bridges weigh them."""

from __future__ import annotations

import pytest

from hoprag.pipeline.lookup_roles import asked_place_noun, lookup_role, place_noun_fit, role_value
from hoprag.pipeline.value_bridges import found_values
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def passage(chunk_id: str, title: str, text: str, rank: int = 1, step_id: str = "s1") -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id, score=10.0 - rank, rank=rank, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=1, step_id=step_id, sub_query="")


# MuSiQue train 3hop1__144142_643936_36283 (Steven Blankaart >> born in Middelburg)
BLANKAART = passage(
    "blankaart", "Steven Blankaart",
    "Steven Blankaart (24 October 1650, Middelburg – 23 February 1704, Amsterdam) was a Dutch physician, "
    "iatrochemist, and entomologist, who worked on the same field as Jan Swammerdam. Blankaart proved the "
    "connection between arteries and veins.",
)
# MuSiQue dev 2hop: "What is the seat of the county where Van Hook Township is located?"
VAN_HOOK = passage(
    "van-hook", "Van Hook Township, Mountrail County, North Dakota",
    "Van Hook Township is a township in Mountrail County in the U.S. state of North Dakota. At the time of "
    "the 2000 Census, its population was 42, and estimated to be 41 as of 2009.",
)


@pytest.mark.parametrize(
    ("asked", "role", "noun"),
    [
        ("city where Steven Blankaart was born", "birth_place", "city"),
        ("birthplace of", "birth_place", ""),
        ("state where the writer died", "death_place", "state"),
        ("country in which is a citizen", "nationality", "country"),
        ("country where is located", "country", "country"),
        ("father of Edward Baring", "father", ""),
        ("spouse of", "spouse", ""),
        ("state where lived in", "residence", "state"),
        ("county where Van Hook Township is located", None, "county"),  # a county is read by its shape
        ("performers of Brother", None, ""),
        ("When did refuse to surrender Namibia", None, ""),  # a date's lookup asks no place role
    ],
)
def test_a_lookup_says_its_role_and_place_noun(asked: str, role: str | None, noun: str) -> None:
    assert lookup_role(asked) == role
    assert asked_place_noun(asked) == noun


def test_a_role_value_is_cut_to_the_part_the_noun_asks() -> None:
    text = "Jane Roe (born 3 May 1950 in Rochester, New York) is an American poet."
    assert role_value(text, "birth_place", "city") == ("Rochester", text.index("Rochester"))
    assert role_value(text, "birth_place", "state") == ("New York", text.index("New York"))
    # a life span's place slot, where the passage says no "born in"
    assert role_value(BLANKAART.text, "birth_place", "city") == ("Middelburg", BLANKAART.text.index("Middelburg"))
    assert role_value("He was a painter.", "birth_place", "city") is None


def test_where_someone_lived_is_cut_to_the_state_asked() -> None:
    # MuSiQue train 4hop1__709382: "the state where Hello Love's performer lived"
    text = 'Snow moved to Nashville, Tennessee, in 1949, and "Hank Snow, the Singing Ranger" began recording.'
    assert role_value(text, "residence", "state") == ("Tennessee", text.index("Tennessee"))
    assert role_value(text, "residence", "city") == ("Nashville", text.index("Nashville"))


def test_the_shape_of_a_value_fits_the_place_noun_asked() -> None:
    assert place_noun_fit("Mountrail County", "Van Hook Township is a township in ", "county") == 1.5
    assert place_noun_fit("North Dakota", "a township in Mountrail County in the U.S. state of ", "state") == 1.5
    assert place_noun_fit("Tripp County", "a city in ", "state") == 0.5  # another kind of place
    assert place_noun_fit("Mexico", "a party in ", "country") == 1.5  # a country's name
    assert place_noun_fit("Mexico", "a party in ", "city") == 0.5
    assert place_noun_fit("Stanley", "the courthouse in ", "city") == 1.0  # the shape says nothing
    assert place_noun_fit("Stanley", "in ", "") == 1.0  # no place noun asked
    # a country is no state, whatever its last word; a river or a range is no state either
    assert place_noun_fit("United States", "the southeastern ", "state") == 0.5
    assert place_noun_fit("United States", "in the ", "country") == 1.5
    assert place_noun_fit("Mississippi River", "the ", "state") == 0.5


def test_the_born_lookup_reads_the_birthplace_from_the_anchors_passage() -> None:
    found = found_values("city where Steven Blankaart was born", [BLANKAART],
                         question="When did the country where the city where Steven Blankaart was born is located "
                                  "refuse to surrender Namibia?")
    # the life span's birthplace (3.0) in the anchor's own passage (weight 3 x (0.5 + 0.5)) = 9.0,
    # ahead of Amsterdam, the death place the same parenthesis names
    assert found[0].value == "Middelburg" and found[0].score == pytest.approx(9.0)
    assert found[0].score > 2 * next(c.score for c in found if c.value == "Amsterdam")


def test_a_county_is_asked_so_the_county_leads_the_state() -> None:
    found = found_values("county where Van Hook Township is located", [VAN_HOOK],
                         question="What is the seat of the county where Van Hook Township is located?")
    assert found[0].value == "Mountrail County"
    state = next(c for c in found if c.value == "North Dakota")
    assert found[0].score > 2 * state.score


def test_a_person_role_read_as_an_organisation_looks_past_it() -> None:
    # MuSiQue dev "What team was Anna Benson's husband on?": the spouse follows the league he played in
    text = ("Anna Benson (born February 12, 1976) is an American model, former stripper, and ex-wife of former "
            "Major League Baseball pitcher Kris Benson.")
    assert role_value(text, "spouse", "") == ("Kris Benson", text.index("Kris Benson"))
    assert role_value("She was the wife of the Acme Company.", "spouse", "") is None
