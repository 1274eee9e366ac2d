"""The engine under model faults: one budget per question, a breaker per backend, strict mode,
prompts fitted to the model's context, and fallbacks counted per role in traces and run summaries."""

from __future__ import annotations

import pytest

from hoprag.errors import ConfigError
from hoprag.llm import (
    LLMContextLengthError,
    LLMFallbackError,
    LLMServerError,
    LLMSettings,
    RetryPolicy,
    ScriptedLLM,
    question_scope,
)
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.llm_roles import LLMSynthesizer
from hoprag.pipeline.batch import Question, run_questions
from hoprag.records import Evidence, Hit

pytestmark = pytest.mark.unit

RUSH = (
    'Which Canadian rock band released a song called "Counterparts" and had a drummer who was inducted '
    "into the Modern Drummer Hall of Fame?"
)
PLAN = {
    "sub_queries": [
        {"order": 1, "query": "song Counterparts Canadian rock band", "depends_on": []},
        {"order": 2, "query": "drummer of the band found in step 1", "depends_on": [1]},
        {"order": 3, "query": "Modern Drummer Hall of Fame member of the band found in step 1", "depends_on": [1]},
    ]
}
ANSWER = {"answer": "Rush", "claims": [{"text": "Rush released Counterparts.", "citations": ["E1"]}]}


def by_role(replies: dict[str, object]):
    def reply(call):
        system = call.system.lower()
        for cue, answer in replies.items():
            if cue in system:
                return answer
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    return reply


NO_RETRY = RetryPolicy(max_retries=0)


def scripted(monkeypatch, llm: ScriptedLLM) -> ScriptedLLM:
    """Every backend the factory builds is ``llm`` (the settings' retry policy is the test's to set)."""
    monkeypatch.setattr("hoprag.llm.registry.make_llm", lambda spec, **kw: llm)
    return llm


def ev(rank: int, text: str) -> Evidence:
    hit = Hit(chunk_id=f"d{rank}#0", doc_id=f"d{rank}", score=1.0 / rank, rank=rank, retriever="bm25")
    return Evidence(hit=hit, text=text, title=f"doc {rank}", hop=1, step_id="s1", sub_query="q")


def test_a_spent_budget_sends_every_remaining_role_offline_at_once(hotpot_index, monkeypatch):
    llm = scripted(monkeypatch, ScriptedLLM(default=by_role({"plan retrieval": PLAN}), delay=5.0))
    engine = make_engine("multihop", hotpot_index, llm="openai:slow", llm_settings=LLMSettings(budget=0.3, retries=3))
    trace = engine.answer(RUSH)
    assert len(llm.history) == 1  # the planner's call timed out at the budget; nothing else was called
    assert trace.fallbacks.get("planner") == 1 and trace.fallbacks.get("synthesizer") == 1
    assert set(trace.fallbacks) >= {"planner", "judge", "synthesizer"}
    assert any("LLMTimeoutError" in w for w in trace.warnings)
    assert any("model budget of 0.3 s is spent" in w for w in trace.warnings)
    assert trace.answer.text  # the offline roles answered


def test_the_breaker_opens_after_three_failures_and_the_run_stops_calling(hotpot_index, hotpot_slice, monkeypatch, tmp_path):
    llm = scripted(monkeypatch, ScriptedLLM(default=LLMServerError("model crashed", status=500), retry=NO_RETRY))
    engine = make_engine("multihop", hotpot_index, llm="openai:down")
    questions = [Question(c.case_id, c.query) for c in hotpot_slice.cases[:3]]
    summary = run_questions(engine, questions, tmp_path / "traces.jsonl", redact=False)
    assert len(llm.history) == 3  # three failed calls opened the circuit; no fourth call was made
    assert summary.errors == 0 and summary.written == 3
    assert summary.fallback_traces == 3 and summary.fallback_total >= 3 + 2 * 2
    assert summary.fallbacks["planner"] == 3 and summary.fallbacks["synthesizer"] == 3
    assert len(summary.circuits) == 1 and "after 3 consecutive failed calls" in summary.circuits[0]
    last = engine.answer(RUSH)
    assert all("circuit open for scripted:scripted" in w for w in last.warnings)


