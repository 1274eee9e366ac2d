"""The state of one question in the multi-hop engine: held evidence, steps, issued queries, budgets,
and the hop-by-hop retrieval that fills them (see :mod:`hoprag.pipeline.multihop` for the loop)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from hoprag.errors import ConfigError
from hoprag.pipeline.buffer import EvidenceBuffer
from hoprag.pipeline.chains import question_coverage
from hoprag.pipeline.compositional import lead_with_found
from hoprag.pipeline.engine import StepClock, clearance_filters, evidence_from_hit
from hoprag.pipeline.events import Emitter, HitsFound, HopStarted, JudgeDecided, JudgeStarted
from hoprag.pipeline.graph_hop import GraphProposal, held_weights
from hoprag.pipeline.plan import Plan, SubQuery
from hoprag.pipeline.roles import Conditioned
from hoprag.pipeline.text import fold
from hoprag.pipeline.title_links import link_titles
from hoprag.records import Evidence, Hit, HopStep, Usage

__all__ = ["HopEngine", "QuestionRun"]


class HopEngine(Protocol):
    """What a question's run reads of its engine (:class:`hoprag.pipeline.multihop.MultiHopEngine`):
    its roles, caches, corpus views and settings."""

    config: Any
    retriever: Any
    bridge_retriever: Any
    cache: Any
    map: Any
    chunks: Any
    documents: Any
    corpus: Any
    clearance: Any
    bridges: Any
    expander: Any
    judge: Any
    reranker: Any
    graph_hop: Any
    graph_proposals: Any


class QuestionRun:
    """The state of one question: held evidence, steps, issued queries, budgets."""

    def __init__(self, engine: HopEngine, question: str, clock: StepClock, emit: Emitter | None = None) -> None:
        self.engine = engine
        #: reports the question's progress to its listener (:mod:`hoprag.pipeline.events`)
        self.emit = emit or Emitter()
        self.cfg = engine.config
        self.question = question
        self.clock = clock
        self.steps: list[HopStep] = []
        self.held = EvidenceBuffer(self.cfg.near_duplicate)
        self.issued: set[str] = {fold(question)}
        self.used_bridges: set[str] = set()
        self.frontier: list[Evidence] = []
        self.hop = 0
        self.last_ms = 0.0
        #: per hop: when it began and what its retrieval, graph walk and judge took (merged into Trace.timings
        #: as ``hop{N}.start_ms``, ``hop{N}.retrieval_ms``, ``hop{N}.graph_ms``, ``hop{N}.judge_ms``, ``hop{N}.end_ms``)
        self.hop_ms: dict[str, float] = {}
        self.usage_at_start = self._spent()
        self.failures_at_start = {id(r): len(getattr(r, "failures", ())) for r in self._roles()}

    # -- bookkeeping ----------------------------------------------------------------------------

    def _roles(self) -> list:
        e = self.engine
        return list({id(r): r for r in (e.planner, e.expander, e.judge, e.reranker, e.synthesizer)}.values())

    def warnings(self) -> tuple[str, ...]:
        """Model failures this question met; each fell back to the offline role."""
        out = []
        for role in self._roles():
            failures = getattr(role, "failures", ())
            for message in failures[self.failures_at_start.get(id(role), 0) :]:
                out.append(f"{role.name} fell back to offline: {message}")
        return tuple(out)

    def _spent(self) -> Usage:
        """What every model-backed role has spent so far (roles keep running totals)."""
        total = Usage()
        for role in self._roles():
            spent = getattr(role, "usage", None)
            if isinstance(spent, Usage):
                total = Usage(
                    prompt_tokens=total.prompt_tokens + spent.prompt_tokens,
                    completion_tokens=total.completion_tokens + spent.completion_tokens,
                    cost=total.cost + spent.cost,
                )
        return total

    def usage(self) -> Usage:
        """What this question spent."""
        now, start = self._spent(), self.usage_at_start
        return Usage(
            prompt_tokens=now.prompt_tokens - start.prompt_tokens,
            completion_tokens=now.completion_tokens - start.completion_tokens,
            cost=round(now.cost - start.cost, 10),
        )

    def budget_stop(self) -> str:
        if self.cfg.time_budget_ms and self.clock.elapsed_ms() > self.cfg.time_budget_ms:
            return "time_budget"
        if self.cfg.token_budget and self.usage().tokens > self.cfg.token_budget:
            return "token_budget"
        return ""

    def begin_hop(self, since: float | None = None) -> float:
        """Count the next hop; it began at ``since`` (its conditioning may come first) or now. Returns now."""
        self.hop += 1
        now = self.clock.elapsed_ms()
        self.hop_ms[f"hop{self.hop}.start_ms"] = now if since is None else since
        return now

    def add_time(self, phase: str, ms: float) -> None:
        """Add ``ms`` to the current hop's ``phase`` (retrieval, graph or judge)."""
        key = f"hop{self.hop}.{phase}_ms"
        self.hop_ms[key] = self.hop_ms.get(key, 0.0) + ms
        self.hop_ms[f"hop{self.hop}.end_ms"] = self.clock.elapsed_ms()

    def spend(self, phase: str, since: float) -> float:
        """Add the time since ``since`` to the current hop's ``phase``; returns now."""
        now = self.clock.elapsed_ms()
        self.add_time(phase, now - since)
        return now

    def hop_timings(self) -> dict[str, float]:
        """The per-hop timings (wall time: they never change an answer)."""
        return {key: round(ms, 3) for key, ms in self.hop_ms.items()}

    def step(self, *, sub_query: str, issued: str, hits: list[Hit], keep: int, depends_on: tuple[str, ...], bridge: dict, error: str | None = None) -> HopStep:
        now = self.clock.elapsed_ms()
        step = HopStep(
            step_id=f"s{len(self.steps) + 1}",
            hop=self.hop,
            sub_query=sub_query,
            issued_query=issued,
            hits=tuple(hits),
            selected=tuple(h.chunk_id for h in hits[:keep]),
            depends_on=depends_on,
            filters=clearance_filters(self.engine.clearance),
            bridge=bridge,
            error=error,
            latency_ms=round(now - self.last_ms, 3),
            cumulative_ms=round(now, 3),
        )
        self.last_ms = now
        self.steps.append(step)
        return step

    def hold(self, step: HopStep) -> list[Evidence]:
        by_id = {h.chunk_id: h for h in step.hits}
        candidates = [
            evidence_from_hit(by_id[c], self.engine.chunks, self.engine.documents, step) for c in step.selected if c not in self.held
        ]
        kept, dropped = self.held.add(candidates)
        if dropped:  # say in the trace what the buffer refused
            position = next(i for i, s in enumerate(self.steps) if s.step_id == step.step_id)
            self.steps[position] = replace(step, duplicates=tuple(dropped))
        return kept

    def retrieve(self, query: str, exclude: tuple[str, ...], *, dependent: bool = False) -> list[Hit]:
        """``dependent``: a lookup conditioned on held evidence (the engine's bridge retriever serves it, if set)."""
        retriever = (self.engine.bridge_retriever if dependent else None) or self.engine.retriever
        hits = self.engine.cache.get_or_retrieve(
            retriever, query, self.cfg.k, exclude, clearance=self.engine.clearance
        )
        if self.emit.listening:
            self.emit(HitsFound(self.hop, query, tuple(hits)))
        return hits

    def sufficient(self) -> bool:
        """The judge decides, once at least ``min_evidence`` passages are held."""
        if len(self.held) < self.cfg.min_evidence:
            return False
        began = self.clock.elapsed_ms()
        self.emit(JudgeStarted(self.hop, len(self.held)))
        ranked = self.ranked()
        verdict = self.engine.judge.sufficient(self.question, ranked)
        self.spend("judge", began)
        self.emit(JudgeDecided(self.hop, len(ranked), bool(verdict)))
        return verdict

    def ranked(self) -> list[Evidence]:
        return self.engine.reranker.rerank(self.question, list(self.held.values()), self.steps)

    # -- the plan ---------------------------------------------------------------------------------

    def execute_plan(self, plan: Plan, seed_chunks: Sequence[str]) -> str:
        steps_of: dict[int, list[HopStep]] = {}
        layers = plan.layers()
        for layer in layers:
            if self.hop >= self.cfg.max_hops:
                return "max_hops"
            began = self.begin_hop()
            if self.hop == 1 and seed_chunks:
                step = self.step(sub_query=self.question, issued="", hits=self._seed_hits(seed_chunks), keep=len(seed_chunks), depends_on=(), bridge={"oracle": True})
                steps_of[1] = [step]
                self.frontier = self.hold(step)
                self.spend("retrieval", began)
                continue
            self.emit(HopStarted(self.hop, "; ".join(s.query for s in layer)))
            # the plan's last dependent lookup is a bridge hop too: the graph hop proposes beside it,
            # from what is held before the layer's retrievals (earlier layers only follow the plan, since
            # proposals there pair with first-hop passages and crowd out the chain's own links)
            last_lookup = layer is layers[-1] and any(sub.depends_on for sub in layer)
            proposal = self._graph_proposal() if last_lookup else None
            if last_lookup and self.engine.graph_hop is not None:
                began = self.spend("graph", began)
            # Conditioning may call a model: the sub-queries of one layer are conditioned concurrently.
            jobs = self.engine.map(lambda sub: (sub, self._queries_for(sub, steps_of)), layer)
            flat = [(sub, conditioned) for sub, queries in jobs for conditioned in queries]
            exclude = tuple(self.held)
            results = self.engine.map(lambda job: self.retrieve(job[1].query, exclude if job[0].depends_on else (),
                                                                   dependent=bool(job[0].depends_on)), flat)
            new: list[Evidence] = []
            for (sub, conditioned), hits in zip(flat, results):
                if not hits and not sub.depends_on:
                    hits, conditioned = self._reformulate(conditioned)
                if sub.depends_on and conditioned.bridge:
                    hits = link_titles(hits, conditioned.bridge)
                depends = tuple(s.step_id for d in sub.depends_on for s in steps_of.get(d, ()))
                keep = self.cfg.keep_first_hop if not sub.depends_on else self.cfg.keep_per_branch
                bridge = {"order": sub.order}
                if conditioned.bridge:
                    bridge.update(value=conditioned.bridge, kind=conditioned.kind, from_chunk=conditioned.from_chunk)
                if conditioned.candidates:
                    bridge["candidates"] = [list(c) for c in conditioned.candidates]
                step = self.step(sub_query=sub.query, issued=conditioned.query, hits=hits, keep=keep, depends_on=depends, bridge=bridge)
                steps_of.setdefault(sub.order, []).append(step)
                new.extend(self.hold(step))
            began = self.spend("retrieval", began)
            if proposal is not None:
                graph_step = self._graph_step(proposal)
                if graph_step.selected:
                    new.extend(self.hold(graph_step))
                self.spend("graph", began)
            self.frontier = new
            if not self.held:
                return "no_evidence"
            stop = self.budget_stop()
            if stop:
                return stop
            # the judge speaks once the plan's lookups are done: a chain's first two passages can hold
            # most of the question's words while its last lookup is still to be made
            if self.hop >= 2 and layer is layers[-1] and self.sufficient():
                return "sufficient"
        return ""

    def _queries_for(self, sub: SubQuery, steps_of: dict[int, list[HopStep]]) -> list[Conditioned]:
        if not sub.depends_on:
            return [Conditioned(query=sub.query)]
        dep_ids = {s.step_id for d in sub.depends_on for s in steps_of.get(d, ())}
        evidence = [e for e in self.held.values() if e.step_id in dep_ids]
        queries = self.engine.expander.condition(self.question, sub.query, evidence)
        if self.engine.expander is self.engine.bridges:  # offline: what the lookup found leads its bridges
            asked = next((s.sub_query for d in sub.depends_on for s in steps_of.get(d, ())), "")
            corpus = self.engine.corpus
            terms = set(corpus.analyze(asked))
            anchors = {s.step_id: s.bridge["value"] for d in sub.depends_on for s in steps_of.get(d, ()) if s.bridge.get("value")}
            queries = lead_with_found(
                asked, sub.query, evidence, queries, limit=self.cfg.max_branches, weight=self.cfg.bridge_weight,
                relevance=lambda e: question_coverage(terms, [e.chunk_id], corpus.term_weights), question=self.question,
                anchors=anchors, titles=corpus.known_titles,
            )
        return queries or [Conditioned(query=sub.query)]

    def _reformulate(self, conditioned: Conditioned) -> tuple[list[Hit], Conditioned]:
        """An empty hop retries once with the query's content words only (quotes, punctuation gone)."""
        words = [w for w in fold(conditioned.query).replace('"', " ").split() if len(w) > 2]
        retry = " ".join(words)
        if not retry or retry == fold(conditioned.query):
            return [], conditioned
        hits = self.retrieve(retry, ())
        return hits, replace(conditioned, query=retry)

    def _seed_hits(self, chunk_ids: Sequence[str]) -> list[Hit]:
        hits = []
        for rank, chunk_id in enumerate(chunk_ids, start=1):
            chunk = self.engine.chunks.get(chunk_id)
            if chunk is None:
                above = f" or is above the clearance '{self.engine.clearance.level}'" if self.engine.clearance else ""
                raise ConfigError(
                    f"oracle seed chunk {chunk_id!r} is not in the index{above}; seed with ids from chunks.jsonl"
                    + (" that the clearance allows" if above else "")
                )
            document = self.engine.documents.get(chunk.doc_id)
            hits.append(
                Hit(chunk_id=chunk_id, doc_id=chunk.doc_id, score=1.0, rank=rank, retriever="oracle", start=chunk.start, end=chunk.end, title=document.title if document else "")
            )
        return hits

    # -- open-ended bridge hops -------------------------------------------------------------------

    def follow_bridges(self) -> str:
        while True:
            if self.hop >= min(self.cfg.max_hops, self.cfg.bridge_hops):
                return "max_hops"
            began = self.clock.elapsed_ms()
            titles = tuple(e.title for e in self.held.values())
            branches = self.engine.bridges.condition(
                self.question, self.question, self.frontier, held_titles=titles, used=self.used_bridges
            )
            conditioned = self.clock.elapsed_ms()
            # the graph hop proposes from what is held before this hop's retrievals add to it
            proposal = self._graph_proposal()
            proposed = self.clock.elapsed_ms()
            if not branches and proposal is None:
                return "no_bridge"
            self.begin_hop(since=began)
            self.add_time("retrieval", conditioned - began)
            if self.engine.graph_hop is not None:
                self.add_time("graph", proposed - conditioned)
            began = self.clock.elapsed_ms()
            self.emit(HopStarted(self.hop, "conditioned on " + ", ".join(b.bridge for b in branches[:3])))
            fresh = [b for b in branches if fold(b.query) not in self.issued]
            if not fresh and proposal is None:
                return "loop_detected"
            exclude = tuple(self.held)
            results = self.engine.map(lambda b: self.retrieve(b.query, exclude, dependent=True), fresh)
            hop_steps: list[HopStep] = []
            looping = 0
            parents = {e.chunk_id: e.step_id for e in self.held.values()}
            for branch, hits in zip(fresh, results):
                self.issued.add(fold(branch.query))
                hits = link_titles(hits, branch.bridge)
                bridge = {"value": branch.bridge, "kind": branch.kind, "from_chunk": branch.from_chunk}
                depends = (parents[branch.from_chunk],) if branch.from_chunk in parents else ()
                step = self.step(sub_query=branch.bridge, issued=branch.query, hits=hits, keep=self.cfg.keep_per_branch, depends_on=depends, bridge=bridge)
                hop_steps.append(step)
                if self._loops(hits):
                    looping += 1
            began = self.spend("retrieval", began)
            if proposal is not None:
                graph_step = self._graph_step(proposal)
                if graph_step.selected:
                    hop_steps.append(graph_step)
                began = self.spend("graph", began)
            elif looping == len(hop_steps):
                return "loop_detected"
            self.frontier = [e for step in hop_steps for e in self.hold(step)]
            self.spend("retrieval", began)
            if not self.frontier:
                return "no_new_evidence"
            stop = self.budget_stop()
            if stop:
                return stop
            if self.sufficient():
                return "sufficient"

    def _graph_proposal(self) -> GraphProposal | None:
        """The graph hop's proposal from the question and the held chunks (``None``: no graph, or
        nothing new to propose)."""
        graph = self.engine.graph_hop
        if graph is None:
            return None
        first = [(e.chunk_id, e.hit.score) for e in self.held.values() if e.hop == 1]
        later = [e.chunk_id for e in self.held.values() if e.hop != 1]
        proposal = graph.propose(self.question, held_weights(first, later), limit=self.engine.graph_proposals, top=self.cfg.k)
        return proposal if proposal is not None and proposal.proposed else None

    def _graph_step(self, proposal: GraphProposal) -> HopStep:
        """The graph hop as a retrieval call in the trace: its hits are the proposed chunks, best first,
        and ``bridge`` records the seeds, the top entities and chunks with their scores."""
        hits = []
        for rank, (chunk_id, score) in enumerate(proposal.proposed, start=1):
            chunk = self.engine.chunks[chunk_id]
            document = self.engine.documents.get(chunk.doc_id)
            hits.append(Hit(chunk_id=chunk_id, doc_id=chunk.doc_id, score=score, rank=rank, retriever="graph",
                            start=chunk.start, end=chunk.end, title=document.title if document else ""))
        parents = {e.chunk_id: e.step_id for e in self.held.values()}
        depends = tuple(dict.fromkeys(parents[p] for p in proposal.parents.values() if p in parents))
        bridge = proposal.summary() | {"top_chunks": [[c, round(v, 6)] for c, v in proposal.ranked]}
        seeds = ", ".join(key for key, _ in proposal.seed_entities)
        return self.step(sub_query=self.question, issued=f"ppr: {seeds}" if seeds else "ppr", hits=hits,
                         keep=len(hits), depends_on=depends, bridge=bridge)

    def _loops(self, hits: list[Hit]) -> bool:
        """A hop loops when most of what it finds belongs to documents already held."""
        top = hits[: max(self.cfg.keep_per_branch, 3)]
        if not top:
            return False
        held_docs = {e.doc_id for e in self.held.values()}
        return sum(1 for h in top if h.doc_id in held_docs) / len(top) >= self.cfg.loop_overlap
