"""The multi-hop engine: plan → retrieve layer by layer → follow bridges → rank → judge → synthesise.

Every role is swappable (:mod:`hoprag.pipeline.roles`); the defaults are offline and deterministic.

1. The planner turns the question into sub-queries with dependencies. Sub-queries of one graph layer
   run concurrently; a dependent one is conditioned by the expander on its dependencies' evidence.
2. Once the plan is done and the judge is not yet satisfied, the engine keeps hopping: the expander
   extracts bridges (entities, titles, identifiers, dates) from what the last hop found and issues
   one conditioned query per bridge, excluding what is already held.
3. The reranker orders the buffer by the chains it forms; the synthesiser answers from it.

Stop reasons, recorded in the trace: ``sufficient`` (the judge), ``max_hops``, ``no_new_evidence``,
``loop_detected`` (a hop found only parts of held documents, or repeated its queries), ``no_bridge``,
``no_evidence``, ``time_budget`` / ``token_budget`` (then the fallback policy decides: abstain, or
answer from partial evidence). Any answer given without the judge's ``sufficient`` is flagged
``partial``, with its confidence halved.

With a ``clearance``, every retrieval call (planned, conditioned, reformulated) carries it, and the
roles are built over the caller's view of the corpus: bridge titles, term weights, evidence text and
oracle seeds never come from a document above it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from hoprag.acl import Clearance, resolve_clearance, visible_corpus
from hoprag.errors import ConfigError
from hoprag.pipeline.buffer import EvidenceBuffer
from hoprag.index.base import Retriever
from hoprag.llm.guard import question_scope
from hoprag.pipeline.engine import (
    MultiHopConfig,
    StepClock,
    clearance_filters,
    config_hash,
    evidence_from_hit,
    mechanical_confidence,
)
from hoprag.pipeline.plan import OfflinePlanner, Plan, Planner, SubQuery
from hoprag.pipeline.retrieval_cache import RetrievalCache
from hoprag.pipeline.roles import (
    BridgeExpander,
    ChainReranker,
    Conditioned,
    CorpusView,
    CoverageJudge,
    Expander,
    ExtractiveSynthesizer,
    Judge,
    Reranker,
    Synthesizer,
)
from hoprag.pipeline.text import fold
from hoprag.records import Answer, Chunk, Document, Evidence, Hit, HopStep, Trace, Usage


class MultiHopEngine:
    """Iterative retrieval with planned and bridge-conditioned hops."""

    name = "multihop"

    def __init__(
        self,
        retriever: Retriever,
        chunks: Mapping[str, Chunk],
        documents: Mapping[str, Document],
        config: MultiHopConfig | None = None,
        *,
        planner: Planner | None = None,
        expander: Expander | None = None,
        judge: Judge | None = None,
        reranker: Reranker | None = None,
        synthesizer: Synthesizer | None = None,
        on_event=None,
        clearance: str | Clearance | None = None,
    ) -> None:
        """``clearance`` answers for a caller at that level (``None``: unrestricted)."""
        self.retriever = retriever
        self.clearance = resolve_clearance(clearance)
        self.chunks, self.documents = visible_corpus(chunks, documents, self.clearance)
        #: the clearance hides part of this corpus: an answer the judge did not find sufficient may be
        #: missing exactly the hidden evidence (the service sets this for its pre-filtered views)
        self.hides_documents = len(self.documents) < len(documents)
        self.config = cfg = config or MultiHopConfig()
        self.corpus = CorpusView(self.chunks, self.documents)
        self.planner = planner or OfflinePlanner()
        self.bridges = BridgeExpander(
            self.corpus, per_evidence=cfg.bridges_per_evidence, max_queries=cfg.max_branches, bridge_weight=cfg.bridge_weight
        )
        self.expander = expander or self.bridges
        self.judge = judge or CoverageJudge(self.corpus, cfg.sufficient_coverage)
        self.reranker = reranker or ChainReranker(
            self.corpus, parents=cfg.keep_first_hop, per_branch=cfg.keep_per_branch, limit=cfg.context_k
        )
        self.synthesizer = synthesizer or ExtractiveSynthesizer()
        self.cache = RetrievalCache(cfg.cache_size)
        self.on_event = on_event
        # make_engine sets it when roles use a model: their shared per-question budget and breakers
        self.llm_guard = None
        self._pool: ThreadPoolExecutor | None = None
        self.refresh_config_hash()

    def refresh_config_hash(self) -> None:
        """The config hash names the engine config and every role, so swapped roles change it."""
        roles = {r: getattr(self, r).name for r in ("planner", "expander", "judge", "reranker", "synthesizer")}
        roles["retriever"] = getattr(self.retriever, "name", type(self.retriever).__name__)
        self.config_hash = config_hash(self.config, f"{self.name}:{sorted(roles.items())}", self.clearance)

    # -- one question ---------------------------------------------------------------------------

    def answer(self, question: str, *, case_id: str = "", run_id: str = "", seed_chunks: Sequence[str] = ()) -> Trace:
        """Answer ``question``. ``seed_chunks`` replaces hop 1 with given chunks (the oracle-hop
        ablation: the correct prior evidence is supplied and every later hop runs unchanged).

        Every model call of the question draws on one scope (:mod:`hoprag.llm.guard`): one budget,
        and the fallbacks it met land in ``trace.warnings`` and ``trace.fallbacks`` (per role)."""
        guard = self.llm_guard
        with guard.question() if guard is not None else question_scope() as scope:
            trace = self._answer_question(question, case_id=case_id, run_id=run_id, seed_chunks=seed_chunks)
        if not scope.fallbacks and not scope.notes:
            return trace
        return replace(trace, warnings=(*trace.warnings, *scope.warnings()), fallbacks=scope.counts())

    def _answer_question(self, question: str, *, case_id: str, run_id: str, seed_chunks: Sequence[str]) -> Trace:
        run = _Run(self, question, StepClock())
        t0 = run.clock.elapsed_ms()
        plan = Plan(sub_queries=[SubQuery(order=1, query=question)], planner="oracle") if seed_chunks else self._plan(run)
        t1 = run.clock.elapsed_ms()
        run.last_ms = t1
        stop = run.execute_plan(plan, seed_chunks)
        if not stop:
            stop = run.follow_bridges()
        t2 = run.clock.elapsed_ms()
        evidence = tuple(self.reranker.rerank(question, list(run.held.values()), run.steps))
        t3 = run.clock.elapsed_ms()
        answer = self._answer(run, evidence, stop)
        t4 = run.clock.elapsed_ms()
        timings = {
            "planning_ms": round(t1 - t0, 3),
            "retrieval_ms": round(t2 - t1, 3),
            "ranking_ms": round(t3 - t2, 3),
            "synthesis_ms": round(t4 - t3, 3),
        }
        return Trace(
            run_id=run_id,
            case_id=case_id,
            question=question,
            steps=tuple(run.steps),
            evidence=evidence,
            answer=answer,
            stop_reason=stop,
            usage=run.usage(),
            config_hash=self.config_hash,
            engine=self.name,
            latency_ms=run.clock.elapsed_ms(),
            plan=plan.model_dump(),
            warnings=run.warnings(),
            timings=timings,
        )

    def map(self, fn, items: Sequence) -> list:
        """Run ``fn`` over ``items`` on the engine's thread pool (inline for one item or parallelism 1)."""
        if len(items) <= 1 or self.config.parallelism <= 1:
            return [fn(item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.config.parallelism, thread_name_prefix="hoprag-hop")
        # each task runs in a copy of the caller's context: the question's model budget goes along
        futures = [self._pool.submit(contextvars.copy_context().run, fn, item) for item in items]
        return [future.result() for future in futures]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def _plan(self, run: _Run) -> Plan:
        run.emit("planning", "")
        return self.planner.plan(run.question)

    def _answer(self, run: _Run, evidence: tuple[Evidence, ...], stop: str) -> Answer:
        if not evidence:
            return Answer(text="", abstained=True)
        hops_done = max(s.hop for s in run.steps)
        confidence = mechanical_confidence(evidence, hops_done=hops_done, hops_wanted=min(2, self.config.max_hops))
        budget_ran_out = stop in ("time_budget", "token_budget")
        if budget_ran_out and self.config.fallback == "abstain":
            return Answer(text="", abstained=True, confidence=0.0)
        run.emit("synthesising", "")
        answer = self.synthesizer.answer(run.question, evidence)
        answer = replace(answer, confidence=confidence if not answer.abstained else 0.0)
        # Without the judge's word that the evidence suffices (a budget ran out, or hopping stopped
        # for lack of bridges, new evidence or hops), the chain may be incomplete: say so, never
        # give a complete-sounding answer.
        if stop != "sufficient" and not answer.abstained:
            if self.hides_documents and self.config.restricted_partial == "abstain":
                # what is missing may be above the caller's clearance: a guess assembled from the
                # documents it may see would read as the answer, so say nothing instead
                return Answer(text="", abstained=True, confidence=0.0)
            answer = replace(answer, partial=True, confidence=round(answer.confidence * 0.5, 4))
        return answer


class _Run:
    """The state of one question: held evidence, steps, issued queries, budgets."""

    def __init__(self, engine: MultiHopEngine, question: str, clock: StepClock) -> None:
        self.engine = engine
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
        self.usage_at_start = self._spent()
        self.failures_at_start = {id(r): len(getattr(r, "failures", ())) for r in self._roles()}

    # -- bookkeeping ----------------------------------------------------------------------------

    def emit(self, stage: str, detail: str) -> None:
        if self.engine.on_event is not None:
            self.engine.on_event(stage, self.hop, detail)

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

    def retrieve(self, query: str, exclude: tuple[str, ...]) -> list[Hit]:
        return self.engine.cache.get_or_retrieve(
            self.engine.retriever, query, self.cfg.k, exclude, clearance=self.engine.clearance
        )

    def sufficient(self) -> bool:
        """The judge decides, once at least ``min_evidence`` passages are held."""
        if len(self.held) < self.cfg.min_evidence:
            return False
        self.emit("judging", f"{len(self.held)} passages held")
        return self.engine.judge.sufficient(self.question, self.ranked())

    def ranked(self) -> list[Evidence]:
        return self.engine.reranker.rerank(self.question, list(self.held.values()), self.steps)

    # -- the plan ---------------------------------------------------------------------------------

    def execute_plan(self, plan: Plan, seed_chunks: Sequence[str]) -> str:
        steps_of: dict[int, list[HopStep]] = {}
        for layer in plan.layers():
            if self.hop >= self.cfg.max_hops:
                return "max_hops"
            self.hop += 1
            if self.hop == 1 and seed_chunks:
                step = self.step(sub_query=self.question, issued="", hits=self._seed_hits(seed_chunks), keep=len(seed_chunks), depends_on=(), bridge={"oracle": True})
                steps_of[1] = [step]
                self.frontier = self.hold(step)
                continue
            self.emit("searching", "; ".join(s.query for s in layer))
            # Conditioning may call a model: the sub-queries of one layer are conditioned concurrently.
            jobs = self.engine.map(lambda sub: (sub, self._queries_for(sub, steps_of)), layer)
            flat = [(sub, conditioned) for sub, queries in jobs for conditioned in queries]
            exclude = tuple(self.held)
            results = self.engine.map(lambda job: self.retrieve(job[1].query, exclude if job[0].depends_on else ()), flat)
            new: list[Evidence] = []
            for (sub, conditioned), hits in zip(flat, results):
                if not hits and not sub.depends_on:
                    hits, conditioned = self._reformulate(conditioned)
                depends = tuple(s.step_id for d in sub.depends_on for s in steps_of.get(d, ()))
                keep = self.cfg.keep_first_hop if not sub.depends_on else self.cfg.keep_per_branch
                bridge = {"order": sub.order}
                if conditioned.bridge:
                    bridge.update(value=conditioned.bridge, kind=conditioned.kind, from_chunk=conditioned.from_chunk)
                step = self.step(sub_query=sub.query, issued=conditioned.query, hits=hits, keep=keep, depends_on=depends, bridge=bridge)
                steps_of.setdefault(sub.order, []).append(step)
                new.extend(self.hold(step))
            self.frontier = new
            if not self.held:
                return "no_evidence"
            stop = self.budget_stop()
            if stop:
                return stop
            if self.hop >= 2 and self.sufficient():
                return "sufficient"
        return ""

    def _queries_for(self, sub: SubQuery, steps_of: dict[int, list[HopStep]]) -> list[Conditioned]:
        if not sub.depends_on:
            return [Conditioned(query=sub.query)]
        dep_ids = {s.step_id for d in sub.depends_on for s in steps_of.get(d, ())}
        evidence = [e for e in self.held.values() if e.step_id in dep_ids]
        queries = self.engine.expander.condition(self.question, sub.query, evidence)
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
            if self.hop >= self.cfg.max_hops:
                return "max_hops"
            titles = tuple(e.title for e in self.held.values())
            branches = self.engine.bridges.condition(
                self.question, self.question, self.frontier, held_titles=titles, used=self.used_bridges
            )
            if not branches:
                return "no_bridge"
            self.hop += 1
            self.emit("searching", "conditioned on " + ", ".join(b.bridge for b in branches[:3]))
            fresh = [b for b in branches if fold(b.query) not in self.issued]
            if not fresh:
                return "loop_detected"
            exclude = tuple(self.held)
            results = self.engine.map(lambda b: self.retrieve(b.query, exclude), fresh)
            hop_steps: list[HopStep] = []
            looping = 0
            parents = {e.chunk_id: e.step_id for e in self.held.values()}
            for branch, hits in zip(fresh, results):
                self.issued.add(fold(branch.query))
                bridge = {"value": branch.bridge, "kind": branch.kind, "from_chunk": branch.from_chunk}
                depends = (parents[branch.from_chunk],) if branch.from_chunk in parents else ()
                step = self.step(sub_query=branch.bridge, issued=branch.query, hits=hits, keep=self.cfg.keep_per_branch, depends_on=depends, bridge=bridge)
                hop_steps.append(step)
                if self._loops(hits):
                    looping += 1
            if looping == len(hop_steps):
                return "loop_detected"
            self.frontier = [e for step in hop_steps for e in self.hold(step)]
            if not self.frontier:
                return "no_new_evidence"
            stop = self.budget_stop()
            if stop:
                return stop
            if self.sufficient():
                return "sufficient"

    def _loops(self, hits: list[Hit]) -> bool:
        """A hop loops when most of what it finds belongs to documents already held."""
        top = hits[: max(self.cfg.keep_per_branch, 3)]
        if not top:
            return False
        held_docs = {e.doc_id for e in self.held.values()}
        return sum(1 for h in top if h.doc_id in held_docs) / len(top) >= self.cfg.loop_overlap
