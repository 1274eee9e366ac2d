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

Progress is reported as typed events (:mod:`hoprag.pipeline.events`) to the listener ``answer`` is
given (or, for every question, the one the engine was built with); ``tokens=True`` streams the
answer's text through the synthesiser as ``Token`` events.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from hoprag.security.acl import Clearance, visible_corpus
from hoprag.security.clearance import resolve_clearance
from hoprag.index.base import Retriever
from hoprag.index.entity_graph import EntityGraph
from hoprag.llm.guard import question_scope
from hoprag.pipeline.engine import MultiHopConfig, StepClock, config_hash, mechanical_confidence
from hoprag.pipeline.events import AnswerReady, Emitter, OnEvent, PlanMade, PlanStarted, SynthesisStarted
from hoprag.pipeline.graph_hop import GraphHop
from hoprag.pipeline.plan import OfflinePlanner, Plan, Planner, SubQuery
from hoprag.pipeline.question_check import check_question
from hoprag.pipeline.question_run import QuestionRun
from hoprag.pipeline.retrieval_cache import RetrievalCache
from hoprag.pipeline.roles import (
    BridgeExpander,
    ChainReranker,
    CorpusView,
    CoverageJudge,
    Expander,
    ExtractiveSynthesizer,
    Judge,
    Reranker,
    Synthesizer,
)
from hoprag.records import Answer, Chunk, Document, Evidence, Trace


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
        on_event: OnEvent | None = None,
        clearance: str | Clearance | None = None,
        graph: EntityGraph | None = None,
        graph_proposals: int = 2,
        bridge_retriever: Retriever | None = None,
    ) -> None:
        """``bridge_retriever``, when given, serves the dependent lookups (a plan's conditioned
        sub-queries and bridge hops) while ``retriever`` serves the question's first lookups: a second
        signal where a bridge's wording may differ from its passage's. ``clearance`` answers for a caller at that level (``None``: unrestricted). ``graph`` (the
        index's entity graph) turns the graph hop on: personalised PageRank between hops proposes up
        to ``graph_proposals`` chunks per hop (:mod:`hoprag.pipeline.graph_hop`). ``on_event`` hears every
        question this engine answers (``answer(on_event=...)`` one question)."""
        self.retriever = retriever
        self.bridge_retriever = bridge_retriever
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
        # the walk is built over the caller's view: hidden chunks and their entities are cut out of it
        visible = self.chunks if self.clearance is not None else None  # a stored view carries its mask
        self.graph_hop = GraphHop(graph, visible=visible) if graph is not None else None
        self.graph_proposals = graph_proposals
        self.on_event = on_event
        # make_engine sets it when roles use a model: their shared per-question budget and breakers
        self.llm_guard = None
        self._pool: ThreadPoolExecutor | None = None
        self.refresh_config_hash()

    def refresh_config_hash(self) -> None:
        """The config hash names the engine config and every role, so swapped roles change it."""
        roles = {r: getattr(self, r).name for r in ("planner", "expander", "judge", "reranker", "synthesizer")}
        roles["retriever"] = getattr(self.retriever, "name", type(self.retriever).__name__)
        if self.bridge_retriever is not None:  # named only when set, so one-retriever configurations keep their hash
            roles["bridge_retriever"] = getattr(self.bridge_retriever, "name", type(self.bridge_retriever).__name__)
        if self.graph_hop is not None:  # named only when on, so graph-less configurations keep their hash
            roles["graph"] = f"{self.graph_hop.describe()}:{self.graph_proposals}"
        self.config_hash = config_hash(self.config, f"{self.name}:{sorted(roles.items())}", self.clearance)

    # -- one question ---------------------------------------------------------------------------

    def answer(self, question: str, *, case_id: str = "", run_id: str = "", seed_chunks: Sequence[str] = (),
               on_event: OnEvent | None = None, tokens: bool = False) -> Trace:
        """Answer ``question``. ``seed_chunks`` replaces hop 1 with given chunks (the oracle-hop
        ablation: the correct prior evidence is supplied and every later hop runs unchanged).
        ``on_event`` hears the question's progress (:mod:`hoprag.pipeline.events`), and with
        ``tokens`` the answer's text as the synthesiser writes it.

        Every model call of the question draws on one scope (:mod:`hoprag.llm.guard`): one budget,
        and the fallbacks it met land in ``trace.warnings`` and ``trace.fallbacks`` (per role)."""
        check_question(question)  # the one limit of every entry point (ask, run, the service)
        emit = Emitter(on_event if on_event is not None else self.on_event, tokens=tokens)
        guard = self.llm_guard
        with guard.question() if guard is not None else question_scope() as scope:
            trace = self._answer_question(question, case_id=case_id, run_id=run_id, seed_chunks=seed_chunks, emit=emit)
        if scope.fallbacks or scope.notes:
            trace = replace(trace, warnings=(*trace.warnings, *scope.warnings()), fallbacks=scope.counts())
        emit(AnswerReady(trace))
        return trace

    def _answer_question(self, question: str, *, case_id: str, run_id: str, seed_chunks: Sequence[str],
                         emit: Emitter) -> Trace:
        run = QuestionRun(self, question, StepClock(), emit)
        t0 = 0.0  # the clock started with the run: its setup counts as planning, so the phases add up to the question's time
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
            **run.hop_timings(),
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

    def _plan(self, run: QuestionRun) -> Plan:
        run.emit(PlanStarted())
        plan = self.planner.plan(run.question)
        run.emit(PlanMade(plan.planner, tuple(plan.sub_queries)))
        return plan

    def _answer(self, run: QuestionRun, evidence: tuple[Evidence, ...], stop: str) -> Answer:
        if not evidence:
            return Answer(text="", abstained=True)
        hops_done = max(s.hop for s in run.steps)
        confidence = mechanical_confidence(evidence, hops_done=hops_done, hops_wanted=min(2, self.config.max_hops))
        budget_ran_out = stop in ("time_budget", "token_budget")
        if budget_ran_out and self.config.fallback == "abstain":
            return Answer(text="", abstained=True, confidence=0.0)
        if stop != "sufficient" and self.hides_documents and self.config.restricted_partial == "abstain":
            # what is missing may be above the caller's clearance: a guess assembled from the documents
            # it may see would read as the answer, so say nothing instead — decided before synthesising,
            # so a streamed answer never shows text the answer then withdraws
            return Answer(text="", abstained=True, confidence=0.0)
        run.emit(SynthesisStarted(run.hop))
        on_token = run.emit.token_sink()
        if on_token is None:
            answer = self.synthesizer.answer(run.question, evidence)
        else:  # the synthesiser streams its text (a model one asks its model for a stream)
            answer = self.synthesizer.answer(run.question, evidence, on_token=on_token)
        answer = replace(answer, confidence=confidence if not answer.abstained else 0.0)
        # Without the judge's word that the evidence suffices (a budget ran out, or hopping stopped
        # for lack of bridges, new evidence or hops), the chain may be incomplete: say so, never
        # give a complete-sounding answer.
        if stop != "sufficient" and not answer.abstained:
            answer = replace(answer, partial=True, confidence=round(answer.confidence * 0.5, 4))
        return answer
