"""How the final answer's candidate spans are read against the question (the answer side only).

A plan's lookups read their bridges with :mod:`hoprag.pipeline.answer_types` and the extractive
answerer's own rules; the rules here judge the final answer alone (:class:`AnswerReading`), so tuning
them never moves which passages a hop retrieves. Each rule reads the question's own words or the
chain:

- the wh-word that opens the question (or a clause after its comma) says what is asked: "Who was
  president when …?" a person, "How many … when he died?", "What amount of …" a number;
- the noun a "what/which" phrase asks about ("What county …", "which island?") is the last word of a
  name that answers it ("Avery County", "Panglao Island") or the noun before it ("the county of
  Cumbria"); another place noun there ("the province of Vojvodina" for "which country?") says no;
- "How many campuses …": the number the counted noun (the group's last word) follows;
- a sentence that opens with a name and defines it with that noun group answers with the name ("Cesar
  Millan (…) is a Mexican-American dog behaviorist" for "… what Mexican-American dog behaviorist?");
- the question's relation words, stemmed and paraphrased, near the candidate ("married" for "husband");
- the words around the candidate say its kind: a person after "by", "husband", or before a life
  span "(1537–1583)"; a place after "in", "the city of", or in a life span's place slot
  "(Fomboni, 1 November 1874 – …)", which answers "Where was … born?";
- "Who is the president of …?" asks a person, not the office: a candidate holding the asked role
  ("President of the International Olympic Committee") is its name;
- a candidate that opens with a name the question says and goes on ("Laurence Olivier Award for Best
  Newcomer") is the question's own name, not its answer;
- a name an earlier hop's leading passage holds is the bridge the chain went through, not the
  answer ("Who is the spouse of the director of Jump for Glory?": not the director);
- a candidate is cleaned of a leading preposition ("In Serbia") and a sentence-opening adverb or title
  ("Meanwhile,", "Incumbent"): still a span of the sentence, so the claim that cites it holds the answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from hoprag.pipeline.text import STOPWORDS, content_tokens, fold, singular, tokens
from hoprag.pipeline.yes_no import COUNTRIES
from hoprag.records import Evidence

__all__ = [
    "AnswerReading", "asked_kinds", "clean_candidate", "context_fit", "counted_noun_bonus", "defined_subject_bonus", "definition",
    "head_noun_bonus", "role_title", "head_nouns", "life_slot_bonus", "named_head", "relation_proximity", "relation_terms", "stem",
]

BRIDGE_WEIGHT = 1.0  # taken from a candidate an earlier hop's leading passage holds (the chain's bridge)
CONTEXT_WEIGHT = 0.5  # times context_fit (-1, 0, 1): the words around a candidate say its kind
SHAPE_WEIGHT = 1.0  # per rule met of the asked noun, the counted noun and the life span's place slot
TITLE_WEIGHT = 1.0  # taken from a candidate that names the asked role ("President of …" for "Who is the president of …?")
NAMED_HEAD_WEIGHT = 1.0  # taken from a candidate that opens with a name the question says
DEFINED_WEIGHT = 3.0  # a candidate the sentence opens with and defines with the asked noun group (outweighs nearby words)
PROXIMITY_WINDOW = 4  # words either side of a candidate where the question's relation words count
BRIDGE_LEAD = 2  # leading evidence items whose earlier hops hold the bridges (the chain the engine ranked first)

_WH = re.compile(r"(?:^|,\s*)(?:(?:in|at|on|of|for|to|from|by|during)\s+)?(who|whom|whose|when|where|what|which|how)\b(\s+\w+)?", re.I)
_ASKS_NUMBER = re.compile(r"\b(?:what|which) (?:amount|percentage|percent|number|proportion|share)\b", re.I)
_ENTITY_KINDS = ("entity", "quoted", "identifier")
# words that end the noun group a "what/which" asks about ("What county shares a border …": county, shares)
_PHRASE_END = STOPWORDS | {"is", "was", "were", "are", "did", "does", "do", "has", "have", "had", "can", "could", "will", "would"}
# a preposition before a name is no part of it ("In Serbia, …")
_LEADING = frozenset("in on at of from for by with to into outside inside during after before since until under near".split())
# lowercase words that join two names into one mention ("Dauis on Panglao Island")
_JOINS = frozenset("on in at near".split())
# a sentence's opening adverb, capitalised as such ("Meanwhile, the Socialist Party …")
_DISCOURSE = frozenset(
    """however meanwhile though although thus therefore moreover furthermore nevertheless nonetheless instead
    later today currently additionally similarly also still then finally eventually initially originally
    subsequently consequently hence besides otherwise afterwards afterward incumbent""".split()
)
# a relation word and the words a sentence states it with
_PARAPHRASES: dict[str, frozenset[str]] = {
    key: frozenset(words.split())
    for key, words in {
        "married": "husband wife spouse married marriage",
        "spouse": "husband wife spouse married marriage",
        "husband": "husband spouse married",
        "wife": "wife spouse married",
        "father": "father son daughter",
        "mother": "mother son daughter",
        "child": "son daughter child children",
        "children": "son daughter child children",
        "educated": "attended educated graduated studied school college university",
        "attended": "attended educated graduated studied",
        "employer": "worked employed professor joined works",
        "born": "born birth native",
        "birthplace": "born birth native",
        "died": "died death",
        "die": "died death",
        "founded": "founded formed established",
        "formed": "founded formed established",
        "played": "played starring portrayed voiced role",
        "plays": "played starring portrayed voiced role",
        "play": "played starring portrayed voiced role",
        "voice": "voiced voice",
        "directed": "directed director",
        "director": "directed director",
        "located": "located situated lies",
    }.items()
}


def asked_kinds(question: str) -> tuple[str, ...] | None:
    """The span kinds the question's opening wh-word asks for, or None when it does not say
    (the caller then reads the question's words as a lookup would)."""
    if _ASKS_NUMBER.search(question):
        return ("number",)
    match = _WH.search(question)
    if match is None:
        return None
    wh, after = match.group(1).lower(), (match.group(2) or "").strip().lower()
    if wh in ("who", "whom", "whose", "where"):
        return _ENTITY_KINDS
    if wh == "how" and after in ("many", "much"):  # "How many … when he died?": a number, whatever "when" follows
        return ("number",)
    if wh == "when" or (wh in ("what", "which") and after in ("year", "years", "date", "decade", "century")):
        return ("date",)
    return None


def head_nouns(question: str) -> set[str]:
    """The nouns a "what/which" phrase asks about ("What political party was …" → {political, party}),
    singular; empty when the question asks with another word."""
    copula = _NAMED_NOUN.search(question)
    match = copula or re.search(r"(?:^|,\s*|\b(?:in|at|on|of|to|for)\s+)(?:what|which)\s+((?:[\w-]+\W+){0,3})", question, re.I)
    if match is None:
        return set()
    out: set[str] = set()
    for word in match.group(1).split():
        if copula and not word[:1].islower():  # a name after the copula ("What is the Edsa Shangri-La …") is asked about
            break
        words = tokens(word)
        if not words or words[0] in _PHRASE_END:
            break
        out |= {singular(w) for w in words}
    return out


# "What is the (name of the) main international airport …": the noun group after the copula
_NAMED_NOUN = re.compile(r"^(?:what|which)\s+(?:is|was|are|were)\s+(?:the\s+)?(?:names?\s+of\s+(?:the\s+)?)?((?:[\w-]+(?:\W+|$)){0,3})", re.I)


def head_noun_bonus(value: str, sentence: str, heads: set[str]) -> float:
    """1 when the candidate ends with the asked noun ("Avery County" for "What county …") or
    follows "<noun> of" ("the county of Cumbria"), else 0."""
    if not heads:
        return 0.0
    words = tokens(value)
    if words and singular(words[-1]) in heads and len(words) > 1:
        return 1.0
    before = tokens(sentence[: max(sentence.find(value), 0)])[-2:]
    if len(before) == 2 and before[1] == "of" and singular(before[0]) in heads:
        return 1.0
    if "country" in heads and fold(value) in COUNTRIES:  # "What country was the author of Brand a citizen of?": Norway
        return 1.0
    if heads & _PLACE_OF:  # "In which country …": "White County", "the province of Vojvodina" name another kind of place
        other = (words[-1:] if len(words) > 1 else []) + (before[:1] if len(before) == 2 and before[1] == "of" else [])
        if any(singular(w) in _PLACE_OF and singular(w) not in heads for w in other):
            return -1.0
    return 0.0


def counted_noun_bonus(question: str, value: str, sentence: str) -> float:
    """1 when the number is followed, within five words and before another number, by the noun "How many …" counts."""
    match = re.search(r"\b(?:how many|(?:what|which) (?:amount|number) of)\s+((?:[\w-]+\s*){1,4})", question, re.I)
    group = tokens(match.group(1))[:4] if match else []  # its last word is counted ("How many Publix stores are": stores)
    group = group[: next((i for i, w in enumerate(group) if w in _PHRASE_END or w.endswith("ly")), len(group))]
    if not group:
        return 0.0
    noun = singular(group[-1])
    at = sentence.find(value)
    if at < 0:
        return 0.0
    for word in tokens(sentence[at + len(value):])[:5]:
        if word[:1].isdigit():  # "founded in 1857 and has 12 campuses": the noun is the nearer number's
            return 0.0
        if singular(word) == noun:
            return 1.0
    return 0.0


def relation_terms(question: str) -> set[str]:
    """The question's content words and the words a sentence states its relations with."""
    terms = set(content_tokens(question))
    for word in tokens(question):
        terms |= _PARAPHRASES.get(word, frozenset())
    return terms


def clean_candidate(value: str, sentence: str, heads: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The candidate without a leading preposition; None for a sentence's opening adverb. With the
    asked nouns ``heads``, a name joined to the one that ends in an asked noun is cut off ("Dauis on
    Panglao Island" for "which island?")."""
    words = value.split()
    joins = [i for i, w in enumerate(words) if w in _JOINS]
    if heads and joins and singular(words[-1].lower()) in heads and joins[-1] < len(words) - 2:
        words = words[joins[-1] + 1:]
    while len(words) > 1 and words[0].lower() in _LEADING:
        words = words[1:]
    if not words:
        return None
    if words[0].lower() in _DISCOURSE:
        if len(words) == 1:
            return None
        words = words[1:]
    cleaned = " ".join(words)
    if len(words) == 1 and sentence.startswith(cleaned) and cleaned.lower().endswith("ly") and sentence[len(cleaned):].startswith(","):
        return None  # "Strikingly, …"
    starts = [m.start() for m in re.finditer(re.escape(cleaned), sentence)] if f"-{cleaned}" in sentence else []  # (no regex to build)
    if starts and all(i > 0 and sentence[i - 1] == "-" for i in starts):
        return None  # "non-Jewish European groups": a word's tail, no name
    return cleaned if cleaned in sentence else value


@lru_cache(maxsize=1 << 14)  # the same words are stemmed for every candidate of every sentence
def stem(word: str) -> str:
    """A crude stem of a verb's forms, so "marry" meets "married" and "educated" "educate". A plural
    keeps its "s": "three hosting regions: KR-North (Oslo), …" is no nearer its first member for a
    question about a "region"."""
    for suffix in ("ied", "ing", "ed", "y", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def relation_proximity(sentence: str, value: str, terms: set[str], window: int = 4) -> int:
    """How many of ``terms`` (stemmed) occur within ``window`` words of the candidate's first mention."""
    words = tokens(sentence)
    target = tokens(value)
    stems = {stem(t) for t in terms}
    for i in range(len(words) - len(target) + 1) if target else ():
        if words[i : i + len(target)] == target:
            around = words[max(0, i - window) : i] + words[i + len(target) : i + len(target) + window]
            return len(stems & {stem(w) for w in around})
    return 0


_LIFE = re.compile(r"^\s*\((?:born|b\.|c\.|n[ée]e?\b|\d{3,4}\s*[–-])")
_PERSON_BEFORE = frozenset(
    """by starring married husband wife son daughter father mother brother sister actor actress director
    singer painter writer elected president minister leader founder coach""".split()
)
_DATE_NEXT = re.compile(r"^,\s*(?:c\.\s*)?(?:\d|(?:January|February|March|April|May|June|July|August|September|October|November|December)\b)")
_TITLES = frozenset("president king queen sir dr prince princess lord lady saint general governor senator".split())
_PLACE_BEFORE = frozenset("in at near from".split())
_PLACE_OF = frozenset("city county state country town village province region capital district island".split())
_ORG_OR_PLACE = frozenset(
    """university college school institute academy party records company corporation club team league
    association society church band orchestra river city county island state province republic kingdom
    lake valley district bay sea ocean award awards prize war""".split()
)


def context_fit(value: str, sentence: str, kind: str) -> float:
    """+1 when the words around the candidate say it is of the asked kind ("Mantua" after "city of"
    for "Where …?"; "Harold Knight" after "husband" for "Who …?"), -1 when they say it is another
    ("Lorenzo Costa (1537–1583)" for "Where …?"), else 0."""
    if kind not in ("person", "place"):
        return 0.0
    at = sentence.find(value)
    if at < 0:
        return 0.0
    before = tokens(sentence[:at])[-2:]
    after = sentence[at + len(value):]
    words = set(tokens(value))
    # "Lorenzo Costa (1537–1583)", "directed by X", "President James K. Polk"
    person = bool(_LIFE.match(after)) or (bool(before) and before[-1] in _PERSON_BEFORE) or (
        len(value.split()) > 2 and value.split()[0].lower() in _TITLES)
    if value[:1].isdigit():  # "29th", "1990s": no name of a person or a place
        return -1.0
    # "born in X", "the city of X", "Salima Machamba (Fomboni, 1 November 1874 – …)": a birthplace before its date
    place = (bool(before) and before[-1] in _PLACE_BEFORE) or (len(before) == 2 and before[1] == "of" and before[0] in _PLACE_OF) or (
        sentence[:at].rstrip().endswith("(") and bool(_DATE_NEXT.match(after)))
    if place and _LIFE.match(after) and sentence[:at].rstrip().endswith("("):
        person = False
    if kind == "person":
        if words & _ORG_OR_PLACE:
            return -1.0
        return 1.0 if person and not place else (-1.0 if place and not person else 0.0)
    # a life span after a one-word place ("count of Nájera (b. 1126–1170)") is its holder's
    return 1.0 if place and not person else (-1.0 if person and not place and len(words) > 1 else 0.0)


_COPULA = re.compile(r"^[\s,]*(?:is|was|are|were)\s+(?:an?|the|one of the)\s", re.I)
_ASIDE = re.compile(r"\([^()]*\)")
_DEFINITION_END = re.compile(r"[,;:(]|\b(?:of|in|by|who|whom|which|that|from|with|for|on|at|and|based|known|located)\b", re.I)
DEFINED_WORDS = 10  # words of a definition ("is a 1998 Telugu comedy film …") read for the asked noun


def definition(value: str, sentence: str) -> str | None:
    """The noun group defining ``value`` when the sentence opens with it ("Navvulata (English: Joke) is
    a 1998 Telugu comedy film, produced by …": "1998 Telugu comedy film", the aside skipped); or None."""
    at = sentence.find(value)
    if at < 0 or sentence[:at].strip().lower() not in ("", "the"):
        return None
    rest = _ASIDE.sub(" ", sentence[at + len(value):])
    match = _COPULA.match(rest)
    return None if match is None else _DEFINITION_END.split(rest[match.end():], maxsplit=1)[0].strip()


def defined_subject_bonus(value: str, sentence: str, heads: set[str] | frozenset[str]) -> float:
    """1 when the sentence opens with the candidate and defines it with the noun group the question's
    "what/which" asks about: "Cesar Millan (…) is a Mexican-American dog behaviorist with …" for
    "… what Mexican-American dog behaviorist …?", "Navvulata (…) is a 1998 Telugu comedy film" for
    "Which 1988 Telugu comedy …?". A definition in other words of the question describes the
    chain's bridge ("the entertainer and comedic actor who had what nickname?": not the actor)."""
    group = definition(value, sentence) if heads else None
    described = {singular(w) for w in content_tokens(group or "")[:DEFINED_WORDS]}
    return 1.0 if described & set(heads) else 0.0


_NOT_DEFINED = frozenset({"date", "number", "place"})
def named_head(question: str, value: str) -> float:
    """1 when the candidate opens with two or more words the question names in a row and goes on: the
    question's own name with a tail ("Laurence Olivier Award for Best Newcomer"), not the answer."""
    words, asked = tokens(value), f" {' '.join(tokens(question))} "
    return 1.0 if len(words) > 2 and f" {' '.join(words[:2])} " in asked and f" {' '.join(words)} " not in asked else 0.0


_ROLE_ASKED = re.compile(r"\bwho\s+(?:is|was|are|were)\s+(?:the\s+)?((?:[\w-]+\s+){0,2}?[\w-]+)\s+of\b", re.I)


def role_title(question: str, value: str, kind: str) -> float:
    """1 when "Who is the president of …?" meets a candidate that holds the asked role ("President of
    the International Olympic Committee"): the office's name, not the person who holds it."""
    match = _ROLE_ASKED.search(question) if kind == "person" else None
    if match is None:
        return 0.0
    roles = {singular(w) for w in tokens(match.group(1)) if w not in STOPWORDS}
    return 1.0 if roles & {singular(w) for w in tokens(value)} else 0.0


_BORN_ASKED = re.compile(r"\b(?:born|birth\w*)\b", re.I)
_DIED_ASKED = re.compile(r"\b(?:die|died|death)\b", re.I)


def life_slot_bonus(question: str, value: str, sentence: str) -> float:
    """1 when the question asks where someone was born (died) and the candidate holds the place slot
    of a life span: "Salima Machamba (Fomboni, 1 November 1874 – Pesmes, …, 7 August 1964)"."""
    at = sentence.find(value)
    if at < 0 or not _DATE_NEXT.match(sentence[at + len(value):]):
        return 0.0
    opened = sentence[:at].rstrip()
    if _BORN_ASKED.search(question) and opened.endswith("("):
        return 1.0
    if _DIED_ASKED.search(question) and re.search(r"\(\s*[^()]*\d[^()]*[–-]\s*$", opened):
        return 1.0
    return 0.0


@dataclass(frozen=True)
class AnswerReading:
    """What a final answer's candidates are read against, built once per question (:meth:`of`)."""

    question: str
    kind: str  # :func:`hoprag.pipeline.answer_types.question_kind`
    kinds: tuple[str, ...] | None  # :func:`asked_kinds`
    terms: frozenset[str]  # :func:`relation_terms`
    heads: frozenset[str]  # :func:`head_nouns`
    earlier: tuple[tuple[int, str], ...]  # (hop, folded text of the leading items of earlier hops)

    @classmethod
    def of(cls, question: str, kind: str, evidence: Sequence[Evidence]) -> AnswerReading:
        lead = evidence[:BRIDGE_LEAD]
        earlier = tuple(
            (hop, fold(" ".join(f"{e.title} {e.text}" for e in lead if e.hop < hop)))
            for hop in sorted({e.hop for e in evidence})
        )
        return cls(question, kind, asked_kinds(question), frozenset(relation_terms(question)),
                   frozenset(head_nouns(question)), earlier)

    def proximity(self, sentence: str, value: str) -> int:
        """The question's relation words (stemmed, paraphrased) near the candidate."""
        return relation_proximity(sentence, value, set(self.terms), PROXIMITY_WINDOW)

    def is_bridge(self, value: str, hop: int) -> bool:
        """Whether a leading passage of an earlier hop than ``hop`` names ``value``."""
        key = fold(value)
        return len(key) > 2 and any(h == hop and key in text for h, text in self.earlier)

    def bonus(self, value: str, sentence: str, hop: int) -> float:
        """What the rules of this module add to a candidate of ``sentence`` (a passage of ``hop``)."""
        score = -BRIDGE_WEIGHT if self.is_bridge(value, hop) else 0.0
        score -= TITLE_WEIGHT * role_title(self.question, value, self.kind)
        score -= NAMED_HEAD_WEIGHT * named_head(self.question, value)
        score += CONTEXT_WEIGHT * context_fit(value, sentence, self.kind)
        if self.kind not in _NOT_DEFINED:  # "what/which/who" asks a thing the passage defines, not its date or place
            score += DEFINED_WEIGHT * defined_subject_bonus(value, sentence, self.heads)
        score += SHAPE_WEIGHT * (head_noun_bonus(value, sentence, set(self.heads))
                                 + counted_noun_bonus(self.question, value, sentence)
                                 + life_slot_bonus(self.question, value, sentence))
        return score
