"""The fast path of the one traces reader (:mod:`hoprag.io.traces`): a well-formed line straight into
its records, in one strict pydantic-core call."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from pydantic_core import SchemaValidator
from pydantic_core import core_schema as cs

from hoprag.finite_numbers import INT_MAX, INT_MIN
from hoprag.io.kinds import TRACES_HEADER_KEY
from hoprag.records import Answer, Citation, Claim, Evidence, Hit, HopStep, Trace, Usage

__all__ = ["trace_from_json_line"]

# the fast path: a well-formed line straight into its records
#
# Trace.from_dict accepts any JSON a foreign pipeline writes (numbers for strings, null for empty
# values, a missing chunk_id or issued_query filled from another field) and converts field by field,
# which costs more than the parsing at 10,000 traces. Almost every line is already well-formed: each
# field absent or of exactly the type Trace.to_dict writes. One strict pydantic-core validator builds
# the same frozen records from such a line (the same defaults, unknown keys ignored) and refuses every
# other line: a number where a string belongs, a null, an empty chunk_id, issued_query or case_id,
# malformed JSON, a lone surrogate escape, a number too long to convert, a number the number rule
# refuses (not finite, overflowing, a whole number past 64 bits; in a typed or a free-form field).

_STR = cs.str_schema(strict=True)
_NONEMPTY = cs.str_schema(strict=True, min_length=1)  # from_dict fills an empty one from another field
_INT = cs.int_schema(strict=True, ge=INT_MIN, le=INT_MAX)
_FLOAT = cs.float_schema(strict=True, allow_inf_nan=False)  # a JSON integer becomes its float, as float() makes it
_BOOL = cs.bool_schema(strict=True)
# a free-form field (filters, bridge, plan, error) as any JSON value whose numbers keep the rule, checked
# in pydantic-core itself (a Python check per field cost a quarter of the read)
_BIG = int(sys.float_info.max)
_JSON = cs.definition_reference_schema("json")
_JSON_VALUE = cs.union_schema([
    cs.str_schema(strict=True), cs.bool_schema(strict=True), cs.none_schema(),
    cs.int_schema(strict=True, ge=-_BIG, le=_BIG), cs.float_schema(strict=True, allow_inf_nan=False),
    cs.list_schema(_JSON, strict=True), cs.dict_schema(_STR, _JSON, strict=True),
], ref="json")
_ANY_DICT = cs.dict_schema(_STR, _JSON, strict=True)
_STRS = cs.tuple_schema([_STR], variadic_item_index=0, strict=True)


def _opt(schema: cs.CoreSchema, default: Any = None, factory: Callable[[], Any] | None = None) -> cs.CoreSchema:
    if factory is not None:
        return cs.with_default_schema(schema, default_factory=factory)
    return cs.with_default_schema(schema, default=default)


def _record(cls: type, **fields: cs.CoreSchema) -> cs.CoreSchema:
    args = cs.dataclass_args_schema(
        cls.__name__, [cs.dataclass_field(name, schema, kw_only=False) for name, schema in fields.items()],
        extra_behavior="ignore")
    return cs.dataclass_schema(cls, args, list(fields), frozen=True, post_init=False, strict=True)


def _many(schema: cs.CoreSchema) -> cs.CoreSchema:
    return _opt(cs.tuple_schema([schema], variadic_item_index=0, strict=True), ())


_HIT = _record(
    Hit, chunk_id=_NONEMPTY, doc_id=_STR, score=_opt(_FLOAT, 0.0), rank=_opt(_INT, 0), retriever=_opt(_STR, ""),
    start=_opt(cs.nullable_schema(_INT)), end=_opt(cs.nullable_schema(_INT)), title=_opt(_STR, ""),
)
_EVIDENCE = _record(
    Evidence, hit=_HIT, text=_opt(_STR, ""), title=_opt(_STR, ""), hop=_opt(_INT, 1), step_id=_opt(_STR, ""),
    sub_query=_opt(_STR, ""),
)
_STEP = _record(
    HopStep, step_id=_STR, hop=_opt(_INT, 1), sub_query=_opt(_STR, ""), issued_query=_NONEMPTY, hits=_many(_HIT),
    selected=_opt(_STRS, ()), depends_on=_opt(_STRS, ()), filters=_opt(_ANY_DICT, factory=dict),
    bridge=_opt(_ANY_DICT, factory=dict), error=_opt(_JSON), timed_out=_opt(_BOOL, False),
    latency_ms=_opt(_FLOAT, 0.0), cumulative_ms=_opt(_FLOAT, 0.0), duplicates=_opt(_STRS, ()),
)
_CITATION = _record(Citation, chunk_id=_STR, doc_id=_STR, hop=_opt(_INT, 1))
_CLAIM = _record(Claim, text=_opt(_STR, ""), citations=_many(_CITATION))
_ANSWER = _record(
    Answer, text=_opt(_STR, ""), claims=_many(_CLAIM), abstained=_opt(_BOOL, False), confidence=_opt(_FLOAT, 0.0),
    partial=_opt(_BOOL, False), rejected_citations=_opt(_STRS, ()),
)
_USAGE = _record(Usage, prompt_tokens=_opt(_INT, 0), completion_tokens=_opt(_INT, 0), cost=_opt(_FLOAT, 0.0))
_SHIFTS = cs.tuple_schema([cs.tuple_schema([_INT, _INT], strict=True)], variadic_item_index=0, strict=True)
_TRACE = _record(
    Trace, run_id=_opt(_STR, ""), case_id=_STR, question=_opt(_STR, ""), steps=_many(_STEP),
    evidence=_many(_EVIDENCE), answer=_opt(_ANSWER, factory=lambda: Answer(text="")), stop_reason=_opt(_STR, ""),
    usage=_opt(_USAGE, factory=Usage), config_hash=_opt(_STR, ""), engine=_opt(_STR, ""),
    latency_ms=_opt(_FLOAT, 0.0), error=_opt(_JSON), plan=_opt(_ANY_DICT, factory=dict),
    warnings=_opt(_STRS, ()), fallbacks=_opt(cs.dict_schema(_STR, _INT, strict=True), factory=dict),
    timings=_opt(cs.dict_schema(_STR, _FLOAT, strict=True), factory=dict), redacted=_opt(_BOOL, False),
    redactions=_opt(cs.dict_schema(_STR, _INT, strict=True), factory=dict),
    redaction_shifts=_opt(cs.dict_schema(_STR, _SHIFTS, strict=True), factory=dict),
)
_VALIDATE = SchemaValidator(cs.definitions_schema(_TRACE, [_JSON_VALUE])).validate_json
_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_HEADER = f'"{TRACES_HEADER_KEY}"'  # a run's header record is never a trace


def trace_from_json_line(line: str) -> Trace | None:
    """The :class:`Trace` a well-formed JSON line holds (equal to ``Trace.from_dict`` of the parsed
    line), or ``None`` when the line must be read and checked the slow way (see above)."""
    if _HEADER in line or ("\\u" in line and _LONE_SURROGATE.search(line)):
        return None
    try:
        trace = _VALIDATE(line)
    except (ValueError, RecursionError):  # pydantic_core.ValidationError is a ValueError
        return None
    return trace if trace.case_id.strip() else None
