"""Titles as links: a lookup's hits rank the passage about the name first; held passages that name
each other's subject form a chain link that outranks look-alikes of the first hop."""

from __future__ import annotations

import pytest

from hoprag.pipeline.chains import W_LINK, Branch, TermWeights, order_by_chains
from hoprag.pipeline.roles import _names_title
from hoprag.pipeline.title_links import link_strength, link_titles, title_linker
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit


def hit(chunk_id: str, score: float, rank: int, title: str, doc_id: str | None = None) -> Hit:
    return Hit(chunk_id=chunk_id, doc_id=doc_id or chunk_id, score=score, rank=rank, retriever="bm25", title=title)


def held(chunk_id: str, title: str, text: str, doc_id: str | None = None) -> Evidence:
    return Evidence(hit=hit(chunk_id, 1.0, 1, title, doc_id), text=text, title=title, hop=1, step_id="s1", sub_query="q")


def test_link_strength_exact_contained_and_too_weak():
    assert link_strength("ingmar bergman", "Ingmar Bergman") == 3  # exact: words + 1
    assert link_strength("charles miller", "Charles Miller (director)") == 3  # parenthetical dropped
    assert link_strength("sir henry vane-tempest", "Henry Vane-Tempest") == 2  # contained, two words
    assert link_strength("haseki sultan of ottoman sultan mehmed iv", "Mehmed IV") == 2
    assert link_strength("ottoman sultan", "Ottoman") == 0  # one word inside a longer value: too weak
    assert link_strength("henry vane", "Henry Vane-Tempest") == 0  # the value is part of the title, not it
    assert link_strength("", "Anything") == 0


def test_link_titles_moves_the_named_passage_first_with_the_top_score():
    hits = [
        hit("film-a", 9.0, 1, "Woman Without a Face"),
        hit("film-b", 8.5, 2, "Brink of Life"),
        hit("bergman", 6.0, 3, "Ingmar Bergman"),
        hit("other", 5.0, 4, "Winter Light"),
    ]
    linked = link_titles(hits, "Ingmar Bergman")
    assert [h.chunk_id for h in linked] == ["bergman", "film-a", "film-b", "other"]
    assert [h.rank for h in linked] == [1, 2, 3, 4]
    assert linked[0].score == 9.0  # the list's best, so chain ordering sees the lookup's best find
    assert [h.score for h in linked[1:]] == [9.0, 8.5, 5.0]


def test_link_titles_leaves_lists_alone_when_nothing_or_the_first_is_linked():
    hits = [hit("a", 3.0, 1, "Ingmar Bergman"), hit("b", 2.0, 2, "Winter Light")]
    assert link_titles(hits, "Ingmar Bergman") == hits
    assert link_titles(hits, "Liv Ullmann") == hits
    assert link_titles([], "Ingmar Bergman") == []
    assert link_titles(hits, "") == hits


def test_link_titles_prefers_the_exact_title_over_a_contained_one():
    hits = [
        hit("x", 9.0, 1, "Unrelated"),
        hit("iv", 5.0, 2, "Mehmed IV"),
        hit("exact", 4.0, 3, "Sultan Mehmed IV"),
    ]
    assert [h.chunk_id for h in link_titles(hits, "Sultan Mehmed IV")] == ["exact", "iv", "x"]


def test_title_linker_counts_bridges_not_titles_the_question_names():
    items = {
        "film": held("film", "The Serpent's Egg (film)", "The Serpent's Egg is a 1977 film directed by Ingmar Bergman."),
        "bergman": held("bergman", "Ingmar Bergman", "Ernst Ingmar Bergman was a Swedish director. He died in Fårö."),
        "campus": held("campus", "Rutgers University–Newark", "Rutgers University–Newark is a campus of Rutgers University."),
        "rutgers": held("rutgers", "Rutgers University", "Rutgers University is a public university."),
        "part2": held("part2", "The Serpent's Egg (film)", "It stars Liv Ullmann.", doc_id="film"),
    }
    named = {"film", "rutgers"}  # what the question names
    linked = title_linker(items, lambda c: c in named)
    assert linked("film", "bergman") and linked("bergman", "film")  # the film names its director
    assert not linked("campus", "rutgers")  # names a title the question already names
    assert not linked("film", "part2")  # two chunks of one document
    assert not linked("bergman", "campus")


def test_title_linker_matches_folded_whole_words():
    items = {
        "a": held("a", "Gulnus Sultan", "She was the wife of Mehmed IV, and mother of Mustafa II."),
        "b": held("b", "Mehmed IV", "Mehmed IV was Sultan of the Ottoman Empire."),
        "c": held("c", "Mehmed I", "Mehmed I was Sultan."),
        "d": held("d", "Mustafa", "Mustafa was a name."),
        "e": held("e", "Wild Strawberries", "An Ingmar Bergman-directed film."),
        "f": held("f", "Ingmar Bergman", "Ernst Ingmar Bergman was a director."),
    }
    linked = title_linker(items, lambda c: False)
    assert linked("e", "f")  # a title inside a hyphenated compound still counts
    assert linked("a", "b")
    assert not linked("a", "c")  # "mehmed i" is not a run of whole words of "mehmed iv"
    assert linked("a", "d")  # "mustafa" is


def test_a_linked_continuation_outranks_first_hop_look_alikes():
    # Question terms: song, performer, death. p is the song; l1, l2 share its words (first-hop
    # look-alikes); c, reached from p through a bridge with a lower score, is the performer's page,
    # which the song's passage names.
    texts = {"p": "song performer", "l1": "song performer", "l2": "song", "c": "death", "z": "song"}
    w = TermWeights(texts, lambda text: text.split())
    first = [hit("p", 10.0, 1, "P"), hit("l1", 9.5, 2, "L1"), hit("l2", 9.0, 3, "L2")]
    branches = [Branch(parent="p", hits=[hit("c", 4.0, 1, "C")]), Branch(parent="l1", hits=[hit("z", 10.0, 1, "Z")])]
    question = {"song", "performer", "death"}
    without = order_by_chains(question, first, branches, w, limit=4)
    with_link = order_by_chains(question, first, branches, w, limit=4, linked=lambda a, b: {a, b} == {"p", "c"})
    assert "c" not in without  # look-alike pairs and the strong stray branch fill the context
    assert with_link[:2] == ["p", "c"]
    assert W_LINK > 0


def test_possessives_name_the_title_and_titles_keep_their_own():
    assert _names_title("when is susanne porsche's husband's birthday?", "Susanne Porsche")
    assert _names_title("where was the father of timothy shriver born", "Timothy Shriver")
    assert _names_title("which film came first, dead man's evidence or duel?", "Dead Man's Evidence")
    assert not _names_title("who directed dead man walking?", "Dead Man's Evidence")
    assert not _names_title("is it ok?", "Ok")  # too short to count


def test_a_title_in_quotes_or_brackets_is_named():
    # HotpotQA: '... appeared on the American detective television "Lawless?"'
    assert _names_title('who appeared on the american detective television "lawless?"', "Lawless (TV series)")
    assert _names_title("the film (catan) came first?", "Catan")
    assert _names_title("which came first, i'm not angry! or duel?", "I'm Not Angry!")  # a title's own '!' stays
    # a title's comma reads as the question's does
    assert _names_title("who resigned before the israeli presidential election, 2000?", "Israeli presidential election, 2000")
    assert not _names_title('who directed "lawlessness"?', "Lawless (TV series)")  # whole words only
