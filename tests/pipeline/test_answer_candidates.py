"""The final answer's candidate rules (:mod:`hoprag.pipeline.answer_candidates`), each on the sentence
of a MuSiQue or 2WikiMultihopQA passage it was written for, and the answerer that uses them."""

from __future__ import annotations

import pytest

from hoprag.pipeline.answer_candidates import (
    AnswerReading,
    asked_kinds,
    clean_candidate,
    context_fit,
    counted_noun_bonus,
    head_noun_bonus,
    head_nouns,
    life_slot_bonus,
    relation_proximity,
    relation_terms,
)
from hoprag.pipeline.extractive import extract_answer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit

IOWA = "On December 28, 1846, Iowa became the 29th state in the Union when President James K. Polk signed Iowa's admission bill into law."
HINAGDANAN = "Hinagdanan Cave is a cave in the municipality of Dauis on Panglao Island, in Bohol Province, in the Philippines."
SERBIA = "In Serbia, the Serbian language is the official one, while both Serbian and Croatian are official in the province of Vojvodina."
LAKE = "It is located entirely within the county of Cumbria, and all the land in England higher than 3,000 feet lies within the National Park."
STAITHES = ("The group contained renowned artists such as Laura Knight (who kept a studio in the village with her husband and "
            "fellow painter Harold Knight), Frederick W. Jackson, Edward E. Anderson and James W. Booth.")
COSTA = "Lorenzo Costa the Younger (1537–1583) was an Italian painter of the Renaissance period, active in his native city of Mantua."
SALIMA = "Salima Machamba (Fomboni, 1 November 1874 – Pesmes, 7 August 1964) was sultan of Mohéli (1888–1909)."


def ev(chunk_id: str, title: str, text: str, hop: int = 1) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id, score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query="q")


def test_the_opening_wh_word_says_the_kind_a_later_when_does_not():
    assert asked_kinds("Who was president when the area where Intrepid Wind Farm is located became a state?") == (
        "entity", "quoted", "identifier")
    assert asked_kinds("What amount of TEUs did the port handle in 2010?") == ("number",)
    # MuSiQue train 4hop1__709382: "How many …" asks a number, whatever "when" comes later
    assert asked_kinds("How many Publix stores are in the state where the singer lived in when he died?") == ("number",)
    assert asked_kinds("In which years did the war occur?") == ("date",)
    assert asked_kinds("When did Iowa become a state?") == ("date",)
    assert asked_kinds("What is the seat of the county where Van Hook Township is located?") is None


def test_the_asked_noun_ends_the_name_that_answers():
    assert head_nouns("The territory containing Bansaan Island is located at which island?") == {"island"}
    assert head_nouns("What political party was the socialist candidate part of?") == {"political", "party"}
    heads = head_nouns("The territory containing Bansaan Island is located at which island?")
    assert head_noun_bonus("Panglao Island", HINAGDANAN, heads) == 1.0
    assert head_noun_bonus("Bohol Province", HINAGDANAN, heads) == -1.0  # a province, not the island asked
    assert head_noun_bonus("Cumbria", LAKE, head_nouns("What county is the Lake District in?")) == 1.0  # "the county of Cumbria"


def test_another_place_noun_says_the_candidate_is_not_the_asked_place():
    heads = head_nouns("In which country is the province where Serbian and Croatian are both official?")
    assert head_noun_bonus("Vojvodina", SERBIA, heads) == -1.0  # "the province of Vojvodina"
    assert head_noun_bonus("Serbia", SERBIA, heads) == 1.0  # a country the nationality table names


