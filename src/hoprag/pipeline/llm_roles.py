"""LLM-backed pipeline roles: planner, expander, judge, reranker, synthesiser.

Each takes any :class:`~hoprag.llm.base.LLM` (``offline``, ``openai:MODEL``, ``llamacpp:PATH``), asks
for JSON validated against a pydantic schema (the LLM layer repairs once, then raises), counts the
tokens and cost it spent in ``usage``, and falls back to the offline role when the model fails —
recording why, so a trace is always written and the fallback can be scored. The call itself (the
question's budget, the backend's circuit breaker, fitting the prompt to the model's context) is
:class:`~hoprag.pipeline.model_calls.ModelRole`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from hoprag.errors import ConfigError
from hoprag.llm.guard import LLMGuard
from hoprag.pipeline.cited_text import CITED_SYSTEM, cited_prompt, parse_cited_text
from hoprag.pipeline.model_calls import EVIDENCE_WIDTH, ModelRole, evidence_block
from hoprag.pipeline.plan import MAX_SUBQUERIES, OfflinePlanner, Plan, validate_plan
from hoprag.pipeline.roles import Conditioned
from hoprag.records import Answer, Citation, Claim, Evidence, HopStep

PLAN_PROMPT = "plan-v1"
EXPAND_PROMPT = "expand-v1"
JUDGE_PROMPT = "judge-v1"
RERANK_PROMPT = "rerank-v1"
SYNTH_PROMPT = "synth-v1"


def _passages(head: str) -> Callable[[Sequence[Evidence], int], str]:
    """A user message: ``head``, then the passages (re-rendered when the prompt is fitted)."""
    return lambda items, width=EVIDENCE_WIDTH: f"{head}\n\nPassages:\n{evidence_block(items, width)}"


# --- planner -------------------------------------------------------------------------------------


class _SubQueryReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    order: int
    query: str
    rationale: str = ""
    depends_on: list[int] = Field(default_factory=list)
    target_doc_type: str | None = None


class _PlanReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sub_queries: list[_SubQueryReply]
    synthesis_hint: str = ""


class LLMPlanner(ModelRole):
    """Decomposes a question into at most ``max_subqueries`` sub-queries with dependencies.

    Plans are cached by (question, model, prompt version). An invalid plan (a cycle, an unknown
    dependency, too many steps) or a failed call falls back to the offline plan, noted in ``note``;
    a fallback plan is not cached, so the next question asks the model again.
    """

    role = "planner"

    def __init__(self, llm, *, max_subqueries: int = 4, guard: LLMGuard | None = None) -> None:
        super().__init__(llm, guard)
        self.name = f"llm-planner:{llm.spec}"
        self.max_subqueries = min(max_subqueries, MAX_SUBQUERIES)
        self.cache: dict[tuple[str, str, str], Plan] = {}
        self.fallback = OfflinePlanner()

    def plan(self, question: str) -> Plan:
        key = (question, self.llm.spec, PLAN_PROMPT)
        if key in self.cache:
            return self.cache[key]
        system = (
            "You plan retrieval for a multi-hop question over a document collection. Break the question into "
            f"at most {self.max_subqueries} search sub-queries. Number them with 'order' from 1. When a sub-query "
            "needs a value that an earlier one finds (a name, an id, a date), list that earlier order in "
            "'depends_on' and refer to the value in words (e.g. 'retention period of the product family found in "
            "step 2'). Independent sub-queries have empty 'depends_on' and can run in parallel. Give each a short "
            "'rationale' and, when obvious, a 'target_doc_type'. End with a 'synthesis_hint' saying how the pieces "
            "combine into the answer. Do not answer the question."
        )
        reply = self.ask(system, _PlanReply, 600, user=f"Question: {question}")
        plan, reason = None, reply.fallback
        if reply.ok:
            try:
                plan = validate_plan(reply.data.model_dump(), planner=self.name)
                if len(plan.sub_queries) > self.max_subqueries:
                    raise ConfigError(f"plan has {len(plan.sub_queries)} sub-queries; the limit is {self.max_subqueries}")
            except ConfigError as exc:
                reason = self.record_fallback("invalid", str(exc))
                plan = None
        if plan is None:
            offline = self.fallback.plan(question)
            return offline.model_copy(update={"planner": f"offline (fallback from {self.name})", "note": reason or "no plan"})
        self.cache[key] = plan
        return plan


# --- expander ------------------------------------------------------------------------------------


class _QueryReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    query: str
    bridge: str = ""


class _ExpandReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    queries: list[_QueryReply]


class LLMExpander(ModelRole):
    """Rewrites a dependent sub-query with the concrete values its dependencies' evidence holds."""

    role = "expander"

    def __init__(self, llm, fallback, *, max_queries: int = 3, guard: LLMGuard | None = None) -> None:
        super().__init__(llm, guard)
        self.name = f"llm-expander:{llm.spec}"
        self.fallback = fallback
        self.max_queries = max_queries

    def condition(self, question: str, sub_query: str, evidence: Sequence[Evidence]) -> list[Conditioned]:
        if not evidence:
            return [Conditioned(query=sub_query)]
        system = (
            "You write search queries. Given a sub-query that refers to values found earlier, and the passages "
            f"found earlier, write up to {self.max_queries} concrete search queries that name those values "
            "explicitly. For each, give the 'bridge': the value taken from the passages. Use only values the "
            "passages state."
        )
        render = _passages(f"Question: {question}\nSub-query: {sub_query}")
        reply = self.ask(system, _ExpandReply, 300, evidence=evidence, render=render)
        if not reply.ok or not reply.data.queries:
            return self.fallback.condition(question, sub_query, evidence)
        by_text = {e.text: e for e in reply.shown}
        out = []
        for q in reply.data.queries[: self.max_queries]:
            source = next((e for e in by_text.values() if q.bridge and q.bridge.lower() in e.text.lower()), evidence[0])
            out.append(Conditioned(query=q.query.strip() or sub_query, bridge=q.bridge, kind="llm", from_chunk=source.chunk_id))
        return out


