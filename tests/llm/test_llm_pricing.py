"""Price tables: matching model names and loading YAML / JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.errors import InputError
from hoprag.llm import ModelPrice, PriceTable, load_price_table

pytestmark = pytest.mark.unit


def test_exact_then_longest_prefix_then_default() -> None:
    table = PriceTable(
        models={"gpt-4o": ModelPrice(input_per_million=2.5, output_per_million=10.0),
                "gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.6)},
        default=ModelPrice(input_per_million=1.0, output_per_million=1.0),
    )
    # 1M prompt tokens at 0.15 plus 0.5M completion tokens at 0.6
    assert table.cost("gpt-4o-mini-2024-07-18", 1_000_000, 500_000) == pytest.approx(0.15 + 0.3)
    assert table.cost("gpt-4o", 2_000, 1_000) == pytest.approx(2_000 * 2.5 / 1e6 + 1_000 * 10.0 / 1e6)
    assert table.cost("llama-3", 10, 10) == pytest.approx(20 / 1e6)
    assert PriceTable().cost("anything", 10**6, 10**6) == 0.0


def test_load_yaml_and_json(tmp_path: Path) -> None:
    yml = tmp_path / "prices.yaml"
    yml.write_text("models:\n  m1: {input_per_million: 1, output_per_million: 4}\n")
    js = tmp_path / "prices.json"
    js.write_text('{"models": {"m1": {"input_per_million": 1, "output_per_million": 4}}}')
    assert load_price_table(yml) == load_price_table(js)
    assert load_price_table(yml).cost("m1", 500_000, 250_000) == pytest.approx(0.5 + 1.0)


def test_unknown_field_is_refused_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "prices.yaml"
    bad.write_text("models:\n  m1: {input: 1, output_per_million: 4}\n")
    with pytest.raises(InputError, match=r"prices.yaml: invalid price table: .*models\.m1\.input: is an unknown field"):
        load_price_table(bad)


def test_negative_price_and_bad_syntax(tmp_path: Path) -> None:
    neg = tmp_path / "neg.json"
    neg.write_text('{"default": {"input_per_million": -1, "output_per_million": 0}}')
    with pytest.raises(InputError, match=r"must be at least 0(\.0)? \(got -1\) \(field .default\.input_per_million.\)"):
        load_price_table(neg)
    broken = tmp_path / "broken.json"
    broken.write_text('{"models": ')
    with pytest.raises(InputError, match=r"broken.json:1: price table is not valid JSON"):
        load_price_table(broken)
    with pytest.raises(InputError, match="price table not found"):
        load_price_table(tmp_path / "missing.yaml")
