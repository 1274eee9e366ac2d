"""dumps_indented writes exactly what json.dumps(indent=..., ensure_ascii=False, allow_nan=False) writes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.json_text import dumps_indented

pytestmark = pytest.mark.unit

LEAVES = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
          | st.text() | st.sampled_from(["line\nbreak", "é ü", "\ud83d\ude00", '"quoted"', "\\", "\x00"]))
ODD_KEYS = st.text(max_size=3) | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.booleans() | st.none()
VALUES = st.recursive(
    LEAVES,
    lambda inner: (st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
                   | st.dictionaries(ODD_KEYS, inner, max_size=3) | st.tuples(inner, inner)),
    max_leaves=25,
)


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(VALUES, st.integers(0, 4))
def test_the_same_text_as_the_standard_encoder(value, indent) -> None:
    assert dumps_indented(value, indent) == json.dumps(value, indent=indent, ensure_ascii=False)


def test_an_evaluation_report_shape() -> None:
    rows = [{"case_id": f"c{i}", "chain_coverage@2": i / 3, "failure": None, "passed": bool(i % 2), "n": i}
            for i in range(5)]
    payload = {"aggregate": {"cases": 5, "x": None}, "cases": rows, "groups": {"t": {"a": {}}},
               "exclusions": [], "config": {"ks": [2, 5], "judge": {"model_id": "m"}, "hash": "h"}}
    assert dumps_indented(payload) == json.dumps(payload, indent=2, ensure_ascii=False)


def test_nan_and_infinity_are_never_written() -> None:
    for bad in (float("nan"), float("inf"), -float("inf")):
        for value in ({"a": [1, bad]}, {"a": {"b": bad}}, [bad], bad):
            with pytest.raises(ValueError):
                dumps_indented(value)
            with pytest.raises(ValueError):
                json.dumps(value, indent=2, allow_nan=False)


def test_values_the_encoder_refuses_are_refused_the_same_way() -> None:
    with pytest.raises(TypeError):
        dumps_indented({"a": [1, object()]})
    with pytest.raises(TypeError):
        json.dumps({"a": [1, object()]}, indent=2)


def test_printed_json_has_null_for_values_not_measured_and_text_for_other_types():
    import datetime
    import json as _json
    import math

    from hoprag.json_text import dumps_printed

    text = dumps_printed({"nDCG@10": math.nan, "rise": [1.5, math.inf], "at": datetime.date(2026, 1, 2)})
    assert "NaN" not in text and "Infinity" not in text
    assert _json.loads(text) == {"nDCG@10": None, "rise": [1.5, None], "at": "2026-01-02"}
