"""Offline extractive answering: pick a short span from held evidence, and cite where it came from.

No model is involved. Sentences of the evidence are scored by how many of the question's content
words they contain (IDF-free, so the answer does not depend on corpus statistics), and the sentences
of the chain's last passage weigh more than those of a passage the question names; candidate spans in
the best sentences are entities, dates, numbers and quoted titles that the question does not already
name, filtered by the answer type the question's wh-word asks for. A fact asked by its role (a birth
or death date or place, a nationality, a parent, a spouse, a grandparent) is read from the passage
of the entity asked about (:mod:`hoprag.pipeline.role_facts`, :mod:`hoprag.pipeline.kinship`);
yes/no questions compare the two named entities (:mod:`hoprag.pipeline.yes_no`) and two-option
questions ("A or B?") their dates (:mod:`hoprag.pipeline.comparisons`) or their sizes and counts
(:mod:`hoprag.pipeline.amounts`), answering with an option; "what kind of activist?" is answered by
the word before the noun (:mod:`hoprag.pipeline.descriptions`), "What is X an instance of?" by the
noun defining X (:mod:`hoprag.pipeline.instances`). The chain's last passage weighs most,
and a date or number asked is read from the sentence that shares the words of the plan's last
lookup (its relation, not the words that led to the bridge); a plan's own lookups (``lookup=True``)
read as before those rules, so the bridges they find do not move with them. The final answer's
candidates are also read against the question (:mod:`hoprag.pipeline.answer_candidates`): the kind
its opening wh-word asks, the noun it asks about, its relation words near the candidate, and never
the bridge an earlier hop of the chain went through; a later hop's sentence that names that bridge
weighs more, and of its numbers the one beside the bridge answers (:mod:`hoprag.pipeline.bridge_mentions`);
a wh-word that stands in place ("… community of what?") is filled by the candidate after its words
(:mod:`hoprag.pipeline.answer_slots`); a quantity asked by its noun ("the usual average snowfall") is a
number with its unit (:mod:`hoprag.pipeline.number_spans`).
The answer is a span of the sentence its first claim cites (a yes/no or an option word aside). Every
claim cites the evidence chunk (and hop) its sentence came from; the answer abstains when no
evidence is held.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from hoprag.pipeline.amounts import answer_amounts
from hoprag.pipeline.answer_candidates import AnswerReading, clean_candidate
from hoprag.pipeline.answer_slots import slot_bonus, slot_words
from hoprag.pipeline.answer_types import question_kind, typed_spans
from hoprag.pipeline.bridge_mentions import bridge_spans, found_bridges, nearest_to_bridge
from hoprag.pipeline.bridges import extract_bridges
from hoprag.pipeline.cast_chain import chain_cast
from hoprag.pipeline.comparisons import answer_comparison, options_in
from hoprag.pipeline.descriptions import describe, describe_role
from hoprag.pipeline.instances import instance_of
from hoprag.pipeline.kinship import kin_answer
from hoprag.pipeline.number_spans import (
    ASKS_QUANTITY as _ASKS_COUNT, DURATION as _DURATION, MEASURE as _MEASURE, NUMBER as _NUMBER, counts_people,
)
from hoprag.pipeline.plan_chain import (
    last_lookup_terms as _last_lookup_terms, led_chain_end, named_items as _named_items,
    plan_chain_end as _plan_chain_end, same_page,
)
from hoprag.pipeline.role_facts import role_answer
from hoprag.pipeline.yes_no import answer_both, answer_same_country, answer_same_value
from hoprag.pipeline.text import content_tokens, fold, sentences_with_offsets, tokens
from hoprag.records import Answer, Citation, Claim, Evidence

CHAIN_ITEMS = 2  # leading evidence items cited as the chain behind an answer
CHAIN_LEAD = 2  # leading items among which the chain's last passage is looked for (see _chain_end)
CHAIN_END_WEIGHT = 6.0  # added to the sentences of the chain's last passage: its facts come first
LOOKUP_CHAIN_END_WEIGHT = 2.0  # the same for a plan's lookup (its bridges, hence retrieval, tuned with it)
NAMED_WEIGHT = 0.5  # taken from the sentences of a passage the question names, when a chain end is found
LAST_LOOKUP_WEIGHT = 2.0  # added per word a sentence shares with the last lookup of a plan (see _last_lookup_terms)
LAST_LOOKUP_KINDS = ("date", "number")
BRIDGE_SENTENCE_WEIGHT = 0.5  # added to a final answer's sentence of a later hop that names an earlier hop's bridge
NEAR_BRIDGE_WEIGHT = 1.0  # added to the number nearest such a bridge mention (see bridge_mentions)
NEAR_KINDS = ("number", "duration")
SLOT_WEIGHT = 1.0  # added to a candidate that follows the words before an in-place wh-word (see answer_slots)
FIT_WEIGHT = 1.0  # how much a candidate's fit to the asked kind (0-1, :mod:`hoprag.pipeline.answer_types`) adds
_YES_NO = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall)\b", re.I
)
_OPTIONS = re.compile(r",?\s*([^,?]+?)\s+or\s+([^,?]+?)\s*\?\s*$", re.I)
_ASKS_YEAR = re.compile(r"\b(?:what|which) year\b", re.I)
_YEAR_IN = re.compile(r"\b\d{3,4}\b")
_KIND_FOR = {
    "when": ("date",),
    "year": ("date",),
    "how many": ("number",),
    "how much": ("number",),
    "how long": ("duration",),
    "how soon": ("duration",),
    "how quickly": ("duration",),
    "how old": ("number",),
    "how far": ("duration",),
}


def _wanted_kinds(question: str, final: bool = False) -> tuple[str, ...]:
    """``final``: "year" is a cue as a word only ("with over 25 years of experience" asks no date); a
    lookup reads it as before."""
    q = question.lower()
    for cue, kinds in _KIND_FOR.items():
        if cue in q and not (final and cue == "year" and not re.search(r"\byear\b", q)):
            return kinds
    return ("entity", "quoted", "identifier")


def _options(question: str) -> tuple[str, str] | None:
    offered = options_in(question)  # "…, A or B?", "Was A or B born first?"
    if offered is not None:
        (left, right), _ = offered
    else:
        match = _OPTIONS.search(question)
        if not match:
            return None
        left, right = match.group(1).split(":")[-1], match.group(2)
        # keep the tail of the left option after the last wh/preposition word
        left = re.split(r"\b(?:first|earlier|later|older|younger|more|less|which|who|what|between)\b", left)[-1]
    a, b = _bare(left), _bare(right)
    if not a or not b:
        return None
    return a, b


def _bare(option: str) -> str:
    """An option as a name: no quotes, no possessive ("Project Orion's" -> "Project Orion")."""
    option = option.strip(" \"'")
    for suffix in ("'s", "\u2019s"):
        if option.endswith(suffix):
            option = option[: -len(suffix)]
    return option.strip()


def _sentences(evidence: Sequence[Evidence]) -> list[tuple[Evidence, str]]:
    """Sentences of each item, and the lines of lists and tables inside them (one row, one unit)."""
    out: list[tuple[Evidence, str]] = []
    for item in evidence:
        for start, end in sentences_with_offsets(item.text):
            for line in item.text[start:end].split("\n"):
                line = line.strip(" -*\t")
                if line and not line.endswith("?"):  # a question in a passage states nothing
                    out.append((item, line))
    return out


def sentence_at(text: str, offset: int) -> str:
    """The sentence (or list line) of ``text`` that holds ``offset``, as :func:`_sentences` cuts it."""
    for start, end in sentences_with_offsets(text):
        if start <= offset < end:
            line_start = text.rfind("\n", start, offset) + 1 or start
            line_end = text.find("\n", offset, end)
            return text[max(start, line_start) : end if line_end < 0 else line_end].strip(" -*\t")
    return text


def _cite(item: Evidence) -> Citation:
    return Citation(chunk_id=item.chunk_id, doc_id=item.doc_id, hop=item.hop)


def extract_answer(question: str, evidence: Sequence[Evidence], *, confidence: float = 0.0,
                   lookup: bool = False) -> Answer:
    """An extractive answer from ``evidence`` (best first) with claims citing their sources.

    ``lookup``: the question is a plan's lookup, whose answer is a bridge to search on; it is read
    as before the final answer's rules (the last lookup's words, the chain end's weight), so
    retrieval does not move when those rules are tuned."""
    if not evidence:
        return Answer(text="", abstained=True, confidence=0.0)
    q_terms = set(content_tokens(question))
    # the final answer of a plan's chain of three or more lookups is read in its deepest lookup's passages
    chain_end = (None if lookup else _plan_chain_end(question, evidence)) or _chain_end(question, evidence)
    if not lookup:  # not the first lookup's passage, but the one a value it found led to (pipeline/plan_chain.py)
        chain_end = same_page(evidence, led_chain_end(question, evidence, chain_end))  # and the rest of its page
    end_weight = LOOKUP_CHAIN_END_WEIGHT if lookup else CHAIN_END_WEIGHT
    last_hop, last_terms = (0, set()) if lookup or question_kind(question) not in LAST_LOOKUP_KINDS else _last_lookup_terms(question, evidence)
    # a passage the question names is where its chain starts, rarely where its answer is
    named = _named_items(question, evidence) if chain_end else set()
    scored: list[tuple[float, int, Evidence, str]] = []
    for order, (item, sentence) in enumerate(_sentences(evidence)):
        s_terms = set(content_tokens(sentence)) | set(content_tokens(item.title))
        overlap = len(q_terms & s_terms) + (LAST_LOOKUP_WEIGHT * len(last_terms & s_terms) if item.hop == last_hop else 0.0)
        # a chain's answer is a fact of its last passage, the one the question does not name
        scored.append((overlap + 0.5 / (1 + order) + (end_weight if item.chunk_id in chain_end else 0.0)
                       - (NAMED_WEIGHT if item.chunk_id in named else 0.0), order, item, sentence))
    scored.sort(key=lambda row: (-row[0], row[1]))
    if not scored:  # evidence without a sentence (empty text) states nothing to answer from
        return Answer(text="", abstained=True, confidence=0.0)

    options = _options(question)
    if _YES_NO.match(question) and not options:
        same = answer_same_country(question, evidence) or answer_same_value(question, evidence) or answer_both(question, evidence)
        if same is not None:  # "Are X and Y of the same nationality?": the two countries read and compared
            text, passage, offset = same
            source = (passage, sentence_at(passage.text, offset))
        else:
            text, source = _yes_no(question, scored)
    elif options:
        # dates compared ("born first"), else sizes and counts ("higher", "more members"); never in a lookup
        compared = answer_comparison(question, evidence) or (None if lookup else answer_amounts(question, evidence))
        if compared is not None:
            text, passage = compared
            sentence = next((sent for _, _, item, sent in scored if item.chunk_id == passage.chunk_id), passage.text)
            source = (passage, sentence)
        else:
            text, source = _choose_option(options, scored)
    elif not lookup and (described := describe(question, scored) or describe_role(question, scored)
                         or instance_of(question, scored)) is not None:
        text, source = described[0], (described[1], described[2])  # "what kind of activist?": "political"
    elif (fact := role_answer(question, evidence) or kin_answer(question, evidence)
                   or (None if lookup else chain_cast(question, evidence))) is not None:  # "… plays which character in W?"
        # a fact asked by its role, read from the chain's subject ("X's father": the father's page)
        text, source = _year_if_asked(question, fact.value), (fact.passage, sentence_at(fact.passage.text, fact.offset))
    else:
        text, source = _best_span(question, scored, evidence, final=not lookup)
    if source is None:
        return Answer(text="", abstained=True, confidence=0.0)
    # the claim is the whole sentence the answer came from, so the answer is a span it contains
    claims = [Claim(text=source[1], citations=(_cite(source[0]),))]
    # The chain behind the answer: the evidence ranked first is the best chain found (the engine
    # orders by chains), so each of its leading items is cited with its best-matching sentence.
    cited = {source[0].chunk_id}
    for item in evidence[:CHAIN_ITEMS]:
        if item.chunk_id in cited:
            continue
        cited.add(item.chunk_id)
        sentence = next((sent for _, _, it, sent in scored if it.chunk_id == item.chunk_id), item.text)
        claims.append(Claim(text=sentence, citations=(_cite(item),)))
    return Answer(text=text, claims=tuple(claims), abstained=False, confidence=confidence)


def _chain_end(question: str, evidence: Sequence[Evidence]) -> set[str]:
    """The chain's last passages: among its leading items, those whose title the question does not
    name, when another leading item is named (the anchor); when none is named, those a later hop
    found; empty for yes/no and two-option questions."""
    if _YES_NO.match(question) or _options(question):
        return set()
    lead = evidence[:CHAIN_LEAD]
    named = _named_items(question, lead)
    if not named and len({e.hop for e in lead}) > 1:  # no anchor named: the item a later hop found
        last = max(e.hop for e in lead)
        return {e.chunk_id for e in lead if e.hop == last}
    if not named or len(named) == len(lead):
        return set()
    return {e.chunk_id for e in lead if e.chunk_id not in named}


def _proximity(sentence: str, value: str, q_terms: set[str], window: int = 4) -> int:
    """How many question terms occur within ``window`` tokens of the candidate in its sentence."""
    words = tokens(sentence)
    target = tokens(value)
    if not target:
        return 0
    for i in range(len(words) - len(target) + 1):
        if words[i : i + len(target)] == target:
            around = words[max(0, i - window) : i] + words[i + len(target) : i + len(target) + window]
            return len(q_terms & set(around))
    return 0


_DEMONYM = re.compile(r"^[A-Z][a-z]+(?:an|ian|ese|ish|ic|i)$")


def _background(evidence: Sequence[Evidence]) -> Callable[[str], bool]:
    """Values named by most of the evidence (a company's own name) are background, not answers."""
    texts = [fold(e.title + " " + e.text) for e in evidence]
    threshold = max(2, (len(texts) + 1) // 2)

    def is_background(value: str) -> bool:
        key = fold(value)
        return len(texts) >= 3 and sum(1 for t in texts if key in t) >= threshold

    return is_background


def _best_span(
    question: str, scored: list[tuple[float, int, Evidence, str]], evidence: Sequence[Evidence] = (),
    final: bool = False,
) -> tuple[str, tuple[Evidence, str] | None]:
    """The best-scoring candidate of the top sentences: sentence score, then closeness to the
    question's words, multi-word names over single words, nationality adjectives and background
    names (those most of the evidence mentions) last. ``final``: the question's own answer (not a
    lookup's bridge, whose reading stays as it was so retrieval does not move), whose candidates are
    cleaned and read against the question too (:class:`AnswerReading`)."""
    # "What was the population of …?" asks a number as "how many" does (not in a lookup: its bridges stay)
    counts = final and _ASKS_COUNT.search(question) is not None
    kind = question_kind(question)
    reading = AnswerReading.of(question, kind, evidence) if final else None
    wanted = ("number",) if counts else (reading.kinds if reading is not None else None) or _wanted_kinds(question, final)
    q_terms = set(content_tokens(question))
    q_tokens = set(tokens(question))
    background = _background(evidence)
    slot = slot_words(question) if final else None  # "… of what?": the words the answer follows
    bridges: dict[tuple[str, str], list[tuple[int, int]]] = {}
    if reading is not None:  # a later hop's sentence that names the bridge an earlier hop found states the answer
        found = found_bridges(question, evidence)
        for _, _, item, sentence in scored:
            bridges[(item.chunk_id, sentence)] = bridge_spans(sentence, found.get(item.hop, ()))
        scored = sorted(((score + (BRIDGE_SENTENCE_WEIGHT if bridges[(item.chunk_id, sentence)] else 0.0), order, item, sentence)
                         for score, order, item, sentence in scored), key=lambda row: (-row[0], row[1]))
    best: tuple[float, str, Evidence, str] | None = None
    for rank, (sentence_score, _, item, sentence) in enumerate(scored[:6]):
        if wanted[0] in ("number", "duration"):
            pattern = _DURATION if wanted[0] == "duration" else _MEASURE if final else _NUMBER
            candidates = [m.group(0).strip(" ,.") for m in pattern.finditer(sentence)]
            candidates = [c for c in candidates if not set(tokens(c)) <= q_tokens and (not final or counts_people(question, c))]
        else:
            candidates = [c.value for c in extract_bridges(sentence, question=question, exclude=(), limit=10) if c.kind in wanted]
        fits = {fold(span.value): span.fit for span in typed_spans(sentence, kind)} if kind != "entity" else {}
        length = {value: len(value.split()) for value in candidates}
        if reading is not None:  # "In Serbia" → "Serbia", "Meanwhile," dropped; fit and length those of the mention
            cleaned = [(raw, clean_candidate(raw, sentence, reading.heads)) for raw in candidates]
            for raw, value in cleaned:
                if value and fold(raw) in fits:
                    fits.setdefault(fold(value), fits[fold(raw)])
            length = {value: len(raw.split()) for raw, value in cleaned if value}
            candidates = list(length)
        # among a sentence's numbers, the bridge says which is the answer (names and dates beside it are too often another fact's)
        near = nearest_to_bridge(sentence, candidates, bridges.get((item.chunk_id, sentence), [])) if wanted[0] in NEAR_KINDS else set()
        for value in candidates:
            if reading is not None:  # the relation words and their paraphrases ("married": "husband")
                score = sentence_score + 0.5 * reading.proximity(sentence, value) + reading.bonus(value, sentence, item.hop)
                score += (NEAR_BRIDGE_WEIGHT if value in near else 0.0) + SLOT_WEIGHT * slot_bonus(slot, value, sentence)
            else:
                score = sentence_score + 0.5 * _proximity(sentence, value, q_terms)
            if fits:  # the kind the question asks for: a person for "Who", a place for "Where"
                score += FIT_WEIGHT * (fits.get(fold(value), 0.0) - 0.5)
            score += 0.3 * min(length[value] - 1, 2)
            if _DEMONYM.match(value) or background(value):
                score -= 1.0
            score -= 0.1 * rank
            if best is None or score > best[0]:
                best = (score, value, item, sentence)
    if best is not None:
        return _year_if_asked(question, best[1]), (best[2], best[3])
    if scored:
        _, _, item, sentence = scored[0]
        return sentence, (item, sentence)
    return "", None


def _year_if_asked(question: str, value: str) -> str:
    """"In what year …?" asks for the year of the date found ("12 February 1939" → "1939"), a span still."""
    year = _YEAR_IN.search(value) if _ASKS_YEAR.search(question) else None
    return year.group(0) if year else value


def _choose_option(
    options: tuple[str, str], scored: list[tuple[float, int, Evidence, str]]
) -> tuple[str, tuple[Evidence, str] | None]:
    """Pick the option mentioned first by the best-scoring evidence sentences."""
    folded = [fold(o) for o in options]
    for _, _, item, sentence in scored:
        text = fold(sentence + " " + item.title)
        for option, key in zip(options, folded):
            if key and key in text:
                return option, (item, sentence)
    _, _, item, sentence = scored[0]
    return options[0], (item, sentence)


def _yes_no(
    question: str, scored: list[tuple[float, int, Evidence, str]]
) -> tuple[str, tuple[Evidence, str] | None]:
    """'yes' when the best sentences jointly contain the question's content words, else 'no'."""
    q_terms = set(content_tokens(question))
    held: set[str] = set()
    for _, _, item, sentence in scored[:4]:
        held |= set(content_tokens(sentence)) | set(content_tokens(item.title))
    share = len(q_terms & held) / max(len(q_terms), 1)
    _, _, item, sentence = scored[0]
    return ("yes" if share >= 0.75 else "no"), (item, sentence)
