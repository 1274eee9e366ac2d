"""Hypothesis strategies for fuzzing the loaders: real records bent out of shape, and raw junk.

The structured strategies start from records of the bundled fixtures and damage them the way files
really break (a field deleted, retyped, nested, a number too large to convert, NaN, an extra key),
then serialise them and optionally damage the bytes (truncated, re-encoded, a bad byte spliced in).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from hoprag.errors import HopragError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

#: Deterministic and fast by default: the same examples on every machine, nothing stored between
#: runs. ``HOPRAG_FUZZ_EXAMPLES=2000`` hunts deeper, with fresh random examples each run.
_HUNT = int(os.environ.get("HOPRAG_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_HUNT or 40, deadline=None, derandomize=not _HUNT, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

_HUGE = st.sampled_from([10**30, -(10**30), 2**63, 2**64 + 1, 10**400])
LEAVES = (
    st.none() | st.booleans() | st.integers(-3, 3) | _HUGE
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12) | st.sampled_from(["", " ", "\x00", "\ud7ff", "é", "1", "-1", "true", "null"])
)


#: Lines no record strategy produces reliably in few examples; also run one by one as regressions.
JSON_JUNK = ["", "[1, 2]", "{", "nul", '"x"', "{}", '{"a": ' + "9" * 5000 + "}", "[" * 5000 + "]" * 5000,
             '{"a": NaN, "b": -Infinity}', '{"a": 1e999}', '{"a": "\\ud800"}', '{"a": 1}{"b": 2}']


def json_values(keys: list[str] | None = None) -> st.SearchStrategy[Any]:
    """Arbitrary JSON-able values whose object keys are often the format's own field names."""
    key = st.text(max_size=6) | st.sampled_from(keys) if keys else st.text(max_size=6)
    return st.recursive(
        LEAVES,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(key, inner, max_size=4),
        max_leaves=10,
    )


def _slots(obj: Any) -> list[tuple[Any, Any]]:
    """Every ``(container, key)`` inside ``obj``; ``(container, None)`` stands for "add an element"."""
    out: list[tuple[Any, Any]] = []
    stack = [obj]
    while stack and len(out) < 400:  # iterative: a record may already be thousands of levels deep
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        if isinstance(node, (dict, list)):
            out.append((node, None))
        for k, v in items:
            out.append((node, k))
            stack.append(v)
    return out


def _deep(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


@st.composite
def mutated(draw: st.DrawFn, records: list[Any], keys: list[str]) -> Any:
    """One of ``records``, damaged in one to three places."""
    rec = copy.deepcopy(draw(st.sampled_from(records)))
    values = json_values(keys)
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(rec)
        if not slots:
            return draw(values)
        container, key = draw(st.sampled_from(slots))
        op = draw(st.sampled_from(["delete", "replace", "replace", "deep", "add"]))
        if key is None or op == "add":
            if isinstance(container, dict):
                container[draw(st.sampled_from(keys) | st.text(max_size=5))] = draw(values)
            else:
                container.append(draw(values))
        elif op == "delete":
            del container[key]
        elif op == "deep":
            container[key] = _deep(draw(st.sampled_from([3, 50, 400, 990, 3000])), container[key])
        else:
            container[key] = draw(values)
    return rec


def dumps(obj: Any) -> str:
    """JSON as a careless writer produces it: NaN/Infinity literals kept, huge ints spelt out."""
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=True)
    except (ValueError, RecursionError):  # an int past the str-conversion limit, or 3000 levels deep
        return '{"a": ' + "[" * 3000 + "]" * 3000 + "}"


@st.composite
def damaged_bytes(draw: st.DrawFn, text: str) -> bytes:
    """``text`` as UTF-8, sometimes truncated, re-encoded or with a bad byte spliced in."""
    data = text.encode("utf-8", "surrogatepass")
    how = draw(st.sampled_from(["clean", "clean", "clean", "truncate", "latin1", "utf16", "splice", "bom"]))
    if how == "truncate" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif how == "latin1":
        data = text.encode("latin-1", "replace")
    elif how == "utf16":
        data = text.encode("utf-16")
    elif how == "splice":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xe9", b"\x00", b"\xc3", b"\r", b"\n"])) + data[at:]
    elif how == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


def jsonl_bytes(records: list[Any], keys: list[str]) -> st.SearchStrategy[bytes]:
    """A JSONL file of one to three damaged records, sometimes with a junk line, then damaged bytes."""
    line = mutated(records, keys).map(dumps) | st.sampled_from(JSON_JUNK)
    body = st.lists(line, min_size=1, max_size=3).map(lambda ls: "\n".join(ls) + "\n")
    return body.flatmap(damaged_bytes)


def json_bytes(records: list[Any], keys: list[str], *, whole: Any = None) -> st.SearchStrategy[bytes]:
    """A JSON file: an array of damaged records, one damaged record, or ``whole`` damaged."""
    shapes = json_values(keys)
    if records:
        shapes = st.lists(mutated(records, keys), min_size=1, max_size=3) | mutated(records, keys) | shapes
    if whole is not None:
        shapes = mutated([whole], keys) | shapes
    return shapes.map(dumps).flatmap(damaged_bytes)


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def keys_of(records: list[Any]) -> list[str]:
    """Every dict key anywhere in ``records``: the names a damaged record most likely misuses."""
    found: set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            found.update(str(k) for k in obj)
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    walk(records)
    return sorted(found)


def ends_cleanly(load: Callable[[], Any], *names: str) -> Any:
    """Run ``load``: a result, or a :class:`HopragError` whose message names one of ``names``.

    Any other exception propagates, so hypothesis reports it with the smallest input that raised it.
    """
    try:
        return load()
    except HopragError as exc:
        message = str(exc)
        assert message.strip(), "an error without a message"
        assert "Traceback" not in message
        if names:
            assert any(n in message for n in names), f"the error does not name the file: {message}"
        return exc
