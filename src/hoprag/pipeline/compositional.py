"""Compositional decomposition without a model: a nested question becomes a chain of dependent lookups.

"Who was in charge of the country where the composer of Aschenbrödel was a citizen?" nests three
lookups: the composer of Aschenbrödel (#1), the country where #1 was a citizen (#2), who was in charge
of #2. The rules read the question's noun phrases from the outside in:

- a *link* is an article and a relation noun followed by ``of`` or a relative word (``the composer
  of``, ``the country where``, ``the city in which``, ``the team that``); each link opens one level;
- a possessive chain ``X's father's birthplace`` is read as ``the birthplace of the father of X``;
- the words before the first link are the *frame* (``Who was in charge of``): a level of its own when
  they hold a content word, else (``Who is``, ``What is``) they only ask for the last value;
- what follows the innermost level's named anchor (``… of Aschenbrödel was a citizen``) belongs to
  the nearest relative clause above it (``where … was a citizen``).

The innermost level is asked first and names the anchor; each outer level depends on the one inside
it, and its query holds only its own words, so the engine fills it with the value the previous hop
found (:func:`lead_with_found`: the extractive answer to the previous lookup, ahead of the bridges
of its passages). A question with fewer than two levels is not decomposed (``None``); nor is a
yes/no or two-option ("… A or B?") question, whose nested phrases are what it compares, not a chain.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from hoprag.pipeline.answer_types import relation_kind
from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.roles import Conditioned
from hoprag.pipeline.text import fold
from hoprag.pipeline.value_bridges import BEAM, CANDIDATES_KEPT, beam, found_values
from hoprag.records import Answer, Evidence

__all__ = ["Level", "decompose", "lead_with_found"]

_YES_NO = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would)\b", re.I)
_RELATIVE = ("where", "in which", "at which", "from which", "by which", "on which", "that", "who", "whom", "whose", "which", "when")
# a relation noun: one or two lowercase words
_NOUN = r"(?:[a-z][a-z-]+ )??[a-z][a-z-]+"
_JOINT = r"(?P<joint>of|with|" + "|".join(w.replace(" ", r"\s") for w in _RELATIVE) + r"|(?=[A-Z]))(?=(?P<object>\s*\S+|$))"
_LINK = re.compile(r"\b[Tt]he (?P<noun>" + _NOUN + r") " + _JOINT)
# a link without its article after a preposition ("the airport in birth place of the director of …");
# its noun must be a relation noun (:func:`hoprag.pipeline.answer_types.relation_kind`), so "in charge
# of" or "in front of" open nothing
_BARE_LINK = re.compile(r"(?<=\b(?:in|of|at|to|by|on) )(?P<noun>" + _NOUN + r") " + _JOINT)
# heads that name no relation ("the name of", "the east of") and words that never head a noun phrase
_NOT_NOUNS = frozenset(
    """one same most first last other only best many all each some any both which what who this that these
    those such very more less few several name kind type sort east west north south rest end middle top
    bottom side number""".split()
)
# a nationality word ("Swedish", "American") opens no anchor: the name it qualifies follows within a few words
_DEMONYM_WORD = re.compile(r"^[A-Z][a-z]+(?:an|ian|ish|ese|ic|i|ch)$")
_DEMONYM_REACH = 4
# after a zero relative ("the country [that] Signmark is from"), the name's clause needs a verb
_ZERO_RELATIVE_SPAN = 6
MAX_VALUE_WORDS = 8
# A name: capitalised or numbered words, joined by spaces, commas and the particles of names.
_NAME_WORD = r"(?:[A-Z0-9][\w.\-]*|[A-Z][\w.\-]*)"
_NAME = _NAME_WORD + r"(?:(?:,? | (?:of|the|de|von|van|der|la|le|du|da|y) )" + _NAME_WORD + r")*"
_POSSESSIVE_CHAIN = re.compile(r"(?P<name>" + _NAME + r")(?P<chain>(?:['\u2019]s [a-z][a-z-]+)+)")
# words that end a named anchor and start the clause it is the subject of
_VERBS = frozenset(
    """died born lived located formed founded
    made released published based situated buried played plays became become won married works worked
    belongs belonged created wrote directed produced performed held known found built fought written taken
    given run""".split()
)
_AUXILIARIES = frozenset("is was are were be been being did does do has had have will would can could".split())
_VERB_PARTICLES = frozenset("in from on at to for by of after into with".split())
# a tail opened by one of these, with no verb, is a modifier of what it follows ("in the search for …")
_MODIFIER_PREPOSITIONS = frozenset("in during at on for from with before after under".split())
_ADVERBS = frozenset("also later once first originally still then again never previously formerly".split())
_TITLE_WORDS = frozenset("for in with a an to on at from is are my me".split())
_PARTICLES = frozenset("of the and de von van der la le du da y".split())
_MODIFIERS = frozenset(
    """first last own national official former current main new old largest biggest oldest highest longest
    best top early late""".split()
)
_CONTENT_FREE = frozenset(
    """what who whom whose which where when how is was are were did does do the a an in of on at by to
    for from with name named and or as that this there it its""".split()
)


@dataclass(frozen=True)
class Level:
    """One lookup of a nested question, innermost first: its words and whether it names the anchor."""

    text: str
    anchored: bool = False


def decompose(question: str) -> list[Level] | None:
    """The question's nested lookups, innermost first, or ``None`` when it nests fewer than two."""
    text = " ".join(question.strip().rstrip("?!. ").split())
    if not text or _YES_NO.match(text) or re.search(r"\bor\b", text):
        return None  # a yes/no or a two-option question compares its phrases; it is no chain
    text = _unfold_possessives(text)
    links = _links(text)
    if not links:
        return None
    frame = text[: links[0].start()].strip(" ,")
    bodies: list[tuple[str, str]] = []  # (level words, joint) outer to inner
    for i, link in enumerate(links):
        end = links[i + 1].start() if i + 1 < len(links) else len(text)
        bodies.append((text[link.start() : end].strip(" ,"), link.group("joint")))
    # what trails the innermost level's own words belongs to the levels around it: each relative
    # clause above takes its verb group ("… is located"), the frame takes the rest ("… refuse to …")
    inner, joint = bodies[-1]
    own, rest = _own_words(inner.split(), joint)
    bodies[-1] = (" ".join(own), joint)
    for i in range(len(bodies) - 2, -1, -1):
        if not rest:
            break
        words, joint = bodies[i]
        if joint != "of" and not any(_is_verb(w) for w in words.split()[2:]):
            group, rest = _verb_group(rest)
            bodies[i] = (" ".join([words, *group]), joint)
    if rest and rest[0].lower() in _MODIFIER_PREPOSITIONS and not _has_content(frame) and not any(_is_verb(w) for w in rest):
        # a verbless tail ("… of the Argonauts in the search for the golden fleece") qualifies the
        # innermost lookup; a frame that only asks ("Who was") is no lookup of its own
        bodies[-1] = (" ".join([bodies[-1][0], *rest]), bodies[-1][1])
        rest = []
    frame = " ".join([frame, *rest]).strip(" ,")
    levels = [Level(_strip_article(words)) for words, _ in bodies]
    if _has_content(frame):
        levels.insert(0, Level(frame))
    levels.reverse()
    levels[0] = Level(levels[0].text, anchored=True)
    if len(levels) < 2 or not _has_content(levels[0].text.split(None, 1)[-1]):
        return None
    return levels


