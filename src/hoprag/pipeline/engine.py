"""Question-answering engines: a single-shot baseline and the offline multi-hop engine.

Both see only the question text and the index; gold labels never reach them. Each call returns a
:class:`~hoprag.records.Trace` with every retrieval step, the ranked evidence handed to the
answerer, the answer with citations, and the reason the engine stopped.

An engine built with a ``clearance`` (:mod:`hoprag.security.acl`) answers for a caller at that level: every
retrieval call carries it, the engine reads only the chunks and documents the caller may see
(:func:`~hoprag.security.acl.visible_corpus`), each step records it in ``filters`` and the config hash
names it, so traces made at two clearances are two configurations.

``answer(question, on_event=listener)`` reports the question's progress to ``listener`` as typed
events (:mod:`hoprag.pipeline.events`); with ``tokens=True`` the answer's text comes as ``Token``
events too. A listener never changes the trace.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hoprag.security.acl import Clearance, visible_corpus
from hoprag.security.clearance import resolve_clearance
from hoprag.index.base import Retriever
from hoprag.llm.streaming import split_text
from hoprag.pipeline.events import AnswerReady, Emitter, HitsFound, HopStarted, OnEvent, SynthesisStarted, Token
from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.question_check import check_question
from hoprag.records import Chunk, Document, Evidence, Hit, HopStep, Trace

EngineName = Literal["single", "multihop"]


class Engine(Protocol):
    """Anything that answers a question and leaves a Trace."""

    name: str

    def answer(self, question: str, *, case_id: str = "", run_id: str = "", on_event: OnEvent | None = None,
               tokens: bool = False) -> Trace: ...


class SingleShotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(default=10, ge=1, description="hits retrieved and handed to the answerer")


class MultiHopConfig(BaseModel):
    """Knobs of the offline multi-hop engine. Defaults are generic, not fitted to one benchmark."""

    model_config = ConfigDict(extra="forbid")
    max_hops: int = Field(default=4, ge=1, description="hard cap on retrieval hops, a plan's own layers included")
    bridge_hops: int = Field(
        default=3, ge=1, description="open-ended bridge following stops after this hop (a plan's layers may run to max_hops)"
    )
    k: int = Field(default=10, ge=1, description="hits retrieved per call")
    keep_first_hop: int = Field(default=5, ge=1, description="hop-1 hits kept as evidence")
    bridges_per_evidence: int = Field(default=2, ge=1, description="bridge values followed per kept item")
    max_branches: int = Field(default=10, ge=1, description="conditioned queries issued per hop")
    keep_per_branch: int = Field(default=2, ge=1, description="new hits kept per conditioned query")
    context_k: int = Field(default=10, ge=1, description="evidence items handed to the answerer")
    loop_overlap: float = Field(
        default=0.8, ge=0.0, le=1.0, description="share of a hop's top hits already held that counts as a loop"
    )
    near_duplicate: float = Field(
        default=0.9, gt=0.0, le=1.0, description="word 3-gram Jaccard at which a passage counts as a near-duplicate of held evidence"
    )
    min_evidence: int = Field(default=2, ge=1, description="never judged sufficient with fewer held passages")
    parallelism: int = Field(default=4, ge=1, description="retrieval calls of one hop run on this many threads")
    cache_size: int = Field(default=4096, ge=0, description="retrieval results kept by (query, prior evidence); 0 = off")
    time_budget_ms: float | None = Field(default=None, gt=0, description="stop hopping after this wall time")
    token_budget: int | None = Field(default=None, gt=0, description="stop hopping after this many model tokens")
    fallback: Literal["partial", "abstain"] = Field(
        default="partial", description="when a budget runs out: answer from partial evidence (flagged) or abstain"
    )
    restricted_partial: Literal["abstain", "partial"] = Field(
        default="abstain",
        description="when the caller's clearance hides documents and the evidence was not judged sufficient: "
        "abstain (the missing link may be hidden) or answer flagged partial",
    )
    bridge_weight: int = Field(
        default=2, ge=1, le=5, description="times the bridge is repeated in a conditioned query (its term weight)"
    )
    sufficient_coverage: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="stop once the best two-passage chain holds this IDF-weighted share of the question's terms (1 = never)",
    )


def config_hash(config: BaseModel, engine: str, clearance: Clearance | None = None) -> str:
    """Names one configuration; a clearance is part of it (left out when unrestricted, so those hashes stay)."""
    body = {"engine": engine, "config": config.model_dump()}
    if clearance is not None:
        body["clearance"] = clearance.describe()
    payload = json.dumps(body, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def clearance_filters(clearance: Clearance | None) -> dict[str, str]:
    """What a step records of the clearance its retrieval ran at (nothing when unrestricted)."""
    return {} if clearance is None else {"clearance": clearance.describe()}


def clearance_kwargs(clearance: Clearance | None) -> dict[str, Clearance]:
    """``retrieve`` keyword for a clearance; empty when unrestricted, so any retriever plugs in."""
    return {} if clearance is None else {"clearance": clearance}


class StepClock:
    """Wall-clock bookkeeping for step latency and cumulative latency."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000.0


