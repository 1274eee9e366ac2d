"""Conformance tests every LLM backend must pass (a mixin, Haystack style).

::

    class TestMyBackend(LLMConformance):
        @pytest.fixture
        def llm(self):
            return MyBackend(...)

A scripted backend overrides :meth:`LLMConformance.expect` to queue the replies a real model would
give; real backends ignore it and are checked on properties, not wording. Streaming
(:meth:`LLM.stream`) is held to the same contract: the pieces join to the reply ``complete`` gives
(for a deterministic backend), usage and cost are counted, a deadline ends a stream, and a stream
closed early leaves the backend ready for the next call. Needs pytest.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from pydantic import BaseModel

from hoprag.errors import ConfigError
from hoprag.llm.base import LLM, Completion
from hoprag.llm.errors import LLMBudgetError, LLMTimeoutError
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
#: a request whose reply runs to many pieces (the offline backend echoes its first line)
LONG_ASK = ("Tell the long story of the lighthouse keeper who kept the light burning through every storm of the"
            " winter, one night after another, until the spring ships came home safe to the harbour")
LONG_REPLY = LONG_ASK
BRIEF = {"role": "system", "content": "You answer briefly."}


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

    # -- streaming ------------------------------------------------------------------------------

    def test_stream_pieces_join_to_the_completed_text(self, llm: LLM) -> None:
        if not self.deterministic:
            pytest.skip("this backend does not promise determinism")
        self.expect(llm, "Paris is the capital of France.", "Paris is the capital of France.")
        ask = [BRIEF, {"role": "user", "content": QUESTION}]
        whole = llm.complete(ask, max_tokens=16)
        stream = llm.stream(ask, max_tokens=16)
        pieces = list(stream)
        assert pieces and all(isinstance(p, str) and p for p in pieces)
        assert "".join(pieces) == whole.text
        assert stream.completion is not None and stream.completion.text == whole.text

    def test_stream_counts_usage_and_cost(self, llm: LLM) -> None:
        self.expect(llm, "Paris is the capital of France.")
        saved = llm.prices
        llm.prices = PriceTable(models={llm.model: ModelPrice(input_per_million=1.0, output_per_million=2.0)})
        try:
            stream = llm.stream([BRIEF, {"role": "user", "content": QUESTION}], max_tokens=8)
            text = "".join(stream)
        finally:
            llm.prices = saved
        done = stream.completion
        assert isinstance(done, Completion) and done.text == text and text.strip()
        assert done.usage.prompt_tokens > 0 and done.usage.completion_tokens > 0
        if self.supports_max_tokens:
            assert done.usage.completion_tokens <= 8
        assert done.usage.cost == pytest.approx(
            (done.usage.prompt_tokens * 1.0 + done.usage.completion_tokens * 2.0) / 1e6)
        assert done.latency_ms > 0 and done.attempts == 1 and done.model

    def test_a_deadline_ends_a_stream(self, llm: LLM) -> None:
        self.expect(llm, "The keeper.", LONG_REPLY)
        ask = [BRIEF, {"role": "user", "content": LONG_ASK}]
        llm.complete(ask, max_tokens=4)  # an in-process model reads a new prompt at once, uninterruptibly
        started = time.monotonic()
        stream = llm.stream(ask, max_tokens=48, deadline=started + 0.5)
        read: list[str] = []
        with pytest.raises((LLMTimeoutError, LLMBudgetError)):
            for piece in stream:
                read.append(piece)
                time.sleep(0.2)  # a slow reader: its time counts against the deadline too
        assert time.monotonic() - started < 0.5 + 0.2 + 2.0
        assert len(read) <= 4  # ended at the deadline, not at the end of the reply

    def test_a_stream_closed_early_leaves_the_backend_ready(self, llm: LLM) -> None:
        self.expect(llm, LONG_REPLY, "Paris.")
        with llm.stream([BRIEF, {"role": "user", "content": LONG_ASK}], max_tokens=32) as stream:
            assert next(stream)
        assert stream.completion is None
        assert llm.complete([BRIEF, {"role": "user", "content": QUESTION}], max_tokens=8).text.strip()

    def test_bad_stream_requests_are_refused_before_any_call(self, llm: LLM) -> None:
        with pytest.raises(ConfigError):
            llm.stream([])
        with pytest.raises(ConfigError, match="max_tokens"):
            llm.stream("hi", max_tokens=0)
        with pytest.raises(ConfigError, match="temperature"):
            llm.stream("hi", temperature=-1.0)
