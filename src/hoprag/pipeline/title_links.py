"""Titles as links: a lookup is answered by the passage about its name; passages naming each other chain.

Encyclopaedic and enterprise corpora name a document by its subject, the way a hyperlink does. Two
uses here, both offline and model-free: :func:`link_titles` ranks a bridge lookup's hits, and
:func:`title_linker` tells chain ordering which held passages name each other.

A conditioned hop looks up a bridge value ("Ingmar Bergman", "Sir Henry Vane-Tempest", "Haseki
Sultan of Ottoman Sultan Mehmed IV"). BM25 ranks passages by how often they use its words, so in a
large corpus the films that mention a director several times outrank the director's own article,
and only a hop's top hits are kept: a hit whose title the value names is the lookup's answer.

``link_titles`` moves such hits to the front of the list, best link first, and gives them the list's
best score (so chain ordering treats them as the hop's best find); the other hits keep their order.
A title is linked when its key (:func:`~hoprag.index.entities.title_key`: folded, without a trailing
parenthetical or leading article) equals the value's key, or — for titles of at least two words —
appears in the value as a run of whole words ("henry vane-tempest" in "sir henry vane-tempest").
The longer the linked title, the stronger the link.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache

from hoprag.index.entities import title_key
from hoprag.pipeline.text import tokens
from hoprag.records import Evidence, Hit

__all__ = ["link_strength", "link_titles", "title_linker"]

MIN_CONTAINED_WORDS = 2  # a one-word title inside a longer value ("Ottoman") is too weak a link


def link_strength(value_key: str, title: str) -> int:
    """How strongly the bridge value (as a title key) names a passage titled ``title``: 0 = not at
    all, else the linked title's word count (an exact match counts one more than containment)."""
    key = title_key(title)
    if not key or not value_key:
        return 0
    words = key.split()
    if key == value_key:
        return len(words) + 1
    if len(words) >= MIN_CONTAINED_WORDS and f" {key} " in f" {value_key} ":
        return len(words)
    return 0


def link_titles(hits: Sequence[Hit], value: str) -> list[Hit]:
    """``hits`` with the passages whose titles ``value`` names first (see the module docstring)."""
    value_key = title_key(value) if value else ""
    if not value_key or not hits:
        return list(hits)
    strengths = [link_strength(value_key, h.title) for h in hits]
    if not any(strengths) or (strengths[0] and strengths[0] == max(strengths)):
        return list(hits)
    top = max(h.score for h in hits)
    order = sorted(range(len(hits)), key=lambda i: (-strengths[i], i))
    out = []
    for rank, i in enumerate(order, start=1):
        hit = hits[i]
        score = top if strengths[i] else hit.score
        out.append(replace(hit, rank=rank, score=score) if (rank, score) != (hit.rank, hit.score) else hit)
    return out


def title_linker(held: Mapping[str, Evidence], named: Callable[[str], bool]) -> Callable[[str, str], float]:
    """``linked(a, b)`` for held chunk ids: 1.0 when one passage names the other's title (as whole
    words, folded) where the question does not name it (``named``), else 0.0.

    A passage that names another's subject is how a chain's links are written (the film names its
    director, the wife her husband); a title the question already names links every passage that
    mentions it (the campuses of a university, the films of a named director) and says nothing about
    which of them form the chain. Two chunks of one document are not a link; titles shorter than
    three letters are too ambiguous to count. (Two documents with one title key — versions of a
    policy, paragraphs of one article — do link: ruling them out cost MuSiQue's pooled sample 0.03.)"""
    texts: dict[str, str] = {}
    keys: dict[str, str] = {}

    def text(c: str) -> str:
        if c not in texts:
            texts[c] = _words(held[c].title + " . " + held[c].text)
        return texts[c]

    def key(c: str) -> str:
        if c not in keys:
            k = _words(title_key(held[c].title))
            keys[c] = k if len(k) >= 5 else ""  # padded: three letters or more
        return keys[c]

    def names(a: str, b: str) -> bool:
        kb = key(b)
        return bool(kb) and not named(b) and kb in text(a)

    def linked(a: str, b: str) -> float:
        if held[a].doc_id == held[b].doc_id:
            return 0.0
        return 1.0 if names(a, b) or names(b, a) else 0.0

    return linked


@lru_cache(maxsize=2048)
def _words(text: str) -> str:
    """Folded word tokens of ``text``, space-separated and space-padded, for whole-word containment;
    hyphens split words, so a title inside a compound still counts ("Bergman-directed"). Cached: a
    passage is held, and linked, again at every hop of every question."""
    return " " + " ".join(tokens(text)).replace("-", " ") + " "
