"""Cost of LLM calls from a configurable price table ($ per 1M tokens, per model).

hoprag ships no prices: hosted prices change, and local models cost nothing. Give a table in
YAML or JSON::

    models:
      gpt-4o-mini: {input_per_million: 0.15, output_per_million: 0.60}
    default: {input_per_million: 0.0, output_per_million: 0.0}

A model is priced by its exact name, else by the longest table entry its name starts with
(``gpt-4o-mini`` prices ``gpt-4o-mini-2024-07-18``), else by ``default``, else at zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hoprag.files import read_text
from hoprag.jsonl import parse_json


class ModelPrice(BaseModel):
    """Dollars per one million prompt (input) and completion (output) tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_million: float = Field(ge=0.0)
    output_per_million: float = Field(ge=0.0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6


class PriceTable(BaseModel):
    """Prices by model name; see the module docstring for how a name is matched."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, ModelPrice] = Field(default_factory=dict)
    default: ModelPrice | None = None

    def price_for(self, model: str) -> ModelPrice | None:
        if model in self.models:
            return self.models[model]
        prefixes = [name for name in self.models if model.startswith(name)]
        if prefixes:
            return self.models[max(prefixes, key=len)]
        return self.default

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """Dollars for one call; zero for a model the table does not price."""
        price = self.price_for(model)
        return 0.0 if price is None else price.cost(prompt_tokens, completion_tokens)


def load_price_table(path: str | Path) -> PriceTable:
    """Read a price table from a ``.json``, ``.yaml`` or ``.yml`` file."""
    path = Path(path)
    data: Any
    if path.suffix.lower() in (".yaml", ".yml"):
        from hoprag.yaml_input import read_yaml

        data = read_yaml(path, what="price table", fix="fix the file's YAML")
    else:
        text = read_text(path, "price table")
        data = parse_json(text, source=str(path), what="price table",
                          fix="fix the file's JSON syntax, or give a .yaml file")
    try:
        return PriceTable.model_validate(data or {})
    except ValidationError as exc:
        from hoprag.validation_messages import validation_error

        raise validation_error(
            exc, what="price table", source=str(path),
            fix="use {models: {NAME: {input_per_million: X, output_per_million: Y}}, default: {...}}",
        ) from None
