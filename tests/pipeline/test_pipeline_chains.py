from __future__ import annotations

import math

import pytest

from hoprag.pipeline.chains import MIN_LINK_GAIN, W_FIRST, W_FOUND, W_LINK, W_NAMED, W_NEXT, Branch, TermWeights, order_by_chains, question_coverage
from hoprag.records import Hit

pytestmark = pytest.mark.unit


def hit(chunk_id: str, score: float, rank: int) -> Hit:
    return Hit(chunk_id=chunk_id, doc_id=chunk_id, score=score, rank=rank, retriever="bm25")


def weights(texts: dict[str, str]) -> TermWeights:
    return TermWeights(texts, lambda text: text.split())


def test_idf_and_coverage_arithmetic():
    w = weights({"a": "alpha beta", "b": "gamma", "c": "alpha"})
    # N = 3; df(alpha) = 2, df(gamma) = 1
    assert w.idf("alpha") == pytest.approx(math.log(1 + 3 / 3))
    assert w.idf("gamma") == pytest.approx(math.log(1 + 3 / 2))
    idf_a, idf_g = math.log(2), math.log(2.5)
    assert question_coverage({"alpha", "gamma"}, ["a"], w) == pytest.approx(idf_a / (idf_a + idf_g))
    assert question_coverage({"alpha", "gamma"}, ["a", "b"], w) == pytest.approx(1.0)
    assert question_coverage({"alpha"}, [], w) == 0.0


def test_a_bridged_pair_that_covers_the_question_outranks_first_hop_near_duplicates():
    # Question terms: song, band, drummer. p1 and p2 are near-duplicates about the song; c (reached
    # through a bridge from p1) is the drummer's page.
    texts = {"p1": "song band", "p2": "song band", "p3": "song", "c": "drummer", "x": "unrelated"}
    w = weights(texts)
    first = [hit("p1", 10.0, 1), hit("p2", 9.0, 2), hit("p3", 5.0, 3)]
    branches = [Branch(parent="p1", hits=[hit("c", 8.0, 1), hit("x", 4.0, 2)])]
    order = order_by_chains({"song", "band", "drummer"}, first, branches, w, limit=5)
    assert order[:2] == ["p1", "c"]
    assert set(order) == {"p1", "p2", "p3", "c", "x"}


def test_pair_score_formula_decides_between_two_continuations():
    # Both continuations cover the rest of the question; c1 has the better conditioned score.
    texts = {"p": "alpha", "c1": "beta", "c2": "beta"}
    w = weights(texts)
    first = [hit("p", 4.0, 1)]
    branches = [Branch(parent="p", hits=[hit("c2", 3.0, 1)]), Branch(parent="p", hits=[hit("c1", 6.0, 1)])]
    order = order_by_chains({"alpha", "beta"}, first, branches, w, limit=3)
    # pair(p, c1) = 1 + W_FIRST·1 + W_NEXT·(6/6) > pair(p, c2) = 1 + W_FIRST·1 + W_NEXT·(3/6)
    assert order == ["p", "c1", "c2"]
    assert W_NEXT * (6 / 6) > W_NEXT * (3 / 6)


def test_named_anchors_are_preferred_for_comparisons():
    texts = {"a": "alpha film", "b": "beta film", "d": "alpha beta film list"}
    w = weights(texts)
    first = [hit("d", 10.0, 1), hit("a", 6.0, 2), hit("b", 6.0, 3)]
    # d alone covers everything; the named pair (a, b) must still come first.
    order = order_by_chains({"alpha", "beta", "film"}, first, [], w, named=lambda c: c in {"a", "b"}, limit=3)
    pair_ab = 1.0 + W_FIRST * 0.6 + W_NEXT * 0.6 + 2 * W_NAMED
    pair_da = 1.0 + W_FIRST * 1.0 + W_NEXT * 0.6 + W_NAMED
    assert pair_ab > pair_da
    assert order[:2] == ["a", "b"]


