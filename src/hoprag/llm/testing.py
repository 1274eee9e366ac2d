"""Conformance tests every LLM backend must pass (a mixin, Haystack style).

::

    class TestMyBackend(LLMConformance):
        @pytest.fixture
        def llm(self):
            return MyBackend(...)

A scripted backend overrides :meth:`LLMConformance.expect` to queue the replies a real model would
give; real backends ignore it and are checked on properties, not wording. Needs pytest.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from hoprag.errors import ConfigError
from hoprag.llm.base import LLM, Completion
from hoprag.llm.pricing import ModelPrice, PriceTable
from hoprag.llm.schemas import validate

CITY_SCHEMA: dict[str, Any] = {
    "title": "CityAnswer",
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 1}, "confident": {"type": "boolean"}},
    "required": ["city", "confident"],
    "additionalProperties": False,
}
QUESTION = "What is the capital of France? Answer in one short sentence."


class Country(BaseModel):
    """The pydantic form used by the conformance JSON test."""

    country: str
    population_millions: int


class LLMConformance:
    """Mixin: subclasses provide an ``llm`` fixture; flags say what the backend can promise."""

    #: completion_tokens never exceed max_tokens
    supports_max_tokens = True
    #: the same request at temperature 0 gives the same text
    deterministic = True

    def expect(self, llm: LLM, *replies: Any) -> None:
        """Queue replies for a scripted backend; a real backend ignores this."""

    def test_plain_completion(self, llm: LLM) -> None:
        self.expect(llm, "Paris is the capital of France.")
        result = llm.complete(
            [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": QUESTION}],
            max_tokens=16,
        )
        assert isinstance(result, Completion)
        assert isinstance(result.text, str) and result.text.strip()
        assert result.model
        assert result.latency_ms > 0
        assert result.attempts == 1
        assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
        assert result.usage.cost == 0.0  # no price table given
        assert result.data is None

    def test_max_tokens_bounds_completion(self, llm: LLM) -> None:
        if not self.supports_max_tokens:
            pytest.skip("this backend replies as scripted, whatever max_tokens says")
        self.expect(llm, "The sea is wide and deep and blue")
        result = llm.complete(
            [{"role": "system", "content": "You answer briefly."},
             {"role": "user", "content": "Write a short poem about the sea."}],
            max_tokens=4,
        )
        assert 0 < result.usage.completion_tokens <= 4

    def test_same_request_gives_same_text(self, llm: LLM) -> None:
        if not self.deterministic:
            pytest.skip("this backend does not promise determinism")
        self.expect(llm, "Paris.", "Paris.")
        first = llm.complete(QUESTION, max_tokens=16)
        second = llm.complete([{"role": "user", "content": QUESTION}], max_tokens=16)
        assert first.text == second.text

    def test_json_schema_dict_gives_valid_data(self, llm: LLM) -> None:
        self.expect(llm, '{"city": "Paris", "confident": true}')
        result = llm.complete(QUESTION + " Reply as JSON.", json_schema=CITY_SCHEMA, max_tokens=64)
        assert validate(result.data, CITY_SCHEMA) == []
        assert json.loads(result.text) == result.data or result.attempts > 1

    def test_json_pydantic_model_gives_instance(self, llm: LLM) -> None:
        self.expect(llm, '{"country": "France", "population_millions": 68}')
        result = llm.complete("Name a country and its population in millions.", json_schema=Country, max_tokens=64)
        assert isinstance(result.data, Country)

    def test_price_table_turns_tokens_into_cost(self, llm: LLM) -> None:
        self.expect(llm, "Paris.")
        saved = llm.prices
        llm.prices = PriceTable(models={llm.model: ModelPrice(input_per_million=1.0, output_per_million=2.0)})
        try:
            result = llm.complete(QUESTION, max_tokens=8)
        finally:
            llm.prices = saved
        usage = result.usage
        assert usage.cost == pytest.approx((usage.prompt_tokens * 1.0 + usage.completion_tokens * 2.0) / 1e6)
        assert usage.cost > 0

    def test_bad_requests_are_refused_before_any_call(self, llm: LLM) -> None:
        for bad in ([], [{"role": "tool", "content": "x"}], [{"role": "user"}], [{"role": "user", "content": 3}]):
            with pytest.raises(ConfigError):
                llm.complete(bad)
        with pytest.raises(ConfigError, match="max_tokens"):
            llm.complete("hi", max_tokens=0)
        with pytest.raises(ConfigError, match="temperature"):
            llm.complete("hi", temperature=-1.0)