def test_a_country_asked_is_a_country_the_nationality_table_names():
    heads = head_nouns("What country was the author of Brand a citizen of?")
    sentence = "Nora Bergliot Ibsen (born 1951) is a Norwegian theatrical producer, noted for the 2006 Ibsen Year, Norway's major anniversary."
    assert head_noun_bonus("Norway", sentence, heads) == 1.0
    assert head_noun_bonus("Ibsen Year", sentence, heads) == 0.0
    mcrae = "McRae is a city in White County, Arkansas, United States."
    heads = head_nouns("In which country is Midway, in the same county as McRae?")
    assert head_noun_bonus("United States", mcrae, heads) == 1.0
    assert head_noun_bonus("White County", mcrae, heads) == -1.0


def test_the_counted_noun_follows_the_number():
    question = "How many campuses does the university have?"
    sentence = "The university was founded in 1857 and has 12 campuses across the state."
    assert counted_noun_bonus(question, "12", sentence) == 1.0
    assert counted_noun_bonus(question, "1857", sentence) == 0.0
    teu = "In 2010 Piraeus handled 513,319 TEUs, followed by Thessaloniki, which handled 273,282 TEUs."
    assert counted_noun_bonus("What amount of TEUs did the port handle in 2010?", "273,282", teu) == 1.0
    assert counted_noun_bonus("What amount of TEUs did the port handle in 2010?", "2010", teu) == 0.0
    # the noun group's last word is what is counted: "Publix stores", not the "Publix" a founding year precedes
    founded = "Founded in 1930 by George W. Jenkins, Publix is a private corporation with 1,200 stores."
    assert counted_noun_bonus("How many Publix stores are in North Carolina?", "1930", founded) == 0.0
    assert counted_noun_bonus("How many Publix stores are in North Carolina?", "1,200", founded) == 1.0


def test_relation_words_count_stemmed_and_paraphrased():
    terms = relation_terms("Who was married to the creator of Ruby Loftus Screwing a Breech Ring?")
    assert {"husband", "wife", "spouse"} <= terms
    assert relation_proximity(STAITHES, "Harold Knight", terms) == 1  # "… her husband and fellow painter Harold Knight"
    assert relation_proximity(STAITHES, "James W. Booth", terms) == 0
    # "marry" meets "married" by its stem
    sentence = "According to the Book of Genesis, Abraham married Keturah after the death of his first wife, Sarah."
    assert relation_proximity(sentence, "Keturah", {"marry", "death"}) == 2


def test_the_words_around_a_candidate_say_its_kind():
    assert context_fit("Mantua", COSTA, "place") == 1.0  # "the city of Mantua"
    assert context_fit("Lorenzo Costa the Younger", COSTA, "place") == -1.0  # a life span follows a person
    assert context_fit("President James K. Polk", IOWA, "person") == 1.0
    assert context_fit("29th", IOWA, "person") == -1.0
    assert context_fit("Union", IOWA, "person") == 0.0


def test_a_life_spans_place_slot_answers_where_born():
    assert life_slot_bonus("Where was the wife of Camille Paule born?", "Fomboni", SALIMA) == 1.0
    assert life_slot_bonus("Where was the wife of Camille Paule born?", "Pesmes", SALIMA) == 0.0
    assert life_slot_bonus("Where did the wife of Camille Paule die?", "Pesmes", SALIMA) == 1.0
    assert context_fit("Fomboni", SALIMA, "place") == 1.0


def test_a_candidate_is_cleaned_to_the_name_and_stays_a_span():
    assert clean_candidate("In Serbia", SERBIA) == "Serbia"
    assert clean_candidate("Meanwhile", "Meanwhile, the Socialist Party renominated Eugene V. Debs.") is None
    assert clean_candidate("Strikingly", "Strikingly, Ashkenazi Jews can be grouped in one cohort.") is None
    assert clean_candidate("Incumbent Thomas Bach", "Olympic rings Incumbent Thomas Bach since 10 September 2013") == "Thomas Bach"
    assert clean_candidate("Panglao Island", HINAGDANAN) == "Panglao Island"
    # a mention that joins two names is cut to the one ending in the asked noun
    assert clean_candidate("Dauis on Panglao Island", HINAGDANAN, {"island"}) == "Panglao Island"
    assert clean_candidate("Dauis on Panglao Island", HINAGDANAN) == "Dauis on Panglao Island"