def test_a_named_passage_below_the_heads_still_heads_a_pair():
    # "Are Sutera and Rhodotypos both types of shrub?" (HotpotQA): four shrubs outrank the Sutera
    # article in the merged first hop, so it is not among the top parents=5 heads by rank.
    texts = {
        "rhodotypos": "rhodotypos genus shrub rose family",
        "ceanothus": "ceanothus shrub species",
        "olearia": "olearia shrub species",
        "claoxylon": "claoxylon shrub species",
        "cotula": "cotula shrub species",
        "sutera": "sutera genus flowering plant family",
    }
    w = weights(texts)
    first = [hit("rhodotypos", 10.0, 1), hit("ceanothus", 9.0, 2), hit("olearia", 8.5, 3),
             hit("claoxylon", 8.0, 4), hit("cotula", 7.5, 5), hit("sutera", 7.0, 6)]
    question = {"sutera", "rhodotypos", "shrub"}
    named = {"rhodotypos", "sutera"}.__contains__
    # pair(rhodotypos, sutera) covers the whole question: 1 + W_FIRST·1 + W_NEXT·0.7 + 2·W_NAMED = 2.7;
    # pair(rhodotypos, ceanothus) misses 'sutera': < 1 + W_FIRST·1 + W_NEXT·0.9 + W_NAMED = 2.65
    assert 1 + W_FIRST + W_NEXT * 0.7 + 2 * W_NAMED > 1 + W_FIRST + W_NEXT * 0.9 + W_NAMED
    order = order_by_chains(question, first, [], w, parents=5, named=named, limit=5)
    assert order[:2] == ["rhodotypos", "sutera"]
    # without the name, the sixth passage by rank never heads a pair and falls out of the five
    assert "sutera" not in order_by_chains(question, first, [], w, parents=5, limit=5)


def test_a_head_pairs_with_a_linked_passage_another_lookup_found():
    # HotpotQA: "Which season did the UCF Knights represent at ... university in Orlando?" The
    # university's article heads; the 2010 season's article, which names it, was reached from a bridge
    # of the 2008 season's look-alike, not from the university's own lookups.
    texts = {"ucf": "university orlando", "s2008": "knights season", "s2015": "knights season",
             "s2010": "knights season"}
    w = weights(texts)
    first = [hit("ucf", 10.0, 1), hit("s2008", 9.0, 2), hit("s2015", 8.5, 3)]
    branches = [Branch(parent="s2008", hits=[hit("s2010", 5.0, 1)])]
    question = {"university", "orlando", "knights", "season"}
    linked = lambda a, b: float({a, b} == {"ucf", "s2010"})  # noqa: E731
    # pair(ucf, s2010) = 1 + W_FIRST·1 + W_NEXT·(5/5) + W_LINK = 3.0 > pair(ucf, s2008) = 1 + W_FIRST·1 + W_NEXT·0.9 = 2.4
    assert 1 + W_FIRST + W_NEXT + W_LINK > 1 + W_FIRST + W_NEXT * 0.9
    assert order_by_chains(question, first, branches, w, parents=3, limit=3, linked=linked)[:2] == ["ucf", "s2010"]
    # unlinked, the season's article only follows its look-alike and misses the first three
    assert "s2010" not in order_by_chains(question, first, branches, w, parents=3, limit=3)


def test_a_linked_passage_that_adds_nothing_to_the_head_does_not_pair_with_it():
    # Enterprise: another customer's contract cites the support policy, and holds none of the question's
    # other words. Unchecked, pair(policy, contract) = 0.436 + W_FIRST + W_NEXT·1 + W_LINK = 2.436 (the
    # contract is the best of its list; 'critical' and 'response' are 0.436 of the question's IDF) would
    # beat pair(policy, incident) = 1 + W_FIRST + W_NEXT·0.8 = 2.3; it adds 0 < MIN_LINK_GAIN to the policy.
    texts = {"policy": "critical response", "incident": "wren incident", "memo": "memo",
             "contract": "critical response"}
    w = weights(texts)
    first = [hit("policy", 10.0, 1), hit("incident", 8.0, 2), hit("memo", 1.0, 3)]
    branches = [Branch(parent="memo", hits=[hit("contract", 5.0, 1)])]
    question = {"critical", "response", "wren", "incident"}
    linked = lambda a, b: float({a, b} == {"policy", "contract"})  # noqa: E731
    assert question_coverage(question, ["policy", "contract"], w) == question_coverage(question, ["policy"], w)
    assert order_by_chains(question, first, branches, w, parents=3, limit=2, linked=linked) == ["policy", "incident"]


