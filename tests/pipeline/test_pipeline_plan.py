from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from hoprag.errors import ConfigError
from hoprag.pipeline.plan import MAX_SUBQUERIES, OfflinePlanner, Plan, SubQuery, validate_plan

pytestmark = pytest.mark.unit


def plan(*subs: tuple[int, str, list[int]]) -> Plan:
    return Plan(sub_queries=[SubQuery(order=o, query=q, depends_on=d) for o, q, d in subs])


def test_layers_group_independent_sub_queries():
    p = plan((1, "plan of Project Orion", []), (2, "family of that plan", [1]), (3, "Project Wren plan", []), (4, "retention", [2, 3]))
    assert [[s.order for s in layer] for layer in p.layers()] == [[1, 3], [2], [4]]


@pytest.mark.parametrize(
    "subs, message",
    [
        (((1, "a", [2]), (2, "b", [1])), "cycle"),
        (((1, "a", []), (2, "b", [7])), "unknown sub-queries [7]"),
        (((1, "a", [1]),), "depends on itself"),
        (((1, "a", []), (1, "b", [])), "repeat"),
    ],
)
def test_invalid_plans_are_rejected_with_the_reason(subs, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        plan(*subs)


def test_too_many_sub_queries_and_blank_queries():
    with pytest.raises(ValidationError, match=f"at most {MAX_SUBQUERIES}"):
        plan(*[(i, f"q{i}", []) for i in range(1, MAX_SUBQUERIES + 2)])
    with pytest.raises(ValidationError):
        plan((1, "   ", []))


def test_validate_plan_from_model_output_names_the_planner_and_fix():
    with pytest.raises(ConfigError, match=r"invalid plan from llm:x.*cycle.*Fix: ask for a DAG"):
        validate_plan({"sub_queries": [{"order": 1, "query": "a", "depends_on": [2]}, {"order": 2, "query": "b", "depends_on": [1]}]}, planner="llm:x")


def test_offline_planner_branches_comparisons_chains_nesting_and_keeps_other_questions_whole():
    p = OfflinePlanner()
    compare = p.plan("Which film came out first, Forbidden Ground or Free Guy?")
    assert [s.query for s in compare.sub_queries] == ["Forbidden Ground Which film came out first", "Free Guy Which film came out first"]
    assert all(not s.depends_on for s in compare.sub_queries) and compare.synthesis_hint
    both = p.plan("Are Sutera and Rhodotypos both types of shrub?")
    assert [s.query for s in both.sub_queries] == ["Sutera types of shrub", "Rhodotypos types of shrub"]
    # a nested question is a chain (tests/pipeline/test_pipeline_compositional.py has the rules)
    chain = p.plan("Who is the federal leader of the party Ken Epp belongs to?")
    assert [(s.query, s.depends_on) for s in chain.sub_queries] == [("party Ken Epp belongs to", []), ("federal leader of", [1])]
    # the serial comma before "or" (HotpotQA) still names two options
    serial = p.plan("Which music group has the most members, DC Talk, or Manchester Orchestra?")
    assert [s.query for s in serial.sub_queries] == [
        "DC Talk Which music group has the most members", "Manchester Orchestra Which music group has the most members"]
    single = p.plan("Who is the federal leader of Canada?")
    assert len(single.sub_queries) == 1 and single.sub_queries[0].query == "Who is the federal leader of Canada?"
