"""Engines for the service: one per (engine, mode, k, clearance, model), shared by the requests.

A request's answer reports to that request's listener: the engine is handed it with the question
(``answer(question, on_event=..., tokens=True)``, :mod:`hoprag.pipeline.events`), so concurrent
requests share one engine, its corpus statistics, cache and thread pool, and a request costs what an
``answer`` call costs. The service always asks for the answer's tokens, so an answer read as JSON
and one read as a stream are written the same way. Retrieval runs at the caller's clearance inside
the retriever, before top-k; the engine answers from a view of the corpus that holds only what the
caller may see.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from collections.abc import Collection
from typing import Any

from hoprag.security.acl import Clearance, ClearancePolicy, visible_corpus
from hoprag.index.contract import Index, IndexStats
from hoprag.pipeline.engine import MultiHopConfig
from hoprag.pipeline.events import OnEvent
from hoprag.pipeline.spec import EngineSpec
from hoprag.records import Hit, Trace

__all__ = ["EnginePool"]

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

    def __init__(self, index: Index, policy: ClearancePolicy, *, spec: EngineSpec | None = None,
                 stream_timeout: float = 30.0) -> None:
        """``spec`` is the engine requests are answered with; a request chooses the engine, mode, k
        and whether the models answer (without them every role is offline)."""
        self.index = index
        self.policy = policy
        self.stream_timeout = stream_timeout
        self.spec = _service_spec(spec or EngineSpec(), stream_timeout)
        synth = self.spec.synth_model()
        #: the model the answer streams from (None: offline)
        self.llm = None if synth in ("", "offline") else synth
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
        key = (engine, mode, k, self.policy.parse(clearance), use_llm and self.spec.uses_models() and engine != "single")
        with self._lock:
            found = self._prototypes.get(key)
        if found is not None:
            return found
        from hoprag.pipeline.factory import make_engine

        view = self.view(clearance)
        spec = self.spec.replace(engine=engine, mode=mode, k=k,
                                 # the multi-hop knobs are the multi-hop engine's: a request for single drops them
                                 **({"multihop": MultiHopConfig()} if engine == "single" else {}))
        if not key[-1]:
            spec = spec.replace(llm="offline", planner_llm=None, synth_llm=None, judge_llm=None, rerank="offline")
        # the engine filters too, and records the clearance in its config hash
        built = make_engine(spec, view, clearance=view.clearance)
        if hasattr(built, "hides_documents"):  # the view is pre-filtered: tell the engine what it hides
            built.hides_documents = view.hides_chunks
        with self._lock:
            return self._prototypes.setdefault(key, built)

    def answer(self, question: str, *, trace_id: str, run_id: str, clearance: str, on_event: OnEvent | None = None,
               engine: str = "multihop", mode: str = "bm25", k: int | None = None, use_llm: bool = True) -> Trace:
        """Answer at ``clearance``; ``on_event`` hears the engine's events, the answer's tokens included."""
        built = self.prototype(engine, mode, k, clearance, use_llm)
        return built.answer(question, case_id=trace_id, run_id=run_id, on_event=on_event, tokens=True)


#: a model call's timeout in the service when the spec does not set one (it runs inside a request)
SERVICE_TIMEOUT = 20.0


def _service_spec(spec: EngineSpec, stream_timeout: float) -> EngineSpec:
    """``spec`` with the model settings of a long-lived service: each question's model calls fit in
    the request time, and an open circuit lets a probe call through after a while, so a model server
    that comes back is used again."""
    settings = spec.llm_settings
    timeout = settings.timeout if "timeout" in settings.model_fields_set else SERVICE_TIMEOUT
    return spec.replace(llm_settings=settings.model_copy(
        update={"timeout": timeout, "budget": max(1.0, min(timeout, stream_timeout)), "breaker_reset": 30.0}))
