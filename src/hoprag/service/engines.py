"""Engines for the service: one prototype per (engine, mode, k, clearance, model), copied per request.

A request gets a shallow copy of its prototype whose planner, judge, retrieval cache and synthesiser
report to that request's :class:`HopEvents` (plan, hop start, hop hits, judge verdict, answer
tokens). The copies share the prototype's corpus statistics, cache and thread pool, so a request
costs what an ``answer`` call costs. Retrieval runs at the caller's clearance inside the retriever,
before top-k; the engine answers from a view of the corpus that holds only what the caller may see.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any

from hoprag.acl import Clearance, ClearancePolicy, visible_corpus
from hoprag.index.contract import Index, IndexStats
from hoprag.records import Hit, Trace
from hoprag.service.streaming import OpenAIStream, StreamingSynthesizer, split_tokens

__all__ = ["EnginePool", "HopEvents"]

Emit = Callable[[str, dict[str, Any]], None]


def hit_view(hit: Hit) -> dict[str, Any]:
    return {"chunk_id": hit.chunk_id, "doc_id": hit.doc_id, "title": hit.title, "rank": hit.rank,
            "score": round(float(hit.score), 4), "start": hit.start, "end": hit.end}


class HopEvents:
    """Turns engine callbacks into named events for one request; ``emit(name, data)`` receives them."""

    def __init__(self, emit: Emit | None = None) -> None:
        self._emit = emit
        self.hop = 0
        self.lock = threading.Lock()
        self.first_token = True

    def emit(self, name: str, data: dict[str, Any]) -> None:
        if self._emit is not None:
            with self.lock:
                self._emit(name, data)

    def stage(self, stage: str, hop: int, detail: str) -> None:
        self.hop = hop
        if stage == "searching":
            self.emit("hop", {"hop": hop, "queries": detail})
        elif stage == "planning":
            self.emit("planning", {"detail": "planning the hops"})
        elif stage == "synthesising":
            self.emit("synthesising", {"detail": "synthesising the answer"})

    def plan(self, plan: Any) -> None:
        subs = [{"order": s.order, "query": s.query, "depends_on": list(s.depends_on)}
                for s in getattr(plan, "sub_queries", ())]
        self.emit("plan", {"planner": getattr(plan, "planner", ""), "sub_queries": subs})

    def hits(self, query: str, hits: Sequence[Hit]) -> None:
        self.emit("hits", {"hop": self.hop, "query": query, "hits": [hit_view(h) for h in hits[:5]],
                           "total": len(hits)})

    def verdict(self, held: int, sufficient: bool) -> None:
        self.emit("judge", {"hop": self.hop, "held": held, "sufficient": bool(sufficient)})

    def token(self, text: str) -> None:
        self.emit("token", {"text": text})


class _Reporting:
    """A role wrapper that reports; everything else (name, usage, failures) is the wrapped role's."""

    def __init__(self, inner: Any, events: HopEvents) -> None:
        self.inner = inner
        self.events = events

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)


class _ReportingPlanner(_Reporting):
    def plan(self, question: str) -> Any:
        plan = self.inner.plan(question)
        self.events.plan(plan)
        return plan


class _ReportingJudge(_Reporting):
    def sufficient(self, question: str, evidence: Sequence[Any]) -> bool:
        verdict = self.inner.sufficient(question, evidence)
        self.events.verdict(len(evidence), verdict)
        return verdict


class _ReportingCache(_Reporting):
    def get_or_retrieve(self, retriever: Any, query: str, k: int, exclude: Sequence[str], **options: Any) -> list[Hit]:
        hits = self.inner.get_or_retrieve(retriever, query, k, exclude, **options)
        self.events.hits(query, hits)
        return hits


class _ClearedRetriever:
    """Retrieval at one clearance: hidden chunks are excluded inside the retriever, before top-k."""

    def __init__(self, inner: Any, clearance: Clearance, hidden: frozenset[str]) -> None:
        self.inner = inner
        self.clearance = clearance
        self.hidden = hidden
        self.name = getattr(inner, "name", type(inner).__name__)
        self._native = "clearance" in inspect.signature(inner.retrieve).parameters

    def retrieve(self, query: str, k: int = 10, *, filters: Any = None, exclude: Collection[str] = (),
                 **options: Any) -> list[Hit]:
        if self._native:
            return self.inner.retrieve(query, k, filters=filters, exclude=exclude, clearance=self.clearance)
        return self.inner.retrieve(query, k, filters=filters, exclude=self.hidden.union(exclude))


class _ClearedIndex(Index):
    """An index seen at one clearance: its chunks, documents and retrievers hold nothing above it."""

    def __init__(self, index: Index, clearance: Clearance) -> None:
        self.index = index
        self.chunks, self.documents = visible_corpus(index.chunks, index.documents, clearance)
        self.hides_chunks = len(self.chunks) < len(index.chunks)
        self.clearance = clearance
        self.manifest = index.manifest

    @property
    def location(self) -> str:
        return self.index.location

    @property
    def has_dense(self) -> bool:
        return self.index.has_dense

    def entity_graph(self) -> None:
        """``None``: the service's engines answer without the graph hop (their config hashes and
        answers are those of the graph-less engine)."""
        return None

    def stats(self) -> IndexStats:
        """The index's, counting only what this clearance sees."""
        return dataclasses.replace(self.index.stats(), documents=len(self.documents), chunks=len(self.chunks))

    def close(self) -> None:
        """Nothing of its own to release: the index it views is closed by its owner."""

    @functools.cached_property
    def hidden(self) -> frozenset[str]:
        """Ids of the chunks above the clearance: built on first need only (a walk over every chunk;
        retrievers that take the clearance themselves never need it)."""
        return frozenset(c for c in self.index.chunks if c not in self.chunks) if self.hides_chunks else frozenset()

    def retriever(self, mode: str = "bm25", **options: Any) -> _ClearedRetriever:
        inner = self.index.retriever(mode, **options)
        native = "clearance" in inspect.signature(inner.retrieve).parameters
        return _ClearedRetriever(inner, self.clearance, frozenset() if native else self.hidden)