JUMP = ev("jump", "Jump for Glory", "Jump for Glory is a 1937 British crime film directed by Raoul Walsh and starring Douglas Fairbanks Jr.")
BETRAYED = ev("betrayed", "Betrayed (1917 film)", "Betrayed (1917) is a silent drama film directed and written by Raoul Walsh, "
              "starring Hobart Bosworth, Miriam Cooper, and Monte Blue, and released by Fox Film Corporation.", hop=2)


def test_the_bridge_an_earlier_hop_went_through_is_not_the_answer():
    reading = AnswerReading.of("Who is the spouse of the director of Jump for Glory?", "person", [JUMP, BETRAYED])
    assert reading.is_bridge("Raoul Walsh", 2)
    assert not reading.is_bridge("Miriam Cooper", 2)
    assert not reading.is_bridge("Raoul Walsh", 1)  # nothing comes before the first hop


def test_the_answerer_reads_the_rules_and_cites_the_sentence_it_answers_from():
    keturah = ev("keturah", "Keturah", "According to the Book of Genesis, Abraham married Keturah after the death of his first wife, Sarah.", hop=2)
    hagar = ev("hagar", "Hagar", "Hagar was an Egyptian slave, a handmaiden of Sarah, whom Sarah gave to Abraham to bear him a child.")
    answer = extract_answer("Who did the spouse of Hagar marry after the death of Sarah?", [hagar, keturah])
    assert answer.text == "Keturah"
    assert answer.claims[0].citations[0].chunk_id == "keturah" and answer.text in answer.claims[0].text
    costa = ev("costa", "Lorenzo Costa the Younger", COSTA, hop=2)
    allegory = ev("allegory", "Allegory of Isabella d'Este's Coronation", "The Allegory of Isabella d'Este's Coronation is a painting by Lorenzo Costa.")
    answer = extract_answer("Where did the creator of the Allegory of Isabella d'Este's Coronation die?", [allegory, costa])
    assert answer.text == "Mantua" and answer.text in answer.claims[0].text


def test_a_lookup_reads_its_bridge_as_before():
    # a plan's lookup (lookup=True) keeps the earlier reading, so the bridges it finds, and retrieval, stay
    question = "Who is the spouse of the director of Jump for Glory?"
    final = extract_answer(question, [JUMP, BETRAYED])
    lookup = extract_answer(question, [JUMP, BETRAYED], lookup=True)
    assert lookup.text == "Raoul Walsh"  # the director, the bridge a lookup is after
    assert final.text == "Hobart Bosworth"  # another name of the cast: the sentence states no spouse
    assert final.text in final.claims[0].text


def test_a_word_s_tail_after_a_hyphen_is_no_candidate():
    # MuSiQue dev (bundled sample): "non-Jewish European" holds no name "Jewish European"
    sentence = ("The study also found that with respect to non-Jewish European groups, the population most closely "
                "related to Ashkenazi Jews are modern-day Italians.")
    assert clean_candidate("Jewish European", sentence) is None
    assert clean_candidate("Italians", sentence) == "Italians"  # after "modern-day ", a word of its own
    assert clean_candidate("Ashkenazi Jews", sentence) == "Ashkenazi Jews"
    question = ("In a 2010 study, what modern population is most closely related to the group that represents the "
                "majority of modern Jewry?")
    bulk = ev("jews", "Jews", "Ashkenazi Jews represent the bulk of modern Jewry, with at least 70% of Jews worldwide.")
    answer = extract_answer(question, [bulk, ev("study", "Ashkenazi Jews", sentence, hop=2)])
    # before: "Jewish European"; now a whole name of the sentence (here the bridge; in the pooled run,
    # where most passages name the bridge, "Italians")
    assert answer.text == "Ashkenazi Jews" and answer.text in answer.claims[0].text
