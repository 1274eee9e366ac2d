"""LLM-backed roles against the scripted backend: plans, conditioning, judging, cited synthesis, fallbacks."""

from __future__ import annotations

import pytest

from hoprag.evaluation.runner import evaluate
from hoprag.llm.errors import LLMTimeoutError
from hoprag.llm.fake import ScriptedLLM
from hoprag.pipeline.engine import MultiHopConfig
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.llm_roles import LLMPlanner, LLMSynthesizer
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit

RUSH = (
    'Which Canadian rock band released a song called "Counterparts" and had a drummer who was inducted '
    "into the Modern Drummer Hall of Fame?"
)
RUSH_PLAN = {
    "sub_queries": [
        {"order": 1, "query": "song Counterparts Canadian rock band", "rationale": "find the band", "depends_on": []},
        {"order": 2, "query": "drummer of the band found in step 1, Modern Drummer Hall of Fame", "depends_on": [1]},
    ],
    "synthesis_hint": "the band of step 1 whose drummer is in step 2",
}


def ev(i: int, doc: str, text: str, hop: int = 1) -> Evidence:
    hit = Hit(chunk_id=f"{doc}#0", doc_id=doc, score=1.0, rank=i, retriever="bm25")
    return Evidence(hit=hit, text=text, title=doc, hop=hop, step_id=f"s{hop}", sub_query="q")


def by_role(replies: dict[str, object]):
    """A scripted default reply chosen by which role is asking (its system prompt)."""

    def reply(call):
        system = call.system.lower()
        for cue, answer in replies.items():
            if cue in system:
                return answer
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    return reply


def test_planner_validates_caches_and_falls_back():
    llm = ScriptedLLM([RUSH_PLAN])
    planner = LLMPlanner(llm)
    plan = planner.plan(RUSH)
    assert [s.order for s in plan.sub_queries] == [1, 2] and plan.sub_queries[1].depends_on == [1]
    assert planner.plan(RUSH) is plan and len(llm.history) == 1  # cached by (question, model, prompt version)
    assert planner.usage.tokens > 0

    cyclic = {"sub_queries": [{"order": 1, "query": "a", "depends_on": [2]}, {"order": 2, "query": "b", "depends_on": [1]}]}
    fallback = LLMPlanner(ScriptedLLM([cyclic])).plan("Who founded the band?")
    assert fallback.planner.startswith("offline (fallback") and "cycle" in fallback.note
    timed_out = LLMPlanner(ScriptedLLM([LLMTimeoutError("slow", timeout=1.0)] * 5)).plan("Who founded the band?")
    assert timed_out.planner.startswith("offline (fallback") and "LLMTimeoutError" in timed_out.note


def test_synthesizer_parses_claims_and_rejects_citations_outside_the_buffer():
    evidence = [ev(1, "nobodys-hero", "Nobody's Hero is a song by Rush."), ev(2, "neil-peart", "Neil Peart, drummer of Rush.", hop=2)]
    reply = {
        "answer": "Rush",
        "claims": [
            {"text": "Nobody's Hero is by Rush.", "citations": ["E1"]},
            {"text": "Rush's drummer Neil Peart is in the Hall of Fame.", "citations": ["E2", "E9"]},
        ],
    }
    answer = LLMSynthesizer(ScriptedLLM([reply]), fallback=None).answer(RUSH, evidence)
    assert answer.text == "Rush" and not answer.abstained
    assert [(c.doc_id, c.hop) for c in answer.claims[1].citations] == [("neil-peart", 2)]
    assert answer.rejected_citations == ("E9",)
    insufficient = LLMSynthesizer(ScriptedLLM([{"answer": "", "insufficient": True}]), fallback=None).answer(RUSH, evidence)
    assert insufficient.abstained and insufficient.text == ""


def test_engine_runs_an_llm_plan_with_conditioned_dependent_hops(hotpot_index, hotpot_slice, monkeypatch):
    llm = ScriptedLLM(
        default=by_role(
            {
                "plan retrieval": RUSH_PLAN,
                "write search queries": {"queries": [{"query": "Rush drummer Modern Drummer Hall of Fame", "bridge": "Rush"}]},
                "decide whether": {"sufficient": True},
                "answer the question": {"answer": "Rush", "claims": [{"text": "Rush released Nobody's Hero.", "citations": ["E1"]}]},
            }
        )
    )
    monkeypatch.setattr("hoprag.llm.registry.make_llm", lambda spec, **kw: llm)
    engine = make_engine("multihop", hotpot_index, llm="openai:scripted")
    trace = engine.answer(RUSH, case_id=hotpot_slice.cases[0].case_id)
    assert trace.plan["planner"].startswith("llm-planner") and len(trace.plan["sub_queries"]) == 2
    first, second = trace.steps[0], trace.steps[1]
    assert first.hop == 1 and second.hop == 2 and second.depends_on == (first.step_id,)
    assert second.issued_query == "Rush drummer Modern Drummer Hall of Fame" and second.bridge["value"] == "Rush"
    assert trace.stop_reason == "sufficient" and trace.answer.text == "Rush"
    assert trace.usage.tokens > 0 and trace.answer.claims[0].citations
    assert evaluate([hotpot_slice.cases[0]], [trace], ks=(5,)).aggregate["chain_coverage@5"] == 1.0


def test_failed_model_calls_fall_back_to_offline_roles_and_the_trace_is_written(hotpot_index, monkeypatch):
    broken = ScriptedLLM(default=LLMTimeoutError("the server did not answer", timeout=0.1))
    monkeypatch.setattr("hoprag.llm.registry.make_llm", lambda spec, **kw: broken)
    trace = make_engine("multihop", hotpot_index, llm="openai:down").answer(RUSH)
    assert trace.plan["planner"].startswith("offline (fallback")
    assert trace.answer.text  # the offline extractive synthesiser answered
    assert trace.stop_reason


def test_time_budget_answers_partially_or_abstains(hotpot_index):
    partial = make_engine("multihop", hotpot_index, time_budget_ms=0.001).answer(RUSH)
    assert partial.stop_reason == "time_budget" and partial.answer.partial and not partial.answer.abstained
    abstain = make_engine("multihop", hotpot_index, time_budget_ms=0.001, fallback="abstain").answer(RUSH)
    assert abstain.stop_reason == "time_budget" and abstain.answer.abstained and abstain.answer.text == ""


def test_token_budget_counts_model_tokens(hotpot_index, monkeypatch):
    llm = ScriptedLLM(default=by_role({"plan retrieval": RUSH_PLAN, "write search queries": {"queries": [{"query": "Rush drummer", "bridge": "Rush"}]}, "decide whether": {"sufficient": False}, "answer the question": {"answer": "Rush"}}))
    monkeypatch.setattr("hoprag.llm.registry.make_llm", lambda spec, **kw: llm)
    trace = make_engine("multihop", hotpot_index, llm="openai:scripted", token_budget=1).answer(RUSH)
    assert trace.stop_reason == "token_budget" and trace.answer.partial


def test_retrieval_cache_reuses_identical_calls(hotpot_index):
    engine = make_engine("multihop", hotpot_index)
    engine.answer(RUSH)
    misses = engine.cache.misses
    engine.answer(RUSH)
    assert engine.cache.misses == misses and engine.cache.hits >= misses


def test_config_rejects_a_bad_fallback():
    with pytest.raises(ValueError):
        MultiHopConfig(fallback="guess")
