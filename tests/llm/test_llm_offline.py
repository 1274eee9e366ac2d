"""The offline backend: deterministic text, schema-valid JSON, pluggable rule-based responders."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel, Field

from hoprag.llm import LLMError, LLMJSONError, OfflineLLM, OfflineRequest
from hoprag.llm.offline import count_tokens
from hoprag.records import Usage

pytestmark = pytest.mark.unit

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"


class SubQuery(BaseModel):
    order: int = Field(ge=1)
    query: str


class Plan(BaseModel):
    sub_queries: list[SubQuery] = Field(min_length=1)
    synthesis_hint: str = ""


def test_token_count_is_words_and_punctuation() -> None:
    # Arthur | ' | s | Magazine | ( | 1844 | ) | .
    assert count_tokens("Arthur's Magazine (1844).") == 8
    assert count_tokens("") == 0


def test_text_reply_is_the_first_line_of_the_prompt_cut_to_max_tokens(offline_llm: OfflineLLM) -> None:
    prompt = QUESTION + "\nContext: none"
    result = offline_llm.complete(prompt, max_tokens=4)
    assert result.text == "Which magazine was started"
    # Which|magazine|was|started|first|,|Arthur|'|s|Magazine|or|First|for|Women|? = 15; Context|:|none = 3
    assert result.usage == Usage(18, 4, 0.0)
    assert result.model == "rules" and offline_llm.spec == "offline"


def test_json_without_a_responder_is_the_minimal_valid_instance(offline_llm: OfflineLLM) -> None:
    result = offline_llm.complete(QUESTION, json_schema=Plan)
    assert result.data == Plan(sub_queries=[SubQuery(order=1, query="")])
    assert result.text == '{"sub_queries": [{"order": 1, "query": ""}]}'
    assert result.raw == {"responder": False}


def test_titled_responder_plugs_in_rule_based_logic(offline_llm: OfflineLLM) -> None:
    def plan_rules(request: OfflineRequest) -> Plan:
        left, right = request.prompt.split(",", 1)[1].rstrip("?").split(" or ")
        return Plan(sub_queries=[SubQuery(order=1, query=left.strip()), SubQuery(order=2, query=right.strip())],
                    synthesis_hint="compare start dates")

    offline_llm.register("Plan", plan_rules)
    result = offline_llm.complete(QUESTION, json_schema=Plan)
    assert [q.query for q in result.data.sub_queries] == ["Arthur's Magazine", "First for Women"]
    assert result.raw == {"responder": True}
    # a titled responder does not answer other schemas or plain text
    assert offline_llm.complete(QUESTION, max_tokens=2).text == "Which magazine"


def test_general_responders_run_in_order_and_may_pass(offline_llm: OfflineLLM) -> None:
    seen: list[str] = []

    def passes(request: OfflineRequest) -> None:
        seen.append("first")

    def answers(request: OfflineRequest) -> str:
        seen.append("second")
        return "YES" if "enough" in request.prompt else None  # type: ignore[return-value]

    offline_llm.add_responder(passes)
    offline_llm.add_responder(answers)
    assert offline_llm.complete("is it enough?").text == "YES"
    assert seen == ["first", "second"]
    assert offline_llm.complete("what else").text == "what else"


def test_a_responder_with_invalid_json_ends_in_llm_json_error(offline_llm: OfflineLLM) -> None:
    calls: list[bool] = []

    def broken(request: OfflineRequest) -> dict:
        calls.append(request.is_repair)
        return {"sub_queries": []}

    offline_llm.register("Plan", broken)
    with pytest.raises(LLMJSONError, match="rules: .*sub_queries"):
        offline_llm.complete(QUESTION, json_schema=Plan)
    assert calls == [False, True]  # the repair round is offered to the responder too


def test_a_schema_it_cannot_satisfy_names_the_fix(offline_llm: OfflineLLM) -> None:
    schema = {"title": "Code", "type": "string", "pattern": "^[A-Z]{3}$"}
    with pytest.raises(LLMError, match="register an offline responder for schema 'Code'"):
        offline_llm.complete("code?", json_schema=schema)


def test_replies_are_deterministic_across_instances() -> None:
    a, b = OfflineLLM(), OfflineLLM()
    assert a.complete(QUESTION, json_schema=Plan).text == b.complete(QUESTION, json_schema=Plan).text
    assert a.complete(QUESTION).text == b.complete(QUESTION).text == QUESTION


def test_delay_simulates_a_slow_model() -> None:
    llm = OfflineLLM(delay=0.05)
    start = time.perf_counter()
    result = llm.complete("x")
    assert time.perf_counter() - start >= 0.05
    assert result.latency_ms >= 50.0


def test_named_offline_model_keeps_its_name_in_the_spec() -> None:
    assert OfflineLLM("judge").spec == "offline:judge"
