"""Facts read by role from the chain's subject: real 2WikiMultihopQA passages, values read by hand."""

from __future__ import annotations

import pytest

from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.role_facts import kin_reads, asked_role, read_role, role_answer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def ev(chunk_id: str, title: str, text: str, hop: int = 1) -> Evidence:
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=1, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query="q")


BODEN = ev("boden#0", "Boden's Boy", "Boden's Boy is a 1923 British romance film directed by Henry Edwards and starring "
           "Edwards, Chrissie White and Francis Lister. It was based on a novel by Tom Gallon.")
EDWARDS = ev("edwards#0", "Henry Edwards (actor)", "Henry Edwards (18 September 1882 – 2 November 1952) was an English "
             "actor and film director. He appeared in 81 films between 1915 and 1952. He was born in "
             "Weston-super-Mare, Somerset and died in Chobham, Surrey.", hop=2)
VERNEY = ev("verney#0", "Margaret Verney", "Margaret Maria Verney (3 December 1844 – 7 October 1930), was an "
            "English-born Welsh educationist. Verney was the daughter of Lady Sarah Elizabeth Amherst and her "
            "husband John Hay-Williams, 2nd Baronet Williams of Bodelwyddan.")
HAY = ev("hay#0", "John Hay-Williams", "Sir John Hay Williams, 2nd Baronet (9 January 1794 – 10 September 1859) was a "
         "descendant of Sir William Williams, who built Bodelwyddan Castle.", hop=2)
GAVALDON = "Roberto Gavaldón( June 7, 1909 in Jiménez, Chihuahua – September 4, 1986 in Mexico City) was a Mexican film director."
POTTIER = "Richard Pottier (6 June 1906, Graz – 2 November 1994, Le Plessis-Bouchard) was an Austrian-born French film director."


@pytest.mark.parametrize("question, role", [
    ("When did Margaret Verney's father die?", "death_date"),
    ("When is Susanne Porsche's husband's birthday?", "birth_date"),
    ("What is the place of birth of the director of film Boden'S Boy?", "birth_place"),
    ("Where was the place of death of the director of film The Singer Of My City?", "death_place"),
    ("What nationality is the director of film This Ain'T Avatar Xxx?", "nationality"),
    # a role named deep inside another question is not what it asks
    ("Of what church is the Diocese of the birthplace of Meehan Bonnar?", None),
    ("Who directed Boden's Boy?", None),
])
def test_the_role_is_read_from_the_questions_opening_words(question, role):
    assert asked_role(question) == role


def test_dates_are_read_by_role_from_a_life_range_and_from_born_and_died():
    assert read_role(HAY.text, "birth_date") == ("9 January 1794", HAY.text.index("9 January"))
    assert read_role(HAY.text, "death_date")[0] == "10 September 1859"
    assert read_role(GAVALDON, "death_date")[0] == "September 4, 1986"
    assert read_role("Camillo Bazzoni (born 29 December 1934) is an Italian cinematographer.", "birth_date")[0] == "29 December 1934"
    assert read_role("He retired in 1948 and died on 3 May 1960 in Rome.", "death_date")[0] == "3 May 1960"


def test_places_are_read_by_role_with_their_region():
    assert read_role(EDWARDS.text, "birth_place")[0] == "Weston-super-Mare, Somerset"
    assert read_role(EDWARDS.text, "death_place")[0] == "Chobham, Surrey"
    assert read_role(GAVALDON, "birth_place")[0] == "Jiménez, Chihuahua"
    assert read_role(GAVALDON, "death_place")[0] == "Mexico City"
    assert read_role(POTTIER, "death_place")[0] == "Le Plessis-Bouchard"


def test_nationality_skips_a_born_prefix():
    assert read_role(EDWARDS.text, "nationality")[0] == "English"
    assert read_role(POTTIER, "nationality")[0] == "French"


def test_a_relation_of_the_named_entity_is_read_from_the_passage_its_page_names():
    fact = role_answer("When did Margaret Verney's father die?", [VERNEY, HAY])
    assert fact is not None and fact.value == "10 September 1859" and fact.passage is HAY
    # without a relation the named passage itself is the subject
    assert role_answer("When was Margaret Verney born?", [VERNEY, HAY]).value == "3 December 1844"


