"""Retrieval plans: sub-queries with dependencies, validated as a DAG and grouped into hop layers.

A plan says what to look up and in which order: sub-query 2 ``depends_on`` sub-query 1 when it can
only be asked with a value sub-query 1 finds (the plan id of "the plan Project Orion acquired").
Sub-queries whose dependencies are met run together, so a plan's hop number is its graph layer.
"""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hoprag.errors import ConfigError
from hoprag.pipeline.compositional import decompose

MAX_SUBQUERIES = 6


class SubQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order: int = Field(ge=1, description="1-based position; dependencies point to smaller orders")
    query: str = Field(min_length=1)
    rationale: str = ""
    depends_on: list[int] = Field(default_factory=list)
    target_doc_type: str | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("sub-query text is blank")
        return value.strip()


class Plan(BaseModel):
    """A validated plan: unique orders, known dependencies, no cycles, at most ``MAX_SUBQUERIES``."""

    model_config = ConfigDict(extra="forbid")

    sub_queries: list[SubQuery] = Field(min_length=1)
    synthesis_hint: str = ""
    planner: str = "offline"
    note: str = ""

    @model_validator(mode="after")
    def _dag(self) -> Plan:
        if len(self.sub_queries) > MAX_SUBQUERIES:
            raise ValueError(f"plan has {len(self.sub_queries)} sub-queries; at most {MAX_SUBQUERIES} are allowed")
        orders = [s.order for s in self.sub_queries]
        if len(set(orders)) != len(orders):
            raise ValueError(f"sub-query orders repeat: {orders}")
        known = set(orders)
        for sub in self.sub_queries:
            missing = [d for d in sub.depends_on if d not in known]
            if missing:
                raise ValueError(f"sub-query {sub.order} depends on unknown sub-queries {missing}")
            if sub.order in sub.depends_on:
                raise ValueError(f"sub-query {sub.order} depends on itself")
        self.layers()  # raises on a cycle
        return self

    def by_order(self) -> dict[int, SubQuery]:
        return {s.order: s for s in self.sub_queries}

    def layers(self) -> list[list[SubQuery]]:
        """Sub-queries grouped by graph depth (layer 0 has no dependencies); a cycle is an error."""
        remaining = {s.order: set(s.depends_on) for s in self.sub_queries}
        placed: set[int] = set()
        layers: list[list[SubQuery]] = []
        by_order = self.by_order()
        while remaining:
            ready = sorted(o for o, deps in remaining.items() if deps <= placed)
            if not ready:
                cycle = sorted(remaining)
                raise ValueError(f"sub-queries {cycle} depend on each other in a cycle; a plan must be a DAG")
            layers.append([by_order[o] for o in ready])
            placed.update(ready)
            for o in ready:
                del remaining[o]
        return layers


class Planner(Protocol):
    name: str

    def plan(self, question: str) -> Plan: ...


def validate_plan(data: dict, *, planner: str) -> Plan:
    """A plan from untrusted (model) output; errors name the problem and the fix."""
    try:
        return Plan.model_validate({**data, "planner": planner})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        reason = first.get("msg", str(exc)).removeprefix("Value error, ")
        raise ConfigError(
            f"invalid plan from {planner}: {reason}" + (f" (at {where})" if where else "")
            + f". Fix: ask for a DAG of at most {MAX_SUBQUERIES} sub-queries"
        ) from None


# "..., A or B?" and the serial comma's "..., A, or B?"
_OPTIONS = re.compile(r"^(?P<head>.*?),?\s+(?P<a>[^,?]+?),?\s+or\s+(?P<b>[^,?]+?)\s*\?\s*$", re.I)
_BOTH = re.compile(r"^(?:are|were|is|was|do|did|does)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+both\b(?P<rest>.*)$", re.I)


class OfflinePlanner:
    """Rule-based plans: one branch per compared option, a chain for a nested question, or the question.

    "Which film came out first, A or B?" and "Are A and B both shrubs?" become two independent
    sub-queries (parallel branches, one hop). A nested question ("the country where the composer of
    X was born") becomes a chain of dependent sub-queries, innermost first, one hop each
    (:mod:`hoprag.pipeline.compositional`). Anything else is one sub-query, and the engine's
    bridge-following hops find what it depends on.
    """

    name = "offline"

    def plan(self, question: str) -> Plan:
        question = question.strip()
        both = _BOTH.match(question)
        if both:
            rest = both.group("rest").strip(" ?")
            return _branches(question, both.group("a"), both.group("b"), rest)
        options = _OPTIONS.match(question)
        if options and len(options.group("head").split()) >= 2:
            return _branches(question, options.group("a"), options.group("b"), options.group("head"))
        levels = decompose(question)
        if levels is not None and len(levels) <= MAX_SUBQUERIES:
            return _chain(question, [level.text for level in levels])
        return Plan(sub_queries=[SubQuery(order=1, query=question, rationale="the question as asked")])


def _branches(question: str, a: str, b: str, about: str) -> Plan:
    about = about.strip()
    return Plan(
        sub_queries=[
            SubQuery(order=1, query=f"{a.strip()} {about}".strip(), rationale=f"facts about {a.strip()}"),
            SubQuery(order=2, query=f"{b.strip()} {about}".strip(), rationale=f"facts about {b.strip()}"),
        ],
        synthesis_hint=f"compare the two branches to answer: {question}",
    )


def _chain(question: str, lookups: list[str]) -> Plan:
    """Dependent sub-queries, innermost first: each is asked with the value the one before it found."""
    subs = [SubQuery(order=1, query=lookups[0], rationale="the innermost lookup: it names the anchor")]
    for order, lookup in enumerate(lookups[1:], start=2):
        subs.append(
            SubQuery(order=order, query=lookup, rationale=f"asked of what sub-query {order - 1} found", depends_on=[order - 1])
        )
    return Plan(sub_queries=subs, synthesis_hint=f"follow the chain to answer: {question}")


class QuestionPlanner:
    """The fixed template: the question as one sub-query (no decomposition); the planner ablation's baseline."""

    name = "fixed-template"

    def plan(self, question: str) -> Plan:
        return Plan(sub_queries=[SubQuery(order=1, query=question.strip(), rationale="fixed template")], planner=self.name)