def _links(text: str) -> list[re.Match[str]]:
    """The links of ``text`` in order: with their article, then bare ones that overlap none of those."""
    links = [m for m in _LINK.finditer(text) if _is_link(m, text)]
    for bare in _BARE_LINK.finditer(text):
        noun = bare.group("noun")
        if relation_kind(noun.split()[-1]) not in ("person", "place", "organisation") or bare.group("joint") not in ("of", "where"):
            continue
        if noun == "place" and text[: bare.start()].endswith("in "):
            continue  # "in place of": an idiom, no birthplace
        if _is_link(bare, text) and all(bare.end() <= m.start() or bare.start() >= m.end() for m in links):
            links.append(bare)
    return sorted(links, key=lambda m: m.start())


def _is_link(match: re.Match[str], text: str) -> bool:
    if match.group("noun").split()[0] in _NOT_NOUNS:
        return False
    if match.group("joint") == "with" and _LINK.match(text, match.end("joint") + 1) is None:
        return False  # "the country with the party that X belongs to": only a link that nests another
    following = match.group("object").strip()
    if following.lower() in ("what", "which", "whom") or re.fullmatch(r"\d{3,4}\W*", following):
        return False  # "the signing of what treaty", "the protests of 1989": no nested lookup
    if text[: match.start()].rstrip().endswith(","):
        return False  # an appositive ("Steven Covey, the father of Sean Covey, wrote …") names, it nests nothing
    if match.group("joint"):
        return True
    # a zero relative: a name, then its verb ("the city Kevin Durant played for")
    after = text[match.end("noun") :].split()[:_ZERO_RELATIVE_SPAN]
    name = 0
    while name < len(after) and (_is_name_word(after[name]) or (name and after[name] in _PARTICLES)):
        name += 1
    return 0 < name < len(after) and _is_verb(after[name])


