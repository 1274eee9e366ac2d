"""The answer text of an LLM span whose output a framework recorded as JSON (hoprag.otel_span_text)."""

from __future__ import annotations

import json

import pytest

from hoprag.otel_span_text import unwrap_json

pytestmark = pytest.mark.unit


def test_a_langchain_completion_models_result_gives_its_first_generations_text() -> None:
    # output.value of a LangChain LLM span (OpenInference): the LLMResult, generations per prompt
    result = {"generations": [[{"text": "Major League Soccer", "generation_info": None, "type": "Generation"},
                               {"text": "MLS", "type": "Generation"}]],
              "llm_output": None, "run": None, "type": "LLMResult"}
    assert unwrap_json(json.dumps(result)) == "Major League Soccer"


def test_a_haystack_generators_replies_and_plain_shapes() -> None:
    assert unwrap_json('{"replies": ["Donnie Smith"]}') == "Donnie Smith"
    assert unwrap_json('{"response": "Rush"}') == "Rush"
    assert unwrap_json('"Rush"') == "Rush"
    assert unwrap_json('{"generations": []}') == '{"generations": []}'  # nothing to unwrap: kept as recorded
    assert unwrap_json("not json") == "not json"