def test_the_answer_is_the_last_facts_value_and_a_span_of_its_cited_claim():
    answer = extract_answer("What is the place of birth of the director of film Boden'S Boy?", [BODEN, EDWARDS])
    assert answer.text == "Weston-super-Mare, Somerset"
    assert answer.text in answer.claims[0].text and answer.claims[0].citations[0].chunk_id == "edwards#0"
    died = extract_answer("When did Margaret Verney's father die?", [VERNEY, HAY])
    assert died.text == "10 September 1859" and died.text in died.claims[0].text


def test_parents_and_spouse_are_read_from_the_subjects_page():
    corrigan = "Lloyd Corrigan (October 16, 1900 – November 5, 1969) was an American actor. The son of actress Lillian Elliott, Corrigan directed films."
    assert read_role(corrigan, "mother")[0] == "Lillian Elliott"
    assert read_role(VERNEY.text, "father")[0] == "John Hay-Williams, 2nd Baronet"  # the title tells peers apart
    assert read_role(VERNEY.text, "mother")[0] == "Lady Sarah Elizabeth Amherst"
    assert read_role("Henry Edwards was married to actress Chrissie White, who co-starred in his films.", "spouse")[0] == "Chrissie White"
    # 2Wiki dev "When was Jarosław, Duke Of Opole's father born?": "b." and "d." for born and died
    tall = "Bolesław I the Tall( b. 1127 – d. Leśnica( now part of Wrocław), 7 or 8 December 1201) was Duke of Wroclaw."
    assert read_role(tall, "birth_date") == ("1127", tall.index("1127"))
    assert read_role(tall, "death_date")[0] == "8 December 1201"
    # 2Wiki dev "Where was the place of death of Gülnuş Sultan's husband?": the stay a death closes
    mehmed = "In 1687 Mehmed was overthrown. He subsequently retired to Edirne, where he resided until his natural death."
    assert read_role(mehmed, "death_place") == ("Edirne", mehmed.index("Edirne"))
    assert read_role("He moved to Edirne, where he lived for ten years.", "death_place") is None
    # a child or a sibling: every one the passage names, in order; the question's own name is skipped by role_answer
    ching_kuo = "Chiang Ching-kuo was a politician. His son, Chiang Hsiao-wen, and his second son Chiang Hsiao-wu survived him."
    assert asked_role("Who is the child of Chiang Hsiao-wen's father?") == "child"
    assert read_role(ching_kuo, "child") == ("Chiang Hsiao-wen", ching_kuo.index("Chiang Hsiao-wen"))
    assert [v for v, _ in kin_reads(ching_kuo, "child")] == ["Chiang Hsiao-wen", "Chiang Hsiao-wu"]
    assert asked_role("Who is the brother of Andy Murray?") == "sibling"
    assert read_role("Andy Murray is a tennis player; his elder brother Jamie Murray plays doubles.", "sibling")[0] == "Jamie Murray"
    # MuSiQue dev 2hop__668407_683671: a consort's title between "wife" and "of"
    wang = "Empress Wang (personal name unknown) was the wife and empress of Yang Pu (Emperor Rui), the final ruler of Wu."
    assert read_role(wang, "spouse")[0] == "Yang Pu"
    assert asked_role("Who is the father of Margaret Verney?") == "father"
    assert asked_role("Who is the child of Chiang Hsiao-wen's father?") == "child"  # read below


def test_a_choice_named_inside_the_question_answers_with_the_earlier_option():
    answer = extract_answer("Was Henry Edwards or John Hay-Williams born first?", [EDWARDS, HAY])
    assert answer.text == "John Hay-Williams"  # 1794 before 1882


