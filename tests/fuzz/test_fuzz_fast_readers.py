"""The one-call line readers agree with the checked readers on every line they accept.

``trace_from_json_line`` and ``case_from_json_line`` read a well-formed line in one strict call and
give up (``None``) on anything else, which the checked path (``json`` decode, then ``from_dict`` /
pydantic on the dict) then reads and names the problem of. So the invariant is: whenever the fast
reader returns a record, the checked path returns an equal one. Lines come from the bundled
fixtures reshaped the way other writers shape them (fields dropped, emptied, retyped, numbers for
strings, integers for floats, huge numbers, NaN, surrogate escapes) and from the loaders' junk.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fuzz_strategies import DATA, JSON_JUNK, ROOT, dumps, keys_of, mutated, read_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoprag.datasets.schema import case_from_dict, case_from_json_line, load_cases
from hoprag.errors import InputError
from hoprag.io.traces import is_header, normalize_case_id, read_traces, trace_from_json_line
from hoprag.jsonl import iter_jsonl_dicts
from hoprag.records import Trace

pytestmark = pytest.mark.unit

MANY = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TRACES = read_jsonl(DATA / "eval_traces.jsonl") + read_jsonl(DATA / "eval4_foreign_traces.jsonl")
CASE_ROWS = read_jsonl(ROOT / "data" / "enterprise" / "cases.jsonl")
EDGE_LINES = JSON_JUNK + [
    '{"case_id": "a", "case_id": "b", "question": "q"}',  # a repeated key: the last one wins in both
    '{"case_id": "a", "steps": [{"step_id": "s", "issued_query": "", "sub_query": "x"}]}',
    '{"case_id": "a", "evidence": [{"hit": {"chunk_id": "", "doc_id": "d"}}]}',
    '{"case_id": " ", "question": "q"}', '{"case_id": 7, "question": "q"}', '{"case_id": 7.0, "answer": {}}',
    '{"case_id": "a", "latency_ms": 5, "timings": {"x": 1}, "usage": {"cost": 2}}',
    '{"case_id": "a", "redaction_shifts": {"c": [[1, 2, 3]]}}', '{"case_id": "a", "warnings": ["\\ud83d\\ude00"]}',
    '{"case_id": "a", "question": "\\ud83dx"}', '{"hoprag_traces": 1, "case_id": "a", "run_id": "r"}',
    '{"case_id": "a", "answer": null}', '{"case_id": "a", "steps": [{"step_id": "s", "issued_query": "q", "hop": 1.0}]}',
]


def _swap(value: Any, draw: st.DrawFn) -> Any:
    """Another value of a kind another writer might put in the same place."""
    same = {
        str: st.sampled_from(["", " ", "x", "\ud83d\ude00", "é"]) | st.text(max_size=4),
        bool: st.booleans() | st.integers(0, 1),
        int: st.integers(-3, 5) | st.sampled_from([10**30, 2**63]) | st.floats(0, 3) | st.booleans(),
        float: st.floats(allow_nan=True, allow_infinity=True) | st.integers(-3, 3) | st.sampled_from([10**30]),
        type(None): st.none() | st.text(max_size=3) | st.integers(0, 2),
    }.get(type(value))
    if same is None:
        return copy.deepcopy(value) if draw(st.booleans()) else None
    return draw(same | st.none() | st.integers(0, 3) | st.text(max_size=2))


@st.composite
def reshaped(draw: st.DrawFn, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A fixture record with a few fields dropped or given other values of a plausible kind."""
    rec = copy.deepcopy(draw(st.sampled_from(records)))
    for _ in range(draw(st.integers(0, 4))):
        slots: list[tuple[Any, Any]] = []
        stack: list[Any] = [rec]
        while stack:
            node = stack.pop()
            pairs = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for key, value in pairs:
                slots.append((node, key))
                stack.append(value)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        if isinstance(container, dict) and draw(st.booleans()):
            del container[key]
        else:
            container[key] = _swap(container[key], draw)
    return rec


def _lines(records: list[dict[str, Any]]) -> st.SearchStrategy[str]:
    return (reshaped(records).map(dumps) | mutated(records, keys_of(records)).map(dumps)
            | st.sampled_from(EDGE_LINES))


def _checked(line: str) -> dict[str, Any] | InputError | None:
    """The checked decode of one line: its object, the error naming it, or None for a blank line."""
    try:
        return next((obj for _, obj in iter_jsonl_dicts([line], source="f")), None)
    except InputError as exc:
        return exc


@MANY
@given(_lines(TRACES))
def test_a_trace_line_read_in_one_call_equals_the_checked_read(line: str) -> None:
    fast = trace_from_json_line(line)
    if fast is None:
        return
    obj = _checked(line)
    assert isinstance(obj, dict) and not is_header(obj)
    obj = normalize_case_id(obj)
    assert str(obj.get("case_id") or "").strip()
    slow = Trace.from_dict(obj)
    assert repr(fast) == repr(slow)  # repr: NaN equals itself there
    assert json.dumps(fast.to_dict()) == json.dumps(slow.to_dict())


@MANY
@given(_lines(CASE_ROWS))
def test_a_case_line_read_in_one_call_equals_the_checked_read(line: str) -> None:
    fast = case_from_json_line(line)
    if fast is None:
        return
    obj = _checked(line)
    assert isinstance(obj, dict)
    slow = case_from_dict(obj)
    assert repr(fast) == repr(slow)
    assert fast.to_json() == slow.to_json()


@pytest.mark.parametrize("line", EDGE_LINES)
def test_edge_lines_agree(line: str) -> None:
    test_a_trace_line_read_in_one_call_equals_the_checked_read.hypothesis.inner_test(line)  # type: ignore[attr-defined]
    test_a_case_line_read_in_one_call_equals_the_checked_read.hypothesis.inner_test(line)  # type: ignore[attr-defined]


def test_the_fixtures_take_the_one_call_path_and_files_read_the_same(tmp_path) -> None:
    for row in TRACES:
        line = json.dumps(row)
        if trace_from_json_line(line) is None:  # a foreign pipeline's shapes go the checked way
            continue
        assert trace_from_json_line(line) == Trace.from_dict(normalize_case_id(row))
    assert all(case_from_json_line(json.dumps(row)) is not None for row in CASE_ROWS)
    # the fixtures as hoprag writes them (Trace.to_dict): every line is read in one call
    ours = [Trace.from_dict(normalize_case_id(r)).to_dict() for r in read_jsonl(DATA / "eval_traces.jsonl")]
    assert all(trace_from_json_line(json.dumps(r)) is not None for r in ours)
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ours), encoding="utf-8")
    assert read_traces(path) == [Trace.from_dict(r) for r in ours]
    assert load_cases(ROOT / "data" / "enterprise" / "cases.jsonl") == [case_from_dict(r) for r in CASE_ROWS]