class EnginePool:
    """Engines over one index for every clearance and option a request may ask for."""

    def __init__(self, index: Index, policy: ClearancePolicy, *, llm: str | None = None,
                 llm_options: dict[str, Any] | None = None, stream_timeout: float = 30.0,
                 synth_only: bool = False) -> None:
        self.index = index
        self.policy = policy
        self.llm = None if llm in (None, "", "offline") else llm
        self.synth_only = synth_only
        self.llm_options = dict(llm_options or {})
        self.stream_timeout = stream_timeout
        self._prototypes: dict[tuple, Any] = {}
        self._views: dict[str, _ClearedIndex] = {}
        self._lock = threading.Lock()

    def view(self, clearance: str) -> _ClearedIndex:
        """The index as a caller at ``clearance`` sees it (documents, chunks, retrievers)."""
        level = self.policy.parse(clearance)
        with self._lock:
            if level not in self._views:
                self._views[level] = _ClearedIndex(self.index, self.policy.clearance(level))
            return self._views[level]

    def prototype(self, engine: str, mode: str, k: int | None, clearance: str, use_llm: bool) -> Any:
        # the single-shot engine has no role a model could play: it is never handed one
        key = (engine, mode, k, self.policy.parse(clearance), use_llm and self.llm is not None and engine != "single")
        with self._lock:
            found = self._prototypes.get(key)
        if found is not None:
            return found
        from hoprag.pipeline.factory import make_engine

        view = self.view(clearance)
        options: dict[str, Any] = {}
        if "clearance" in inspect.signature(make_engine).parameters:
            options["clearance"] = view.clearance  # the engine filters too, and records it in its config hash
        if key[-1]:
            options["llm_settings"] = self._llm_settings()
        if key[-1] and self.synth_only:
            built = make_engine(engine, view, k=k, mode=mode, synth_llm=self.llm, **options)
        else:
            built = make_engine(engine, view, k=k, mode=mode, llm=self.llm if key[-1] else None, **options)
        if hasattr(built, "hides_documents"):  # the view is pre-filtered: tell the engine what it hides
            built.hides_documents = view.hides_chunks
        if getattr(built, "name", "") == "multihop" and getattr(built, "_pool", "absent") is None:
            built.map(lambda item: item, [0, 1])  # start the thread pool once: request copies share it
        with self._lock:
            return self._prototypes.setdefault(key, built)

    def _llm_settings(self) -> Any:
        """A long-lived service: each question's model calls fit in the request time, and an open
        circuit lets a probe call through after a while, so a model server that comes back is used again."""
        from hoprag.llm.settings import LLMSettings

        opts = self.llm_options
        timeout = float(opts.get("timeout", 20.0))
        return LLMSettings(base_url=opts.get("base_url"), api_key=opts.get("api_key"), timeout=timeout,
                           budget=max(1.0, min(timeout, self.stream_timeout)), breaker_reset=30.0)

    def answer(self, question: str, *, trace_id: str, run_id: str, clearance: str, events: HopEvents,
               engine: str = "multihop", mode: str = "bm25", k: int | None = None, use_llm: bool = True) -> Trace:
        """Answer at ``clearance``, reporting to ``events`` as the engine goes."""
        proto = self.prototype(engine, mode, k, clearance, use_llm)
        stream = None
        if use_llm and self.llm is not None and self.llm.startswith("openai:"):
            stream = OpenAIStream(self.llm.partition(":")[2], base_url=self.llm_options.get("base_url"),
                                  api_key=self.llm_options.get("api_key"), timeout=self.stream_timeout)
        if getattr(proto, "name", "") != "multihop":
            return self._single(proto, question, trace_id, run_id, events)
        request = copy.copy(proto)
        request.on_event = events.stage
        request.planner = _ReportingPlanner(proto.planner, events)
        request.judge = _ReportingJudge(proto.judge, events)
        request.cache = _ReportingCache(proto.cache, events)
        inner_synth = getattr(proto.synthesizer, "fallback", proto.synthesizer) if stream else proto.synthesizer
        request.synthesizer = StreamingSynthesizer(inner_synth if stream else proto.synthesizer, events.token, stream)
        return request.answer(question, case_id=trace_id, run_id=run_id)

    @staticmethod
    def _single(proto: Any, question: str, trace_id: str, run_id: str, events: HopEvents) -> Trace:
        """The single-shot engine has no callbacks: its one step is reported once it is done."""
        trace = proto.answer(question, case_id=trace_id, run_id=run_id)
        for step in trace.steps:
            events.stage("searching", step.hop, step.issued_query)
            events.hits(step.issued_query, step.hits)
        events.stage("synthesising", 1, "")
        for piece in split_tokens(trace.answer.text):
            events.token(piece)
        return trace
