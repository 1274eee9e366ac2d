"""Graph validation, path precision and hop-k recall (graph layers) on real enterprise labels."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.datasets.schema import Case, load_cases
from hoprag.errors import InputError
from hoprag.evaluation.graph import check_cases, find_cycle
from hoprag.evaluation.hops import chain_coverage
from hoprag.evaluation.paths import layer_recall, path_precision
from hoprag.records import Evidence, Hit, HopStep, Trace

pytestmark = pytest.mark.unit

CASES = {c.case_id: c for c in load_cases(Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl")}
ENT003 = CASES["ent-003"]  # contract-31 / ticket-2290 (layer 1) -> policy-11 (layer 2)


def ev(doc: str, start: int | None = None, end: int | None = None, rank: int = 1) -> Evidence:
    hit = Hit(chunk_id=f"{doc}@{start}", doc_id=doc, score=1.0, rank=rank, retriever="t", start=start, end=end)
    return Evidence(hit=hit, text="", title="", hop=1, step_id="s1", sub_query="")


def trace(evidence=(), steps=()) -> Trace:
    return Trace(run_id="r", case_id="c", question="q", steps=tuple(steps), evidence=tuple(evidence))


def test_path_precision_by_hand() -> None:
    # contract-31 [388,436) overlaps 400-500: relevant; policy-11 0-100 misses [503,544): irrelevant;
    # policy-11 500-600 relevant; faq-10 is a distractor.
    items = [ev("contract-31", 400, 500), ev("policy-11", 0, 100), ev("policy-11", 500, 600), ev("faq-10", 0, 50)]
    assert path_precision(ENT003, trace(items), 4) == 2 / 4
    assert path_precision(ENT003, trace(items), 1) == 1.0
    assert path_precision(ENT003, trace(items), 2) == 0.5
    assert path_precision(ENT003, trace([]), 5) == 0.0
    assert path_precision(ENT003, trace([ev("ticket-2290")]), 5) == 1.0  # no offsets: document level


def test_hop2_recall_is_a_graph_layer_not_call_order() -> None:
    # one single call (hop 1) that finds the layer-2 policy fact: layer-2 recall is 1
    step = HopStep(step_id="s1", hop=1, sub_query="q", issued_query="q",
                   hits=(Hit("p", "policy-11", 1.0, 1, "t", 500, 600), Hit("x", "faq-10", 0.5, 2, "t", 0, 10)))
    t = trace(steps=[step])
    assert layer_recall(ENT003, t, 1, layer=2) == 1.0
    assert layer_recall(ENT003, t, 5, layer=3) is None  # ent-003 has no layer 3
    late = HopStep(step_id="s1", hop=1, sub_query="q", issued_query="q",
                   hits=(Hit("x", "faq-10", 0.5, 1, "t", 0, 10), Hit("p", "policy-11", 1.0, 2, "t", 500, 600)))
    assert layer_recall(ENT003, trace(steps=[late]), 1, layer=2) == 0.0
    assert layer_recall(ENT003, trace(steps=[late]), 2, layer=2) == 1.0


def test_cycle_and_unknown_fact_errors() -> None:
    data = ENT003.model_dump(by_alias=True)
    data["edges"].append({"from": "policy-11:silver-critical", "to": "contract-31:wren-tier"})
    cyclic = Case.model_validate(data)
    assert find_cycle(cyclic) == ["contract-31:wren-tier", "policy-11:silver-critical", "contract-31:wren-tier"]
    with pytest.raises(InputError, match=r"case 'ent-003': dependency edges form a cycle contract-31:wren-tier -> policy-11"):
        check_cases([cyclic])
    broken = ENT003.model_construct(**{**dict(ENT003), "valid_chains": [["nope"]]})
    with pytest.raises(InputError, match=r"case 'ent-003': valid_chains\[0\] names unknown facts \['nope'\]"):
        check_cases([broken])
    with pytest.raises(InputError, match="duplicate case_id 'ent-003'"):
        check_cases([ENT003, ENT003])
    assert find_cycle(ENT003) is None


DOCS = sorted({f.source_id for c in CASES.values() for f in c.facts.values()} | {"contract-09", "faq-10", "memo-16"})


@st.composite
def evidence_items(draw):
    doc = draw(st.sampled_from(DOCS))
    if draw(st.booleans()):
        return ev(doc)
    start = draw(st.integers(0, 900))
    return ev(doc, start, start + draw(st.integers(1, 400)))


@settings(max_examples=200, deadline=None)
@given(case=st.sampled_from(list(CASES.values())), items=st.lists(evidence_items(), max_size=12), data=st.data())
def test_path_precision_properties(case, items, data) -> None:
    k = data.draw(st.integers(1, 14))
    value = path_precision(case, trace(items), k)
    assert 0.0 <= value <= 1.0
    # permutation of the selected items does not change the value (same set within k)
    shuffled = data.draw(st.permutations(items[:k]))
    assert path_precision(case, trace(list(shuffled)), k) == pytest.approx(value)
    # appending an irrelevant item never raises precision
    noise = ev("not-a-source", 0, 10)
    more = items[:k] + [noise]
    assert path_precision(case, trace(more), len(more)) <= path_precision(case, trace(items[:k]), k) + 1e-12


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(list(CASES.values())), items=st.lists(evidence_items(), max_size=12), data=st.data())
def test_alternative_chains_never_lower_coverage(case, items, data) -> None:
    facts = sorted(case.facts)
    extra = data.draw(st.lists(st.sampled_from(facts), min_size=1, max_size=3, unique=True))
    richer = case.model_copy(update={"valid_chains": [*case.valid_chains, extra]})
    for k in (1, 3, 10):
        assert chain_coverage(richer, trace(items), k) >= chain_coverage(case, trace(items), k)
    for layer in (2, 3):
        before = layer_recall(case, trace(steps=[HopStep("s", 1, "", "", tuple(e.hit for e in items))]), 10, layer=layer)
        after = layer_recall(richer, trace(steps=[HopStep("s", 1, "", "", tuple(e.hit for e in items))]), 10, layer=layer)
        if before is not None:
            assert after is not None and after >= before


@settings(max_examples=100, deadline=None)
@given(case=st.sampled_from(list(CASES.values())), hits=st.lists(evidence_items(), max_size=10), data=st.data())
def test_layer_recall_bounded_monotone_and_order_free(case, hits, data) -> None:
    raw = [e.hit for e in hits]
    steps = [HopStep("s1", 1, "", "", tuple(raw[: len(raw) // 2])), HopStep("s2", 2, "", "", tuple(raw[len(raw) // 2 :]))]
    for layer in (2, 3):
        values = [layer_recall(case, trace(steps=steps), k, layer=layer) for k in range(1, 8)]
        if values[0] is None:
            continue
        assert all(0.0 <= v <= 1.0 for v in values) and values == sorted(values)
        assert layer_recall(case, trace(steps=list(reversed(steps))), 7, layer=layer) == values[-1]