# --- judge ---------------------------------------------------------------------------------------


class _JudgeReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sufficient: bool
    missing: str = ""


class LLMJudge(ModelRole):
    """Asks whether the held evidence suffices to answer; on a failed call, the offline judge decides."""

    role = "judge"

    def __init__(self, llm, fallback, *, guard: LLMGuard | None = None) -> None:
        super().__init__(llm, guard)
        self.name = f"llm-judge:{llm.spec}"
        self.fallback = fallback

    def sufficient(self, question: str, evidence: Sequence[Evidence]) -> bool:
        system = (
            "Decide whether the passages contain every fact needed to answer the question, across all its "
            "steps. Answer false if any link of the reasoning chain is missing; say what is missing."
        )
        reply = self.ask(system, _JudgeReply, 120, evidence=evidence[:8], render=_passages(f"Question: {question}"))
        if not reply.ok:
            return self.fallback.sufficient(question, evidence)
        return bool(reply.data.sufficient)


# --- reranker ------------------------------------------------------------------------------------


class _Score(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    score: float


class _RerankReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    scores: list[_Score]


class LLMReranker(ModelRole):
    """Scores each passage 0–10 for the question; unscored passages keep the offline order after them."""

    role = "reranker"

    def __init__(self, llm, fallback, *, limit: int = 10, guard: LLMGuard | None = None) -> None:
        super().__init__(llm, guard)
        self.name = f"llm-reranker:{llm.spec}"
        self.fallback = fallback
        self.limit = limit

    def rerank(self, question: str, evidence: Sequence[Evidence], steps: Sequence[HopStep] = ()) -> list[Evidence]:
        base = self.fallback.rerank(question, evidence, steps)
        if not base:
            return base
        system = (
            "Score each passage from 0 (useless) to 10 (states a fact the answer needs) for answering the "
            "question, counting passages that supply an intermediate link of the chain as useful."
        )
        reply = self.ask(system, _RerankReply, 300, evidence=base, render=_passages(f"Question: {question}"))
        if not reply.ok:
            return base
        scores = {s.id.strip("[]E "): s.score for s in reply.data.scores}
        keyed = [(-(scores.get(str(i), -1.0)), i, item) for i, item in enumerate(base, start=1)]
        ordered = [item for _, _, item in sorted(keyed, key=lambda t: (t[0], t[1]))]
        return [replace(e, hit=replace(e.hit, rank=pos)) for pos, e in enumerate(ordered[: self.limit], start=1)]


# --- synthesiser ---------------------------------------------------------------------------------


class _ClaimReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str
    citations: list[str] = Field(default_factory=list)


class _AnswerReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    answer: str
    claims: list[_ClaimReply] = Field(default_factory=list)
    insufficient: bool = False
    conflicts: list[str] = Field(default_factory=list)


class LLMSynthesizer(ModelRole):
    """Answers from the buffer with claims citing evidence ids; citations outside the buffer are rejected.

    When the prompt had to be fitted to the model's context, only the passages the model saw can be cited.
    Given ``on_token`` (a caller that wants the answer as it is written), it asks the model for a
    stream of text citing ``[E1]``-style markers instead (:mod:`hoprag.pipeline.cited_text`) and hands
    on each piece; a failed stream falls back to the offline synthesiser, whose text follows.
    """

    role = "synthesizer"

    def __init__(self, llm, fallback, *, guard: LLMGuard | None = None, stream_max_tokens: int = 256) -> None:
        super().__init__(llm, guard)
        self.name = f"llm-synthesizer:{llm.spec}"
        self.fallback = fallback
        #: the longest streamed answer (the JSON answer's limit is its own)
        self.stream_max_tokens = stream_max_tokens

    def answer(self, question: str, evidence: Sequence[Evidence], *,
               on_token: Callable[[str], None] | None = None) -> Answer:
        if not evidence:
            return Answer(text="", abstained=True)
        if on_token is not None:
            return self._streamed(question, evidence, on_token)
        system = (
            "Answer the question from the passages only. The answer usually needs facts from several passages: "
            "connect them explicitly (which passage gives the bridge value, which gives the final fact). Split "
            "your reasoning into short claims; every claim cites the passages that support it by their ids "
            "(e.g. \"E2\"). If passages disagree, say so in 'conflicts' and prefer the current or more specific "
            "source. If the passages do not support an answer, set 'insufficient' to true and say what is "
            "missing instead of guessing. Keep 'answer' short (a name, a value, yes/no, or one sentence)."
        )
        asked = self.ask(system, _AnswerReply, 700, evidence=evidence, render=_passages(f"Question: {question}"))
        if not asked.ok:
            return self.fallback.answer(question, evidence)
        reply, shown = asked.data, asked.shown
        ids = {f"E{i}": item for i, item in enumerate(shown, start=1)}
        ids.update({item.doc_id: item for item in shown})
        claims: list[Claim] = []
        rejected: list[str] = []
        for claim in reply.claims:
            cites = []
            for ref in claim.citations:
                key = ref.strip().strip("[]").split(",")[0].strip()
                item = ids.get(key) or ids.get(key.upper())
                if item is None:
                    rejected.append(ref)
                    continue
                cites.append(Citation(chunk_id=item.chunk_id, doc_id=item.doc_id, hop=item.hop))
            claims.append(Claim(text=claim.text, citations=tuple(cites)))
        text = reply.answer.strip()
        if reply.conflicts:
            claims.append(Claim(text="Conflict: " + "; ".join(reply.conflicts)))
        return Answer(
            text="" if reply.insufficient else text,
            claims=tuple(claims),
            abstained=bool(reply.insufficient) or not text,
            rejected_citations=tuple(rejected),
        )

    def _streamed(self, question: str, evidence: Sequence[Evidence], on_token: Callable[[str], None]) -> Answer:
        handed: list[str] = []

        def forward(piece: str) -> None:
            handed.append(piece)
            on_token(piece)

        render = lambda items, width: cited_prompt(question, items, width)  # noqa: E731 - refitted by width
        reply = self.stream_text(CITED_SYSTEM, self.stream_max_tokens, forward, evidence=evidence, render=render)
        if reply.fallback is None:
            return parse_cited_text(reply.data, reply.shown)
        if handed:
            on_token("\n")  # the offline answer follows what the model had begun
        return self.fallback.answer(question, evidence, on_token=on_token)