def _unfold_possessives(text: str) -> str:
    """``X's father's birthplace`` → ``the birthplace of the father of X``."""

    def unfold(match: re.Match[str]) -> str:
        nouns = [part.split(" ", 1)[1] for part in re.split(r"(?=['\u2019]s )", match.group("chain")) if part]
        if any(noun in _MODIFIERS or noun in _CONTENT_FREE for noun in nouns):
            return match.group(0)  # "Mr. Smith's first name": an adjective, not the relation
        if relation_kind(nouns[0]) == "entity":
            return match.group(0)  # "Mach's principle", "Hanlon's razor": a name, not a relation of Mach
        out = match.group("name")
        for noun in nouns:
            out = f"the {noun} of {out}"
        return out

    return _POSSESSIVE_CHAIN.sub(unfold, text)


def _own_words(words: list[str], joint: str) -> tuple[list[str], list[str]]:
    """The innermost level's own words (its named anchor, or its clause) and the words after them."""
    if joint == "of":
        return _anchor(words)
    # a relative clause: its subject up to the first verb, then that verb group; when the relative
    # word is the subject ("the pianist who recorded X"), the object up to the next verb too
    span = len(joint.split())
    joint_end = next((i + span for i in range(1, len(words)) if span and words[i : i + span] == joint.split()), -1)
    for i, word in enumerate(words[2:], start=2):
        if _is_verb(word):
            group, rest = _verb_group(words[i:])
            if i == _past_adverbs(words, joint_end) and rest:
                cut = next((j for j, w in enumerate(rest) if _is_verb(w)), len(rest))
                group, rest = group + rest[:cut], rest[cut:]
            return words[:i] + group, rest
        if word.endswith(",") and i > joint_end:
            # a comma before any verb the rules know ends the clause ("… the X River turns into, where …")
            return [*words[:i], word.rstrip(",")], words[i + 1 :]
    return words, []


def _past_adverbs(words: list[str], i: int) -> int:
    """The first position from ``i`` that holds no adverb ("who *also* played", "that *later* became")."""
    while 0 <= i < len(words) and (words[i].lower() in _ADVERBS or (len(words[i]) > 4 and words[i].lower().endswith("ly"))):
        i += 1
    return i


def _anchor(words: list[str]) -> tuple[list[str], list[str]]:
    """``the composer of Aschenbrödel was a citizen`` → the words up to the end of the name, the rest."""
    start = next((i for i, w in enumerate(words) if i >= 3 and _is_name_word(w)), None)
    if start is None:
        return words, []
    end = _name_end(words, start)
    if end == start + 1 and _DEMONYM_WORD.match(words[start]):
        # a nationality names no one ("the Swedish performance artist Ayesha"): the name after it does
        later = next((i for i in range(end, min(end + _DEMONYM_REACH, len(words))) if _is_name_word(words[i])), None)
        if later is None:
            return words, []
        end = _name_end(words, later)
    return words[:end], words[end:]


def _name_end(words: list[str], start: int) -> int:
    """Where the name that starts at ``start`` ends: its words, particles and a title's small words."""
    end = start
    while end < len(words) and (
        _is_name_word(words[end])
        or words[end].lower() in _PARTICLES
        # a title's small words ("Jump for Glory", "Meet Me in St. Louis") when a name word follows
        or (
            words[end] in _TITLE_WORDS
            and end + 1 < len(words)
            and (_is_name_word(words[end + 1]) or words[end + 1] in _PARTICLES)
        )
    ):
        end += 1
    while end > start and words[end - 1].lower() in _PARTICLES:
        end -= 1
    if end < len(words) and words[end - 1].endswith(("'s", "\u2019s")) and not _is_verb(words[end]):
        end += 1  # a name's own noun, left folded ("Hanlon's razor")
    return end


