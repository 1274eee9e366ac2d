"""The JSON Schema subset validator, minimal instances, and reply parsing."""

from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from hoprag.errors import ConfigError
from hoprag.llm.schemas import minimal_instance, parse_json_reply, resolve_schema, validate

pytestmark = pytest.mark.unit

SUB_QUERY = {
    "type": "object",
    "properties": {
        "order": {"type": "integer", "minimum": 1},
        "query": {"type": "string", "minLength": 3},
        "depends_on": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    },
    "required": ["order", "query"],
    "additionalProperties": False,
}


def test_valid_instance_has_no_problems() -> None:
    assert validate({"order": 1, "query": "ECB rates 2023", "depends_on": [1, 2]}, SUB_QUERY) == []


def test_each_violation_is_named_with_its_path() -> None:
    problems = validate({"order": 0, "query": "ab", "depends_on": [1, 1, "x"], "extra": 1}, SUB_QUERY)
    assert problems == [
        "$.order: 0 is below minimum 1",
        "$.query: shorter than minLength 3",
        "$.depends_on: items are not unique",
        "$.depends_on[2]: expected integer, got string",
        "$: unexpected property 'extra'",
    ]


def test_missing_required_and_wrong_type() -> None:
    assert validate({"query": "abc"}, SUB_QUERY) == ["$: missing required property 'order'"]
    assert validate([1], SUB_QUERY) == ["$: expected object, got array"]


def test_booleans_are_not_integers_but_whole_floats_are() -> None:
    assert validate(True, {"type": "integer"}) == ["$: expected integer, got boolean"]
    assert validate(2.0, {"type": "integer"}) == []
    assert validate(2.5, {"type": "integer"}) == ["$: expected integer, got number"]


def test_enum_const_anyof_and_refs() -> None:
    schema = {
        "$defs": {"Kind": {"enum": ["memo", "report"]}},
        "type": "object",
        "properties": {"kind": {"$ref": "#/$defs/Kind"}, "score": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
    }
    assert validate({"kind": "memo", "score": None}, schema) == []
    assert validate({"kind": "email"}, schema) == ["$.kind: 'email' is not one of ['memo', 'report']"]
    assert validate({"score": "high"}, schema) == [
        "$.score: matches none of anyOf ($.score: expected number, got string)"
    ]
    assert validate(3, {"const": 4}) == ["$: expected 4, got 3"]


def test_array_bounds_and_string_pattern() -> None:
    schema = {"type": "array", "items": {"type": "string", "pattern": "^q"}, "minItems": 1, "maxItems": 2}
    assert validate([], schema) == ["$: 0 item(s), fewer than minItems 1"]
    assert validate(["qa", "qb", "qc"], schema) == ["$: 3 item(s), more than maxItems 2"]
    assert validate(["xa"], schema) == ["$[0]: does not match pattern '^q'"]


def test_external_ref_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="only local"):
        validate(1, {"$ref": "http://example.org/schema.json"})


def test_minimal_instance_keeps_only_what_is_required() -> None:
    assert minimal_instance(SUB_QUERY) == {"order": 1, "query": "xxx"}


def test_minimal_instance_uses_const_enum_default_and_bounds() -> None:
    assert minimal_instance({"const": "v2"}) == "v2"
    assert minimal_instance({"enum": ["b", "a"]}) == "b"
    assert minimal_instance({"type": "integer", "default": 3}) == 3
    assert minimal_instance({"type": "integer", "exclusiveMinimum": 0}) == 1
    assert minimal_instance({"type": "integer", "minimum": 0.5}) == 1
    assert minimal_instance({"type": "number", "maximum": -2}) == -2
    assert minimal_instance({"type": ["null", "string"]}) is None
    assert minimal_instance({"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 2,
                             "uniqueItems": True}) == ["a", "b"]


def test_minimal_instance_refuses_an_unsatisfiable_pattern() -> None:
    with pytest.raises(ConfigError, match="pattern"):
        minimal_instance({"type": "string", "pattern": "^[0-9]+$"})


class SubQuery(BaseModel):
    order: int = Field(ge=1)
    query: str
    depends_on: list[int] = []
    target_doc_type: Literal["memo", "report"] | None = None


class Plan(BaseModel):
    sub_queries: list[SubQuery] = Field(min_length=1, max_length=4)
    synthesis_hint: str


def test_pydantic_schema_minimal_instance_validates_as_the_model() -> None:
    resolved = resolve_schema(Plan)
    data = minimal_instance(resolved.schema)
    assert data == {"sub_queries": [{"order": 1, "query": ""}], "synthesis_hint": ""}
    value, problems = resolved.validate(data)
    assert problems == [] and isinstance(value, Plan)
    assert resolved.name == "Plan"


def test_pydantic_problems_carry_paths() -> None:
    _, problems = resolve_schema(Plan).validate({"sub_queries": [{"order": 0, "query": "q"}]})
    assert problems == [
        "$.sub_queries[0].order: Input should be greater than or equal to 1",
        "$.synthesis_hint: Field required",
    ]


def test_resolve_schema_rejects_other_types() -> None:
    with pytest.raises(ConfigError, match="pydantic model class"):
        resolve_schema("not a schema")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Sure! Here it is: {"a": "b"} Hope that helps.', {"a": "b"}),
        ("[1, 2, 3]", [1, 2, 3]),
    ],
)
def test_parse_json_reply_tolerates_fences_and_prose(text: str, expected: object) -> None:
    assert parse_json_reply(text) == (expected, None)


def test_parse_json_reply_reports_what_is_wrong() -> None:
    assert parse_json_reply("no json here") == (None, "the reply contains no JSON object or array")
    value, error = parse_json_reply('{"a": 1, "b": ')
    assert value is None and error is not None and error.startswith("invalid JSON: Expecting value")
    assert parse_json_reply("") == (None, "the reply contains no JSON object or array")


leaf = st.sampled_from([
    {"type": "string"}, {"type": "string", "minLength": 2}, {"type": "integer", "minimum": 3},
    {"type": "number", "exclusiveMaximum": -1}, {"type": "boolean"}, {"enum": ["x", "y"]}, {"type": "null"},
])
schemas = st.recursive(
    leaf,
    lambda children: st.one_of(
        st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3).flatmap(
            lambda props: st.just({"type": "object", "properties": props, "required": sorted(props)})
        ),
        st.tuples(children, st.integers(0, 3)).map(lambda t: {"type": "array", "items": t[0], "minItems": t[1]}),
        st.lists(children, min_size=1, max_size=3).map(lambda opts: {"anyOf": opts}),
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(schemas)
def test_minimal_instance_is_always_valid(schema: dict) -> None:
    assert validate(minimal_instance(schema), schema) == []
