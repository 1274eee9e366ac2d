"""The swappable roles of the multi-hop engine, and their offline (model-free) implementations.

Each role is one method. The offline ones are deterministic and need no network; the LLM-backed
ones live in :mod:`hoprag.pipeline.llm_roles` and take any :class:`~hoprag.llm.base.LLM`.

- ``Expander.condition(question, sub_query, evidence)`` → the queries that ask ``sub_query`` with
  what ``evidence`` found (the bridge values) — one query per bridge to follow;
- ``Judge.sufficient(question, evidence)`` → whether the held evidence answers the question;
- ``Reranker.rerank(question, evidence, steps)`` → the buffer ordered by relevance (best first);
- ``Synthesizer.answer(question, evidence)`` → an Answer whose claims cite the evidence; given
  ``on_token``, it also hands the answer's text to it piece by piece as it is written (the engine
  passes it only when its caller asked for tokens, so a synthesiser without it still plugs in).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from hoprag.llm.streaming import split_text
from hoprag.pipeline.bridges import BridgeCandidate, extract_bridges, title_key
from hoprag.pipeline.chains import Branch, TermWeights, order_by_chains, question_coverage
from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.graph_hop import graph_branches
from hoprag.pipeline.text import Analyzer, fold, tokens
from hoprag.pipeline.title_links import title_linker
from hoprag.records import Answer, Chunk, Document, Evidence, Hit, HopStep


@dataclass(frozen=True)
class Conditioned:
    """A query issued for a sub-query, with the bridge it follows and the evidence it came from."""

    query: str
    bridge: str = ""
    kind: str = ""
    from_chunk: str = ""
    #: a found value's rivals, ``[value, score, passages]`` best first (:mod:`hoprag.pipeline.value_bridges`)
    candidates: tuple[tuple[str, float, int], ...] = ()


class Expander(Protocol):
    name: str

    def condition(self, question: str, sub_query: str, evidence: Sequence[Evidence]) -> list[Conditioned]: ...


class Judge(Protocol):
    name: str

    def sufficient(self, question: str, evidence: Sequence[Evidence]) -> bool: ...


class Reranker(Protocol):
    name: str

    def rerank(self, question: str, evidence: Sequence[Evidence], steps: Sequence[HopStep] = ()) -> list[Evidence]: ...


class Synthesizer(Protocol):
    name: str

    def answer(self, question: str, evidence: Sequence[Evidence], *,
               on_token: Callable[[str], None] | None = None) -> Answer: ...


class CorpusView:
    """What offline roles need of the corpus: title keys (for link-like bridges) and term weights."""

    def __init__(self, chunks: Mapping[str, Chunk], documents: Mapping[str, Document]) -> None:
        self.chunks = chunks
        self.documents = documents
        self.analyze = Analyzer()
        # a loaded index brings its own corpus statistics (from the BM25 matrix, restricted to the
        # caller's view): no pass over the corpus text; chunks are analysed when first looked at
        stats = getattr(chunks, "term_stats", None)
        if stats is not None:
            self.term_weights = TermWeights(self._text, self.analyze, df=stats.df, count=stats.count)
        else:
            texts = {cid: _title_of(c, documents) + "\n" + c.text for cid, c in chunks.items()}
            self.term_weights = TermWeights(texts, self.analyze)
        self._titles: Collection[str] | None = None

    def _text(self, chunk_id: str) -> str:
        return _title_of(self.chunks[chunk_id], self.documents) + "\n" + self.chunks[chunk_id].text

    @property
    def known_titles(self) -> Collection[str]:
        if self._titles is None:
            # a loaded index looks title keys up in its own table, one candidate at a time
            stored = getattr(self.documents, "title_keys", None)
            keys = stored() if stored is not None else None
            if keys is None:
                titles = getattr(self.documents, "titles", None)
                found = titles() if titles is not None else (d.title for d in self.documents.values())
                keys = frozenset(title_key(t) for t in found if t)
            self._titles = keys
        return self._titles


def without_subject(sub_query: str, source_title: str, bridge: str) -> str:
    """``sub_query`` without the name of the passage the bridge was found in, when the sub-query names
    that passage's title (and the bridge does not share its words): the bridge stands in for the
    subject the hop comes from, whose name would only pull back that subject's own neighbours
    ("Cartoon Network … is on a network founded by who?", not "… Thumb Wrestling Federation is on …").
    A title the sub-query does not name leaves it whole: its words there are the question's own ("Which
    wipe method …" found the Data Wipe Standard). All words gone: the sub-query as it was."""
    if not source_title or not _names_title(" ".join(fold(sub_query).split()), source_title):
        return sub_query
    subject = set(tokens(title_key(source_title))) - set(tokens(bridge))
    if not subject:
        return sub_query
    kept = [w for w in sub_query.split() if not (set(tokens(w)) and set(tokens(w)) <= subject)]
    return " ".join(kept) if kept else sub_query


