"""JSON output support: a JSON Schema subset validator, a minimal-instance builder, reply parsing.

The subset covers what structured-output servers accept and what pydantic emits: ``type`` (one or a
list), ``enum``, ``const``, ``properties``, ``required``, ``additionalProperties``, ``items``,
``minItems``/``maxItems``, ``uniqueItems``, ``minLength``/``maxLength``, ``pattern``,
``minimum``/``maximum`` and their exclusive forms, ``anyOf``/``oneOf``/``allOf`` and local ``$ref``
(``#/$defs/...``, ``#/definitions/...``). Unknown keywords are ignored, as JSON Schema says.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from hoprag.errors import ConfigError

SchemaLike = Mapping[str, Any] | type[BaseModel]

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


@dataclass(frozen=True)
class ResolvedSchema:
    """A schema ready to send (``schema``) and to check replies against (``validate``)."""

    schema: dict[str, Any]
    model: type[BaseModel] | None = None

    @property
    def name(self) -> str:
        """A name for the schema: its ``title``, else ``response`` (used by response_format)."""
        title = str(self.schema.get("title") or "response")
        return re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64]

    def validate(self, data: Any) -> tuple[Any, list[str]]:
        """Return (value, problems): the pydantic instance (or the data) and what is wrong, if any."""
        if self.model is not None:
            try:
                return self.model.model_validate(data), []
            except ValidationError as exc:
                return data, [_pydantic_problem(err) for err in exc.errors()]
        return data, validate(data, self.schema)


def resolve_schema(json_schema: SchemaLike) -> ResolvedSchema:
    """Accept a JSON Schema dict or a pydantic model class."""
    if isinstance(json_schema, type) and issubclass(json_schema, BaseModel):
        return ResolvedSchema(json_schema.model_json_schema(), json_schema)
    if isinstance(json_schema, Mapping):
        return ResolvedSchema(dict(json_schema))
    raise ConfigError(
        f"json_schema must be a JSON Schema dict or a pydantic model class, got {type(json_schema).__name__}"
    )


def _pydantic_problem(err: Mapping[str, Any]) -> str:
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.get("loc", ()))
    return f"{path}: {err.get('msg', 'invalid')}"


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def _deref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    seen = 0
    while "$ref" in schema:
        ref = str(schema["$ref"])
        if not ref.startswith("#/"):
            raise ConfigError(f"only local $ref ('#/...') is supported in JSON schemas, got {ref!r}")
        node: Any = root
        for part in ref[2:].split("/"):
            if not isinstance(node, Mapping) or part not in node:
                raise ConfigError(f"JSON schema $ref {ref!r} points at nothing")
            node = node[part]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**node, **extra}
        seen += 1
        if seen > 50:
            raise ConfigError(f"JSON schema $ref {ref!r} is circular")
    return schema


def validate(data: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None, path: str = "$") -> list[str]:
    """List every way ``data`` breaks ``schema`` (empty: valid), each prefixed with its JSON path."""
    root = schema if root is None else root
    schema = _deref(schema, root)
    problems: list[str] = []
    if "const" in schema and data != schema["const"]:
        return [f"{path}: expected {schema['const']!r}, got {data!r}"]
    if "enum" in schema and data not in schema["enum"]:
        return [f"{path}: {data!r} is not one of {list(schema['enum'])!r}"]
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(data, n) for n in names):
            return [f"{path}: expected {' or '.join(names)}, got {_type_name(data)}"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [validate(data, sub, root, path) for sub in schema[key]]
            valid = sum(1 for o in options if not o)
            if valid == 0:
                best = min(options, key=len)
                problems.append(f"{path}: matches none of {key} ({'; '.join(best)})")
            elif key == "oneOf" and valid > 1:
                problems.append(f"{path}: matches {valid} options of oneOf, expected exactly one")
    for sub in schema.get("allOf", ()):
        problems.extend(validate(data, sub, root, path))
    if isinstance(data, dict):
        problems.extend(_validate_object(data, schema, root, path))
    elif isinstance(data, list):
        problems.extend(_validate_array(data, schema, root, path))
    elif isinstance(data, str):
        if len(data) < schema.get("minLength", 0):
            problems.append(f"{path}: shorter than minLength {schema['minLength']}")
        if "maxLength" in schema and len(data) > schema["maxLength"]:
            problems.append(f"{path}: longer than maxLength {schema['maxLength']}")
        if "pattern" in schema and re.search(schema["pattern"], data) is None:
            problems.append(f"{path}: does not match pattern {schema['pattern']!r}")
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        problems.extend(_validate_number(data, schema, path))
    return problems


def _validate_object(data: dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any], path: str) -> list[str]:
    problems = [f"{path}: missing required property {name!r}" for name in schema.get("required", ()) if name not in data]
    props: Mapping[str, Any] = schema.get("properties", {})
    extra_rule = schema.get("additionalProperties", True)
    for name, value in data.items():
        if name in props:
            problems.extend(validate(value, props[name], root, f"{path}.{name}"))
        elif extra_rule is False:
            problems.append(f"{path}: unexpected property {name!r}")
        elif isinstance(extra_rule, Mapping):
            problems.extend(validate(value, extra_rule, root, f"{path}.{name}"))
    return problems


def _validate_array(data: list[Any], schema: Mapping[str, Any], root: Mapping[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    if len(data) < schema.get("minItems", 0):
        problems.append(f"{path}: {len(data)} item(s), fewer than minItems {schema['minItems']}")
    if "maxItems" in schema and len(data) > schema["maxItems"]:
        problems.append(f"{path}: {len(data)} item(s), more than maxItems {schema['maxItems']}")
    if schema.get("uniqueItems"):
        keys = [json.dumps(item, sort_keys=True) for item in data]
        if len(set(keys)) != len(keys):
            problems.append(f"{path}: items are not unique")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(data):
            problems.extend(validate(item, items, root, f"{path}[{i}]"))
    return problems


def _validate_number(data: float, schema: Mapping[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    if "minimum" in schema and data < schema["minimum"]:
        problems.append(f"{path}: {data} is below minimum {schema['minimum']}")
    if "maximum" in schema and data > schema["maximum"]:
        problems.append(f"{path}: {data} is above maximum {schema['maximum']}")
    if "exclusiveMinimum" in schema and data <= schema["exclusiveMinimum"]:
        problems.append(f"{path}: {data} is not above exclusiveMinimum {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and data >= schema["exclusiveMaximum"]:
        problems.append(f"{path}: {data} is not below exclusiveMaximum {schema['exclusiveMaximum']}")
    return problems


def minimal_instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None, depth: int = 0) -> Any:
    """Build the smallest value valid against ``schema``, deterministically.

    Takes ``const``, the first ``enum`` value, a valid ``default`` or first ``examples`` entry when
    the schema gives one; otherwise only required properties, ``minItems`` items, ``minLength``
    characters and the smallest allowed number. Raises ConfigError when no value can be built
    (an unsatisfiable ``pattern``, a circular required property).
    """
    root = schema if root is None else root
    if depth > 32:
        raise ConfigError("cannot build a minimal JSON instance: the schema's required properties recurse")
    schema = _deref(schema, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for candidate in ([schema["default"]] if "default" in schema else []) + list(schema.get("examples", [])[:1]):
        if not validate(candidate, schema, root):
            return candidate
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, ()):
            try:
                value = minimal_instance(sub, root, depth + 1)
            except ConfigError:
                continue
            if not validate(value, schema, root):
                return value
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k not in ("allOf", "anyOf", "oneOf")}
    for sub in schema.get("allOf", ()):
        sub = _deref(sub, root)
        for k, v in sub.items():
            if k == "required":
                merged["required"] = list(merged.get("required", [])) + list(v)
            elif k == "properties":
                merged["properties"] = {**merged.get("properties", {}), **v}
            else:
                merged.setdefault(k, v)
    value = _minimal_of_type(merged, root, depth)
    problems = validate(value, schema, root)
    if problems:
        raise ConfigError(f"cannot build a minimal JSON instance for this schema: {'; '.join(problems)}")
    return value


def _minimal_of_type(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    types = schema.get("type")
    name = (types if isinstance(types, str) else (list(types) or ["null"])[0]) if types else _guess_type(schema)
    if name == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        return {
            key: minimal_instance(props.get(key, {}), root, depth + 1)
            for key in schema.get("required", ())
        }
    if name == "array":
        items = schema.get("items", {})
        count = int(schema.get("minItems", 0))
        if count and schema.get("uniqueItems") and isinstance(items, Mapping):
            choices = list(_deref(items, root).get("enum", []))
            if len(choices) >= count:
                return choices[:count]
        return [minimal_instance(items, root, depth + 1) for _ in range(count)]
    if name == "string":
        return "x" * int(schema.get("minLength", 0))
    if name in ("integer", "number"):
        return _minimal_number(schema, integer=name == "integer")
    if name == "boolean":
        return False
    return None


def _guess_type(schema: Mapping[str, Any]) -> str:
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "null"


def _minimal_number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    step = 1 if integer else 1e-6
    low = schema.get("minimum")
    if "exclusiveMinimum" in schema:
        exclusive = schema["exclusiveMinimum"] + step
        low = exclusive if low is None else max(low, exclusive)
    high = schema.get("maximum")
    if "exclusiveMaximum" in schema:
        exclusive = schema["exclusiveMaximum"] - step
        high = exclusive if high is None else min(high, exclusive)
    value: float = 0
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high
    if integer:
        # A fractional bound: round inward so the integer stays inside it.
        return int(math.ceil(value) if low is not None and value == low else math.floor(value))
    return value


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_json_reply(text: str) -> tuple[Any, str | None]:
    """Read the JSON value in a model's reply: (value, None), or (None, what is wrong).

    Tolerates a Markdown code fence and prose around one JSON value, which small models add.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    first_error: str | None = None
    for candidate in candidates:
        stripped = candidate.strip()
        starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
        if not starts:
            first_error = first_error or "the reply contains no JSON object or array"
            continue
        try:
            value, _ = decoder.raw_decode(stripped, min(starts))
            return value, None
        except json.JSONDecodeError as exc:
            first_error = first_error or f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    return None, first_error or "the reply is empty"