def test_an_answer_comes_from_the_chains_last_passage_not_the_one_the_question_names():
    film = ev("forbidden#0", "Forbidden Ground (film)", "Forbidden Ground is a Hungarian film directed by Pál Gábor. "
              "It was produced by Mafilm Studio in Budapest.")
    director = ev("gabor#0", "Pál Gábor", "Pál Gábor studied at the Hungarian Film Academy in Budapest.", hop=2)
    answer = extract_answer("Which academy did the director of Forbidden Ground study at?", [film, director])
    assert answer.text == "Hungarian Film Academy"
    assert answer.claims[0].citations[0].chunk_id == "gabor#0" and answer.text in answer.claims[0].text


def test_a_place_ends_at_its_sentence_but_keeps_an_abbreviation():
    assert read_role("Carlo Mazzacurati was an Italian film director born in Padua. He started in 1980.", "birth_place")[0] == "Padua"
    assert read_role("Mark Bowden was born in St. Louis, Missouri in 1951.", "birth_place")[0] == "St. Louis, Missouri"


def test_a_chains_next_passage_is_read_when_no_title_links_to_it():
    # real MuSiQue passages: the author's dates sit in a passage titled for a movement, not for him
    blast = ev("blast#0", "The First Blast of the Trumpet", "The First Blast of the Trumpet is a polemical work by the "
               "Scottish reformer John Knox, published in 1558. It attacks female monarchs, arguing that rule by "
               "females is contrary to the Bible.")
    bible = ev("bible#0", "Bible", "The Old Testament canon entered into Christian use in the Greek Septuagint.", hop=2)
    knox = ev("presb#0", "Presbyterianism", "John Knox (1505–1572), a Scot who had spent time studying under Calvin in "
              "Geneva, returned to Scotland.", hop=2)
    fact = role_answer("What year did the author of The First Blast of the Trumpet die?", [blast, bible, knox])
    assert fact is not None and fact.value == "1572" and fact.passage is knox
    assert asked_role("What city was the author of What We Talk About When We Talk About love born in?") == "birth_place"


def test_a_who_clause_about_the_named_entity_is_a_step_of_the_chain():
    album = ev("live#0", "Live at Shelly's Manne-Hole", "Live at Shelly's Manne-Hole is a live album by jazz pianist Bill Evans.")
    evans = ev("evans#0", "Bill Evans", "William John Evans (August 16, 1929 – September 15, 1980) was an American jazz pianist.", hop=2)
    fact = role_answer("When was the pianist who recorded Live at Shelly's Manne-Hole born?", [album, evans])
    assert fact is not None and fact.value == "August 16, 1929" and fact.passage is evans


def test_a_year_asked_is_the_year_of_the_date_read():
    died = extract_answer("In what year did Margaret Verney's father die?", [VERNEY, HAY])
    assert died.text == "1859" and died.text in died.claims[0].text


def test_without_a_named_passage_the_answer_comes_from_the_later_hops_passage():
    # real MuSiQue sentences: the question names neither title
    hook = ev("vh#0", "Van Hook Township, Mountrail County, North Dakota", "Van Hook Township is a township in "
              "Mountrail County, North Dakota, United States.")
    county = ev("mc#0", "Mountrail County, North Dakota", "Mountrail County is a county in North Dakota. Its county "
                "seat is Stanley.", hop=2)
    answer = extract_answer("What is the seat of the county where Van Hook lies?", [hook, county])
    assert answer.text == "Stanley" and answer.claims[0].citations[0].chunk_id == "mc#0"


def test_the_child_asked_is_not_the_one_the_question_names():
    # 2Wiki-style: the father's page names two sons; the question names one of them
    question = "Who is the child of Chiang Hsiao-wen's father?"
    wen = ev("wen#0", "Chiang Hsiao-wen", "Chiang Hsiao-wen was the eldest son of Chiang Ching-kuo.")
    kuo = ev("kuo#0", "Chiang Ching-kuo",
             "Chiang Ching-kuo was a politician. His son, Chiang Hsiao-wen, and his second son Chiang Hsiao-wu survived him.", 2)
    fact = role_answer(question, [wen, kuo])
    assert fact is not None and fact.value == "Chiang Hsiao-wu" and fact.passage is kuo
    assert kuo.text[fact.offset:fact.offset + len(fact.value)] == fact.value
