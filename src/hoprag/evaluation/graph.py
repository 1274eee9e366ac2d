"""The evidence graph of a case as evaluation sees it: validation, layers, per-item relevance.

Validation (:func:`check_cases`) turns label errors into errors naming the case, never a silent
repair: duplicate case ids, chains or edges naming unknown facts (possible when a ``Case`` was built
without validation), and *cycles* in the dependency edges (``Case.fact_layers`` would quietly drop a
back edge; evaluation refuses instead).

Hop number is a fact's depth in the dependency graph (``Case.fact_layers()``: 1 = no incoming
edge), never the order of retrieval calls, so parallel branches of a comparison are both layer 1.

An evidence item or hit is *relevant to* fact ``f`` when it comes from ``f.source_id`` and either
``f`` has no spans, the item has no offsets, or the item's range overlaps one of ``f``'s spans
(:func:`hoprag.evaluation.matching.overlaps`). This per-item test drives path precision; coverage
of a whole fact (every span) is :func:`hoprag.evaluation.matching.covered_facts`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from operator import attrgetter

from hoprag.datasets.schema import Case, cycle_text, find_cycle
from hoprag.errors import InputError
from hoprag.evaluation.matching import (
    MISSING_SOURCE_PREFIX,
    Located,
    covered_facts,
    covered_within,
    first_cover,
    overlaps,
)
from hoprag.evaluation.memo import memoized
from hoprag.records import Evidence, Hit, Trace

BY_RANK = attrgetter("rank")  # the sort key of a step's hits (stable: ties keep their stored order)


def check_case(case: Case, *, source: str | None = None, line: int | None = None) -> None:
    """Raise :class:`InputError` naming the case when its graph cannot be scored."""
    known = set(case.facts)
    for i, chain in enumerate(case.valid_chains):
        unknown = [f for f in chain if f not in known]
        if unknown:
            raise InputError(
                f"case {case.case_id!r}: valid_chains[{i}] names unknown facts {unknown}",
                source=source,
                line=line,
                field=f"valid_chains[{i}]",
                fix="add the facts to 'facts' or remove them from the chain",
            )
    for i, edge in enumerate(case.edges):
        for end in (edge.from_fact, edge.to_fact):
            if end not in known:
                raise InputError(
                    f"case {case.case_id!r}: edges[{i}] names unknown fact {end!r}",
                    source=source,
                    line=line,
                    field=f"edges[{i}]",
                    fix="add the fact to 'facts' or drop the edge",
                )
    cycle = find_cycle(case)
    if cycle:
        raise InputError(
            f"case {case.case_id!r}: dependency edges form a cycle {cycle_text(cycle)}",
            source=source,
            line=line,
            field="edges",
            fix="dependency edges must point from a fact to one found later; remove the back edge",
        )


def check_cases(cases: Iterable[Case], *, source: str | None = None) -> list[Case]:
    """Validate every case (see :func:`check_case`) and reject duplicate ids; returns the list."""
    seen: set[str] = set()
    out: list[Case] = []
    for number, case in enumerate(cases, start=1):
        if case.case_id in seen:
            raise InputError(
                f"duplicate case_id {case.case_id!r}",
                source=source,
                line=number,
                field="case_id",
                fix="give every case a unique case_id",
            )
        seen.add(case.case_id)
        check_case(case, source=source, line=number)
        out.append(case)
    return out


def fact_layers(case: Case) -> dict[str, int]:
    """``case.fact_layers()``, computed once per case during an evaluation (do not mutate it)."""
    return memoized("fact_layers", (case,), case.fact_layers)


def chain_layers(case: Case, chain: Sequence[str], layers: dict[str, int] | None = None) -> dict[int, set[str]]:
    """Facts of ``chain`` grouped by graph layer."""
    layers = layers if layers is not None else fact_layers(case)
    out: dict[int, set[str]] = {}
    for fact in chain:
        out.setdefault(layers.get(fact, 1), set()).add(fact)
    return out


def max_layer(case: Case) -> int:
    """The deepest layer of any valid chain's fact (0 when the case has no chain)."""
    layers = fact_layers(case)
    return max((layers.get(f, 1) for chain in case.valid_chains for f in chain), default=0)


def chain_fact_ids(case: Case) -> set[str]:
    """Every fact that belongs to some valid chain."""
    return {f for chain in case.valid_chains for f in chain}


def item_relevant(case: Case, item: Hit | Evidence | Located, facts: Iterable[str]) -> bool:
    """Whether one item is relevant to (overlaps) at least one of ``facts``; see the module doc."""
    # the fields locate() gives, read without building a Located (this runs per entry and fact)
    where = item if isinstance(item, Located) else item.hit if isinstance(item, Evidence) else item
    doc, start, end = where.doc_id, where.start, where.end
    located = start is not None and end is not None
    for fact_id in facts:
        fact = case.facts[fact_id]
        if fact.source_id != doc or fact.source_id.startswith(MISSING_SOURCE_PREFIX):
            continue
        if not fact.spans or not located:
            return True
        if any(overlaps(start, end, span) for span in fact.spans):  # type: ignore[arg-type]
            return True
    return False


def step_candidates(trace: Trace, k: int | None = None) -> list[Hit]:
    """The first ``k`` hits (by rank) of every step, whatever its call position; all hits if ``k`` is None."""
    hits: list[Hit] = []
    for step in trace.steps:
        ranked = sorted(step.hits, key=BY_RANK)
        hits.extend(ranked if k is None else ranked[:k])
    return hits


def evidence_cover(case: Case, trace: Trace) -> dict[str, int]:
    """:func:`~hoprag.evaluation.matching.first_cover` of the evidence: fact -> smallest k such that
    ``trace.evidence[:k]`` covers it (once per case and trace within an evaluation)."""
    return memoized("evidence_cover", (case, trace), lambda: first_cover(case, enumerate(trace.evidence, start=1)))


def context_facts(case: Case, trace: Trace, context_k: int | None = None) -> set[str]:
    """Facts covered by the context, ``trace.evidence[:context_k]`` (all of it when ``context_k`` is
    unset or 0)."""
    if context_k is not None and context_k < 0:
        return covered_facts(case, trace.evidence[:context_k])
    return covered_within(evidence_cover(case, trace), context_k or math.inf)


def step_cover(case: Case, trace: Trace, hop: int | None = None) -> dict[str, int]:
    """Fact -> smallest k such that the first k hits (by rank) of every step cover it; with ``hop``,
    of the steps at that hop only (``hop=1``: hop-1 candidates). Once per case and trace."""

    def compute() -> dict[str, int]:
        positioned: list[tuple[int, Hit]] = []
        for step in trace.steps:
            if hop is None or step.hop == hop:
                positioned.extend(enumerate(sorted(step.hits, key=BY_RANK), start=1))
        return first_cover(case, positioned)

    return memoized(f"step_cover:{hop}", (case, trace), compute)


def retrieved_items(trace: Trace) -> list[Hit]:
    """Everything the trace logged as retrieved: every hit of every step plus the evidence hits
    (a foreign pipeline may log only its final context)."""
    return step_candidates(trace) + [e.hit for e in trace.evidence]