def test_fallbacks_of_concurrent_expander_calls_land_in_the_question_trace(hotpot_index, monkeypatch):
    llm = scripted(monkeypatch, ScriptedLLM(default=by_role({
        "plan retrieval": PLAN,
        "write search queries": LLMServerError("expander backend down", status=503),
        "decide whether": {"sufficient": True},
        "answer the question": ANSWER,
    }), retry=NO_RETRY))
    engine = make_engine("multihop", hotpot_index, llm="openai:flaky")
    trace = engine.answer(RUSH)
    assert trace.fallbacks == {"expander": 2}  # sub-queries 2 and 3 were conditioned on two threads
    assert engine.expander.failures == []  # recorded in the question's scope, not left on the role
    assert trace.answer.text == "Rush"
    assert len(llm.history) == 5  # plan, two conditionings, judge, synthesis


def test_strict_mode_turns_a_fallback_into_an_error(hotpot_index, monkeypatch, tmp_path):
    scripted(monkeypatch, ScriptedLLM(default=LLMServerError("model crashed", status=500), retry=NO_RETRY))
    engine = make_engine("multihop", hotpot_index, llm="openai:down", llm_settings=LLMSettings(strict=True))
    with pytest.raises(LLMFallbackError, match="planner could not use its model and strict mode forbids"):
        engine.answer(RUSH)
    summary = run_questions(engine, [Question("q1", RUSH)], tmp_path / "t.jsonl", redact=False)
    assert summary.errors == 1


def test_the_prompt_is_fitted_to_a_known_window_lowest_ranked_evidence_first():
    evidence = [ev(i, f"Passage {i}: " + "Rush is a Canadian rock band from Toronto. " * 15) for i in range(1, 7)]
    llm = ScriptedLLM([{"answer": "Rush", "claims": [{"text": "x", "citations": ["E1", "E6"]}]}])
    llm.context_window = 1800
    with question_scope() as scope:
        answer = LLMSynthesizer(llm, fallback=None).answer(RUSH, evidence)
    sent = llm.history[0].prompt
    assert "[E1]" in sent and "[E6]" not in sent
    assert llm.prompt_tokens(list(llm.history[0].messages)) + llm.history[0].max_tokens <= 1800
    assert any("left out the" in n and "lowest-ranked of 6 evidence items" in n and "d6" in n for n in scope.notes)
    assert answer.rejected_citations == ("E6",)  # the model never saw E6: citing it is rejected


def test_a_context_error_refits_and_asks_again_instead_of_resending(monkeypatch):
    evidence = [ev(i, f"Passage {i} about Rush and Neil Peart. " * 10) for i in range(1, 9)]
    llm = ScriptedLLM([LLMContextLengthError("prompt too long"), ANSWER])
    with question_scope() as scope:
        answer = LLMSynthesizer(llm, fallback=None).answer(RUSH, evidence)
    first, second = (call.prompt for call in llm.history)
    assert first.count("[E") == 8 and second.count("[E") == 4  # no window known: half the evidence
    assert answer.text == "Rush" and scope.fallbacks == []
    assert any("refused the prompt as too long" in n for n in scope.notes)


def test_a_context_error_naming_the_window_fits_to_it(monkeypatch):
    evidence = [ev(i, f"Passage {i} about Rush and Neil Peart. " * 12) for i in range(1, 9)]
    llm = ScriptedLLM([LLMContextLengthError("too long", window=2000, prompt_tokens=2400), ANSWER])
    with question_scope():
        LLMSynthesizer(llm, fallback=None).answer(RUSH, evidence)
    assert llm.context_window == 2000
    second = llm.history[1]
    assert llm.prompt_tokens(list(second.messages)) + second.max_tokens <= 2000


def test_a_model_flag_the_engine_cannot_use_is_an_error(hotpot_index):
    with pytest.raises(ConfigError, match="--engine single answers without any model, so --llm openai:x"):
        make_engine("single", hotpot_index, llm="openai:x")
    with pytest.raises(ConfigError, match="--synth-llm openai:y"):
        make_engine("single", hotpot_index, synth_llm="openai:y")
    with pytest.raises(ConfigError, match="--rerank llm needs a model"):
        make_engine("multihop", hotpot_index, rerank="llm")
    assert make_engine("single", hotpot_index, llm="offline").name == "single"