def test_empty_inputs():
    w = weights({"a": "alpha"})
    assert order_by_chains({"alpha"}, [], [], w) == []
    assert order_by_chains(set(), [hit("a", 1.0, 1)], [], w) == ["a"]


def test_a_three_hop_path_brings_its_third_passage_forward():
    # q = {orion, plan, family, retention}; p names Orion's plan, c (from p) the plan's family,
    # d (from c) the family's retention. x1..x3 are first-hop near-duplicates of p.
    texts = {"p": "orion plan", "c": "plan family", "d": "family retention", "x1": "orion", "x2": "orion", "x3": "orion"}
    w = weights(texts)
    first = [hit("p", 10.0, 1), hit("x1", 9.0, 2), hit("x2", 9.0, 3), hit("x3", 9.0, 4)]
    branches = [Branch(parent="p", hits=[hit("c", 5.0, 1)]), Branch(parent="c", hits=[hit("d", 5.0, 1)])]
    order = order_by_chains({"orion", "plan", "family", "retention"}, first, branches, w, limit=3)
    assert order == ["p", "c", "d"]


def test_a_third_passage_that_adds_nothing_forms_no_path():
    texts = {"p": "orion plan", "c": "plan family", "d": "plan", "y": "retention"}
    w = weights(texts)
    first = [hit("p", 10.0, 1), hit("y", 2.0, 2)]
    # d is weak (0.5 of the best conditioned score 5.0): without the guard the path (p, c, d) would
    # score 0.75 + W_FIRST + W_NEXT·(1.0 + 0.1)/2 = 1.8 and beat the pair (p, y) at 1.0 + W_FIRST + W_NEXT·0.2 = 1.7.
    branches = [Branch(parent="p", hits=[hit("c", 5.0, 1)]), Branch(parent="c", hits=[hit("d", 0.5, 1)])]
    order = order_by_chains({"orion", "plan", "family", "retention"}, first, branches, w, limit=3)
    assert order == ["p", "c", "y"]


def test_a_planned_lookup_extends_the_path_without_adding_coverage():
    # The same corpus as above, but d answers the plan's next lookup ("the family of …"): the plan
    # said a passage is needed there, so the path (p, c, d) stands without the coverage guard and
    # outscores the pair (p, y): 1.8 > 1.7 as computed above.
    texts = {"p": "orion plan", "c": "plan family", "d": "plan", "y": "retention"}
    w = weights(texts)
    first = [hit("p", 10.0, 1), hit("y", 2.0, 2)]
    branches = [Branch(parent="p", hits=[hit("c", 5.0, 1)], planned=True), Branch(parent="c", hits=[hit("d", 0.5, 1)], planned=True)]
    order = order_by_chains({"orion", "plan", "family", "retention"}, first, branches, w, limit=3)
    assert order == ["p", "c", "d"]


def test_a_four_passage_chain_fills_four_slots_before_first_hop_neighbours():
    # Four lookups: p (the anchor) → c → d → e, each found from the one before; x1, x2 are first-hop
    # near-duplicates of p. The path of four outscores any pair holding a near-duplicate.
    texts = {"p": "kestrel founder", "c": "founder city", "d": "city river", "e": "river source", "x1": "kestrel", "x2": "kestrel"}
    w = weights(texts)
    first = [hit("p", 10.0, 1), hit("x1", 9.0, 2), hit("x2", 9.0, 3)]
    branches = [
        Branch(parent="p", hits=[hit("c", 5.0, 1)], planned=True),
        Branch(parent="c", hits=[hit("d", 5.0, 1)], planned=True),
        Branch(parent="d", hits=[hit("e", 5.0, 1)], planned=True),
    ]
    order = order_by_chains({"kestrel", "founder", "city", "river", "source"}, first, branches, w, limit=4)
    assert order == ["p", "c", "d", "e"]