def _title_of(chunk: Chunk, documents: Mapping[str, Document]) -> str:
    document = documents.get(chunk.doc_id)
    return document.title if document else ""


class BridgeExpander:
    """Offline conditioning: follow the best bridge values of each evidence item.

    The issued query repeats the bridge ``bridge_weight`` times before the sub-query, so the value
    that the hop is about outweighs the words it shares with the first hop; the sub-query drops the
    name of the passage the bridge came from (:func:`without_subject`).
    """

    name = "offline-bridges"

    def __init__(
        self, corpus: CorpusView, *, per_evidence: int = 2, max_queries: int = 10, bridge_weight: int = 2
    ) -> None:
        self.corpus = corpus
        self.per_evidence = per_evidence
        self.max_queries = max_queries
        self.bridge_weight = bridge_weight

    def condition(
        self,
        question: str,
        sub_query: str,
        evidence: Sequence[Evidence],
        *,
        held_titles: Collection[str] = (),
        used: set[str] | None = None,
    ) -> list[Conditioned]:
        used = set() if used is None else used
        per_item: list[list[BridgeCandidate]] = []
        for item in evidence:
            found = extract_bridges(
                item.text,
                question=question,
                chunk_id=item.chunk_id,
                exclude=tuple(held_titles),
                limit=self.per_evidence * 2,
                known_titles=self.corpus.known_titles,
                own_title=item.title,
                type_nouns=True,
            )
            per_item.append([b for b in found if fold(b.value) not in used][: self.per_evidence])
        # Interleave so every item gets its best bridge before any item gets its second.
        out: list[Conditioned] = []
        for depth in range(self.per_evidence):
            for found in per_item:
                if depth < len(found) and len(out) < self.max_queries:
                    bridge = found[depth]
                    key = fold(bridge.value)
                    if key in used:
                        continue
                    used.add(key)
                    source = next((e.title for e in evidence if e.chunk_id == bridge.chunk_id), "")
                    rest = without_subject(sub_query, source, bridge.value)
                    query = f"{bridge.value} " * self.bridge_weight + rest
                    out.append(Conditioned(query=query, bridge=bridge.value, kind=bridge.kind, from_chunk=bridge.chunk_id))
        return out


class ChainReranker:
    """Offline reranking by the chains the evidence forms (see :mod:`hoprag.pipeline.chains`)."""

    name = "offline-chains"

    def __init__(self, corpus: CorpusView, *, parents: int = 5, per_branch: int = 2, limit: int = 10) -> None:
        self.corpus = corpus
        self.parents = parents
        self.per_branch = per_branch
        self.limit = limit

    def rerank(self, question: str, evidence: Sequence[Evidence], steps: Sequence[HopStep] = ()) -> list[Evidence]:
        held = {e.chunk_id: e for e in evidence}
        if not held:
            return []
        # Parallel first-hop branches are scored on their own scale: each list over its best score.
        first_hop = [
            replace(h, score=h.score / (s.hits[0].score or 1.0))
            for s in steps
            if s.hop == 1 and s.hits
            for h in s.hits
            if h.chunk_id in held
        ]
        if not first_hop:  # no step structure (e.g. a foreign buffer): hop-1 evidence in given order
            first_hop = [e.hit for e in evidence if e.hop == 1] or [e.hit for e in evidence]
        best: dict[str, Hit] = {}
        for h in sorted(first_hop, key=lambda h: (h.rank, -h.score)):
            if h.chunk_id not in best or h.score > best[h.chunk_id].score:
                best[h.chunk_id] = h
        first_hop = sorted(best.values(), key=lambda h: (h.rank, -h.score))
        anchored = _anchored_reads(steps, held)
        branches = [
            Branch(parent=s.bridge["from_chunk"], hits=[h for h in s.hits if h.chunk_id in held], planned=_planned(s),
                   found=_planned(s) and s.bridge.get("kind") == "found" and s.step_id in anchored)
            for s in steps
            if s.bridge.get("from_chunk")
        ] + graph_branches(steps, held)
        folded_question = " ".join(fold(question).split())

        names_title: dict[str, bool] = {}  # asked for every pair a chunk is in

        def named(chunk_id: str) -> bool:
            found = names_title.get(chunk_id)
            if found is None:
                found = names_title[chunk_id] = _names_title(folded_question, held[chunk_id].title)
            return found

        order = order_by_chains(
            set(self.corpus.analyze(question)),
            first_hop,
            branches,
            self.corpus.term_weights,
            parents=self.parents,
            per_branch=self.per_branch,
            limit=self.limit,
            named=named,
            linked=title_linker(held, named),
        )
        for item in evidence:  # held but not placed: last, in the order found
            if item.chunk_id not in order and len(order) < self.limit:
                order.append(item.chunk_id)
        return [
            replace(held[c], hit=replace(held[c].hit, rank=position, retriever=f"chains:{held[c].hit.retriever}"))
            for position, c in enumerate(order, start=1)
        ]