def evidence_from_hit(hit: Hit, chunks: Mapping[str, Chunk], documents: Mapping[str, Document], step: HopStep) -> Evidence:
    chunk = chunks[hit.chunk_id]
    document = documents.get(hit.doc_id)
    title = hit.title or (document.title if document else "")
    return Evidence(hit=hit, text=chunk.text, title=title, hop=step.hop, step_id=step.step_id, sub_query=step.sub_query)


class SingleShotEngine:
    """Baseline: one retrieval with the question, top-k as context, extractive answer."""

    name = "single"

    def __init__(
        self,
        retriever: Retriever,
        chunks: Mapping[str, Chunk],
        documents: Mapping[str, Document],
        config: SingleShotConfig | None = None,
        *,
        clearance: str | Clearance | None = None,
    ) -> None:
        """``clearance`` answers for a caller at that level (``None``: unrestricted)."""
        self.retriever = retriever
        self.clearance = resolve_clearance(clearance)
        self.chunks, self.documents = visible_corpus(chunks, documents, self.clearance)
        self.config = config or SingleShotConfig()
        self.config_hash = config_hash(
            self.config, f"{self.name}:{getattr(retriever, 'name', type(retriever).__name__)}", self.clearance
        )

    def answer(self, question: str, *, case_id: str = "", run_id: str = "", on_event: OnEvent | None = None,
               tokens: bool = False) -> Trace:
        """Answer ``question``; ``on_event`` hears the hop, its hits, the synthesis (and with ``tokens``
        the answer's text) and the finished trace (:mod:`hoprag.pipeline.events`)."""
        check_question(question)  # the one limit of every entry point (ask, run, the service)
        emit = Emitter(on_event, tokens=tokens)
        clock = StepClock()
        emit(HopStarted(1, question))
        hits = self.retriever.retrieve(question, self.config.k, **clearance_kwargs(self.clearance))
        latency = clock.elapsed_ms()
        if emit.listening:
            emit(HitsFound(1, question, tuple(hits)))
        step = HopStep(
            step_id="s1",
            hop=1,
            sub_query=question,
            issued_query=question,
            hits=tuple(hits),
            selected=tuple(h.chunk_id for h in hits),
            filters=clearance_filters(self.clearance),
            latency_ms=latency,
            cumulative_ms=latency,
        )
        evidence = tuple(evidence_from_hit(h, self.chunks, self.documents, step) for h in hits)
        emit(SynthesisStarted(1))
        answer = extract_answer(question, evidence, confidence=mechanical_confidence(evidence, hops_done=1, hops_wanted=1))
        if emit.tokens:
            for piece in split_text(answer.text):
                emit(Token(piece))
        stop = "single_shot" if hits else "no_evidence"
        trace = Trace(
            run_id=run_id,
            case_id=case_id,
            question=question,
            steps=(step,),
            evidence=evidence,
            answer=answer,
            stop_reason=stop,
            config_hash=self.config_hash,
            engine=self.name,
            latency_ms=clock.elapsed_ms(),
        )
        emit(AnswerReady(trace))
        return trace


def mechanical_confidence(evidence: tuple[Evidence, ...], *, hops_done: int, hops_wanted: int) -> float:
    """Mechanical composite: mean normalised retrieval rank of the context × hop completeness."""
    if not evidence:
        return 0.0
    rank_quality = sum(1.0 / e.hit.rank for e in evidence[:5] if e.hit.rank > 0) / min(len(evidence), 5)
    return round(min(1.0, rank_quality) * min(1.0, hops_done / max(hops_wanted, 1)), 4)