def _verb_group(words: list[str]) -> tuple[list[str], list[str]]:
    """Leading auxiliaries, then one main verb or a copula's noun, its particles ("was born in"), the rest."""
    i = 0
    while i < len(words) and words[i].lower() in _AUXILIARIES:
        i += 1
    if i < len(words) and _is_verb(words[i]) and words[i].lower() not in _AUXILIARIES:
        i += 1
    elif i and i < len(words) and words[i].lower() in ("a", "an", "the"):
        # a copula's noun ("was a citizen", "is the capital"): the article and the noun after it
        i = min(i + 2, len(words))
    elif i and i + 1 < len(words) and words[i].islower() and words[i + 1].lower() in _VERB_PARTICLES:
        # a copula's bare noun and its particle ("is part of", "is home to")
        i += 1
    while i < len(words) and words[i].lower() in _VERB_PARTICLES:
        i += 1
    return words[:i], words[i:]


def _is_verb(word: str) -> bool:
    word = word.lower().strip(",")
    return word in _VERBS or word in _AUXILIARIES or (len(word) > 4 and word.endswith("ed"))


def _is_name_word(word: str) -> bool:
    word = word.lstrip("(\"'\u201c")
    return word[:1].isupper() or word[:1].isdigit()


def _strip_article(words: str) -> str:
    return re.sub(r"^(?:the|a|an) ", "", words)


def _has_content(words: str) -> bool:
    return any(w.lower().strip(",") not in _CONTENT_FREE for w in words.split())


def _no_span(found: Answer, value: str) -> bool:
    """The extractor found no span and answered with its best sentence (its claim is that sentence)."""
    quoted = found.claims[0].text if found.claims else ""
    return len(value.split()) > MAX_VALUE_WORDS or quoted == value


def lead_with_found(
    asked: str,
    sub_query: str,
    evidence: Sequence[Evidence],
    queries: list[Conditioned],
    *,
    limit: int,
    weight: int,
    relevance: Callable[[Evidence], float] | None = None,
    question: str = "",
    anchors: Mapping[str, str] | None = None,
    beam_size: int = BEAM,
    titles: Collection[str] = (),
) -> list[Conditioned]:
    """Put the values the previous lookup found first among a dependent sub-query's conditioned queries.

    The values are a small beam of typed candidates read from the lookup's passages by the relation
    ``asked`` names (:func:`hoprag.pipeline.value_bridges.found_values`, ``anchors`` saying which
    value each step looked up), since one wrong value loses every later hop; when none is found,
    the extractive answer to ``asked`` over the evidence (most relevant first, with ``relevance``)
    stands in. Each query repeats its value ``weight`` times before ``sub_query``, like a bridge, and
    carries every candidate with its score for the trace. A value the question already names, or a
    whole sentence (no span was found), is no value; a value that is already a bridge leads as that
    bridge. Without a value, ``queries`` come back unchanged; at most ``limit`` queries are returned."""
    ranked = sorted(evidence, key=lambda e: e.hit.rank)
    if not asked or not ranked:
        return queries
    if relevance is not None:
        ranked = sorted(ranked, key=lambda e: -relevance(e))  # stable: ties keep their retrieval rank
        ranked = [replace(e, hit=replace(e.hit, rank=i)) for i, e in enumerate(ranked, start=1)]
    candidates = found_values(asked, ranked, question=question, anchors=anchors, relevance=relevance, titles=titles)
    chosen = [(c.value, c.chunk_id) for c in beam(candidates, beam_size)]
    if not chosen:
        chosen = _extracted(asked, ranked, question)
    recorded = tuple(tuple(c.as_json()) for c in candidates[:CANDIDATES_KEPT])
    leads: list[Conditioned] = []
    rest = list(queries)
    for value, cited in chosen:
        key = fold(value)
        if any(fold(q.bridge) == key for q in leads):
            continue
        same = next((q for q in rest if fold(q.bridge) == key), None)
        if same is not None:
            rest.remove(same)
            leads.append(replace(same, kind="found", candidates=recorded))
            continue
        leads.append(Conditioned(query=f"{value} " * weight + sub_query, bridge=value, kind="found", from_chunk=cited,
                                 candidates=recorded))
    if not leads:
        return queries
    return [*leads, *rest][: max(limit, 1)]


def _extracted(asked: str, ranked: Sequence[Evidence], question: str) -> list[tuple[str, str]]:
    """The extractive answer to ``asked``, over all the evidence and over its most relevant passage."""
    folded_question = fold(question)
    out: list[tuple[str, str]] = []
    for source in ([ranked, ranked[:1]] if len(ranked) > 1 else [ranked]):
        found = extract_answer(asked, source, lookup=True)
        value = found.text.strip()
        key = fold(value)
        if found.abstained or not key or _no_span(found, value) or key in folded_question:
            continue
        cited = next((c.chunk_id for claim in found.claims for c in claim.citations), source[0].chunk_id)
        out.append((value, cited))
    return out