def _anchored_reads(steps: Sequence[HopStep], held: Mapping[str, Evidence]) -> set[str]:
    """The found-value steps whose value was read in a passage about the lookup's anchor: one the
    plan's first lookup found, or one that names the value the step before it followed ("Visa
    requirements for Canadian citizens", found for "the country where Johann Strauss II was a
    citizen", names no Strauss: a value read there leads nowhere the plan meant)."""
    values_of: dict[str, list[str]] = {}  # chunk id -> the values of the steps that found it ("" for a first lookup)
    for step in steps:
        for hit in step.hits:
            values_of.setdefault(hit.chunk_id, []).append(str(step.bridge.get("value", "")) if step.hop > 1 else "")
    out: set[str] = set()
    for step in steps:
        source = held.get(str(step.bridge.get("from_chunk", "")))
        if step.bridge.get("kind") != "found" or source is None:
            continue
        text = fold(f"{source.title} {source.text}")
        if any(not value or fold(value) in text for value in values_of.get(source.chunk_id, ())):
            out.add(step.step_id)
    return out


def _planned(step: HopStep) -> bool:
    """Whether the step answers a dependent lookup of the plan (its hits are the chain's next link)."""
    return "order" in step.bridge and bool(step.depends_on)


_NAME_PUNCTUATION = str.maketrans({c: " " for c in '?,"()[]\u201c\u201d'})


def _names_title(folded_question: str, title: str) -> bool:
    """Whether the question names this passage's title (a strong sign it is a chain's anchor);
    a possessive names it too ("Susanne Porsche's husband"), and titles keep their own ("Dead Man's")."""
    key = title_key(title)
    if len(key) < 3:
        return False
    # a title in quotes or brackets, or before a question mark, is named too ('appeared on "Lawless?"')
    padded = " " + " ".join(folded_question.strip("?!. ").translate(_NAME_PUNCTUATION).split()) + " "
    needle = " " + " ".join(key.translate(_NAME_PUNCTUATION).split()) + " "
    return needle in padded or needle in padded.replace("'s ", " ").replace("\u2019s ", " ")


class CoverageJudge:
    """Offline sufficiency: the best two ranked items hold ``threshold`` of the question's term weight."""

    name = "offline-coverage"

    def __init__(self, corpus: CorpusView, threshold: float = 0.6) -> None:
        self.corpus = corpus
        self.threshold = threshold

    def sufficient(self, question: str, evidence: Sequence[Evidence]) -> bool:
        if self.threshold >= 1.0 or not evidence:
            return False
        best = [e.chunk_id for e in evidence[:2]]
        return question_coverage(set(self.corpus.analyze(question)), best, self.corpus.term_weights) >= self.threshold


class ExtractiveSynthesizer:
    """Offline synthesis: an extractive answer whose claims cite the sentences they came from."""

    name = "offline-extractive"

    def answer(self, question: str, evidence: Sequence[Evidence], *,
               on_token: Callable[[str], None] | None = None) -> Answer:
        """The extractive answer; ``on_token`` gets its text word by word once it is chosen."""
        answer = extract_answer(question, evidence)
        if on_token is not None:
            for piece in split_text(answer.text):
                on_token(piece)
        return answer