def test_the_passage_a_found_value_led_to_pairs_with_the_passage_it_was_read_from():
    # "Who is the spouse of the actor who voices Batman in the Lego Batman movie?": p (the film, ranked
    # second) names the actor; the plan's next lookup, led by the value read there, found c (the
    # actor's page, which shares no word of the question: coverage adds nothing). x, the first hop's
    # best, pairs with p for their shared words. Without the found link the first hop's pair wins.
    texts = {"x": "lego batman movie voices", "p": "lego batman movie actor", "c": "married", "y": "lego"}
    w = weights(texts)
    question = {"lego", "batman", "movie", "actor", "voices", "spouse"}
    first = [hit("x", 10.0, 1), hit("p", 9.0, 2), hit("y", 3.0, 3)]
    plain = [Branch(parent="p", hits=[hit("c", 2.0, 1)], planned=True)]
    assert order_by_chains(question, first, plain, w, limit=2) == ["x", "p"]
    found = [Branch(parent="p", hits=[hit("c", 2.0, 1)], planned=True, found=True)]
    # pair(p, c) gains W_FOUND and now outranks pair(x, p): coverage(x, p) - coverage(p) < W_FOUND here
    assert order_by_chains(question, first, found, w, limit=2) == ["p", "c"]
    assert W_FOUND > 0


def test_chain_ordering_coverage_by_term_masks_equals_question_coverage():
    from itertools import combinations

    from hoprag.pipeline.chains import _Cover

    # HotpotQA's Rush question over its passages, one word a term: every set of up to three chunks
    texts = {
        "peart": "neil peart canadian drummer rush author",
        "rush": "rush canadian rock band toronto",
        "lee": "geddy lee bassist rush",
        "toronto": "toronto capital ontario",
        "empty": "",
    }
    w = weights(texts)
    question = {"drummer", "canadian", "rock", "band", "rush", "1968"}
    cover = _Cover(question, w)
    for size in (1, 2, 3):
        for ids in combinations(texts, size):
            assert cover(ids) == question_coverage(question, ids, w)  # exactly, not approximately
    assert cover(()) == 0.0 and _Cover({"absent"}, w)(("peart",)) == 0.0


def test_a_found_value_counts_for_the_plan_only_when_read_about_its_anchor():
    from hoprag.pipeline.roles import _anchored_reads
    from hoprag.records import Evidence, HopStep

    def ev(chunk_id: str, title: str, text: str) -> Evidence:
        return Evidence(hit=hit(chunk_id, 1.0, 1), text=text, title=title, hop=1, step_id="s1", sub_query="")

    # MuSiQue train 3hop1__404363: the composer (order 2) was read in the first lookup's passage; the
    # country (order 3) was read in a passage the composer's lookup found that never names him
    held = {e.chunk_id: e for e in [
        ev("aschenbrodel", "Aschenbrödel", "Aschenbrödel is a ballet by Johann Strauss II."),
        ev("visa", "Visa requirements for Canadian citizens", "Visa requirements for Canadian citizens are rules."),
        ev("strauss", "Johann Strauss II", "Johann Strauss II was an Austrian composer."),
    ]}
    steps = [
        HopStep(step_id="s1", hop=1, sub_query="composer of Aschenbrodel", issued_query="", hits=(hit("aschenbrodel", 1, 1),)),
        HopStep(step_id="s2", hop=2, sub_query="country where was a citizen", issued_query="",
                hits=(hit("visa", 1, 1), hit("strauss", 1, 2)),
                bridge={"order": 2, "value": "Johann Strauss II", "kind": "found", "from_chunk": "aschenbrodel"}),
        HopStep(step_id="s3", hop=3, sub_query="Who was in charge of", issued_query="", hits=(),
                bridge={"order": 3, "value": "Canada", "kind": "found", "from_chunk": "visa"}),
        HopStep(step_id="s4", hop=3, sub_query="Who was in charge of", issued_query="", hits=(),
                bridge={"order": 3, "value": "Austria", "kind": "found", "from_chunk": "strauss"}),
    ]
    assert _anchored_reads(steps, held) == {"s2", "s4"}
