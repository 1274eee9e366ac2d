"""Earliest observable failure of each case, in pipeline order.

A case *passes* when (a) the context (``trace.evidence[:context_k]``, all of it by default) covers
a complete valid chain, (b) the answer is right (closed: EM = 1 over answers + aliases; explanatory:
``claim_recall >= explanatory_pass``; no gold answer: not judged), and (c) attribution holds (the
answer cites, every claim is supported, and the cited evidence covers a valid chain). Otherwise
the first failing stage names the class:

1. ``missing_corpus_fact``   every valid chain has a fact whose source is absent (``missing:``
                             source, or not in the given corpus ids)
2. ``hop1_retrieval_miss``   no chain has all its layer-1 facts among the retrieved items
                             (every hit of every step plus the evidence)
3. ``wrong_bridge_extraction`` layer-1 facts found, a later layer missed, the trace issued
                             follow-up queries, and none of them (query, sub-query or bridge
                             state) contains a gold bridge value into the missed layer
4. ``hop2_retrieval_miss``   layer-1 facts found, a later layer (recorded in ``layer``) missed
                             otherwise: the right bridge was followed, or no follow-up was tried
5. ``selection_loss``        some chain was fully retrieved but no chain is complete in the context
6. ``unsupported_composition`` the chain is in the context, the answer is wrong, and its
                             citations cover no valid chain (it was not composed from one)
7. ``wrong_answer``          the chain is in the context and the answer is wrong or abstained
                             (it cited a full chain, or cited nothing we can match)
8. ``citation_failure``      right answer, but it cites nothing, some claim is unsupported by its
                             cited text, or its citations cover no valid chain

Two further classes keep the count total: ``missing_trace`` (no trace for the case) and
``pipeline_error`` (the trace reports an error and logged no retrieval). By construction every
failing case gets exactly one class; there is no "unknown".

**Assessable classes.** A class that reads a trace field beyond retrieval and answer declares it
(:data:`CLASS_NEEDS`): ``wrong_bridge_extraction`` needs the bridge state of follow-up steps
(``steps[].bridge``), ``unsupported_composition`` and ``citation_failure`` need citations
(``answer.claims[].citations``). A trace set *lacks* a field when it has the parts the field belongs
to (follow-up steps; answers) and not one of them carries it (:func:`missing_fields`): a pipeline
that extracts no bridges or cites nothing, as most traces imported from OpenTelemetry or written by
:mod:`hoprag.recorder`. For such a set those classes are *not assessable*: no case is put in them
(a missed later layer is ``hop2_retrieval_miss``; a right answer over a complete chain passes, its
attribution not judged, and ``citation_support`` is not applicable), and the report names them
(:func:`not_assessable`). hoprag's own traces carry both fields, so every class is assessed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from hoprag.datasets.schema import Case
from hoprag.evaluation.answers import answer_em
from hoprag.evaluation.attribution import Judge, attribute, cited_items, claim_recall
from hoprag.evaluation.graph import chain_layers, context_facts, fact_layers, retrieved_items
from hoprag.evaluation.matching import MISSING_SOURCE_PREFIX, covered_facts
from hoprag.pipeline.text import fold
from hoprag.records import HopStep, Trace

FAILURE_CLASSES = (
    "missing_corpus_fact",
    "hop1_retrieval_miss",
    "wrong_bridge_extraction",
    "hop2_retrieval_miss",
    "selection_loss",
    "unsupported_composition",
    "wrong_answer",
    "citation_failure",
)
EXTRA_CLASSES = ("missing_trace", "pipeline_error")

#: the trace fields a class reads besides retrieval and answer (the other classes need only those)
CLASS_NEEDS: dict[str, tuple[str, ...]] = {
    "wrong_bridge_extraction": ("bridge state",),
    "unsupported_composition": ("citations",),
    "citation_failure": ("citations",),
}


def _follow_up(step: HopStep) -> bool:
    return bool(step.depends_on) or step.hop > 1


def _bridge_parts(trace: Trace) -> list[bool]:
    """Whether each follow-up step carries bridge state."""
    return [bool(s.bridge) for s in trace.steps if _follow_up(s)]


def _citation_parts(trace: Trace) -> list[bool]:
    """Whether the answer (if one was given) cites anything."""
    if trace.answer.abstained or not trace.answer.text.strip():
        return []
    return [any(c.citations for c in trace.answer.claims)]


#: field -> whether each part of a trace it belongs to carries it
_FIELDS: dict[str, Callable[[Trace], list[bool]]] = {"bridge state": _bridge_parts, "citations": _citation_parts}
TRACE_FIELDS = tuple(_FIELDS)


def missing_fields(traces: Iterable[Trace | None]) -> frozenset[str]:
    """The fields of :data:`TRACE_FIELDS` the set lacks: it has parts they belong to (follow-up
    steps, answers) and none of them carries the field. A set without such parts lacks nothing."""
    seen: set[str] = set()
    carried: set[str] = set()
    for trace in traces:
        if trace is None:
            continue
        for name, parts in _FIELDS.items():
            if name not in carried:
                found = parts(trace)
                seen.update([name] if found else [])
                carried.update([name] if any(found) else [])
        if len(carried) == len(_FIELDS):
            break
    return frozenset(seen - carried)


def not_assessable(missing: Collection[str]) -> dict[str, list[str]]:
    """The classes a set lacking ``missing`` cannot assess, each with the fields it lacks."""
    return {name: [f for f in needs if f in missing] for name, needs in CLASS_NEEDS.items()
            if any(f in missing for f in needs)}


def not_assessable_note(classes: Mapping[str, Collection[str]]) -> str:
    """``not assessable: wrong_bridge_extraction (traces carry no bridge state); ...`` or ``""``."""
    by_field: dict[str, list[str]] = {}
    for name, fields in classes.items():
        by_field.setdefault(" or ".join(fields), []).append(name)
    parts = [f"{', '.join(names)} (traces carry no {field})" for field, names in by_field.items()]
    return "not assessable: " + "; ".join(parts) if parts else ""


@dataclass(frozen=True)
class Diagnosis:
    case_id: str
    passed: bool
    failure: str | None
    layer: int | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"case_id": self.case_id, "passed": self.passed, "failure": self.failure, "layer": self.layer, "detail": self.detail}


def _present(case: Case, fact_id: str, corpus_ids: Collection[str] | None) -> bool:
    source = case.facts[fact_id].source_id
    if source.startswith(MISSING_SOURCE_PREFIX):
        return False
    return corpus_ids is None or source in corpus_ids


def _answer_ok(case: Case, trace: Trace, explanatory_pass: float) -> tuple[bool, str]:
    if case.answer_type == "explanatory":
        recall = claim_recall(case, trace)
        if recall is None:
            return True, "no reference claims: answer not judged"
        return recall >= explanatory_pass, f"claim recall {recall:.2f}"
    em = answer_em(case, trace)
    if em is None:
        return True, "no gold answer: answer not judged"
    if trace.answer.abstained:
        return False, "abstained"
    return em == 1.0, f"answer {trace.answer.text[:60]!r}"


def _bridge_tried(case: Case, trace: Trace, chain: list[str], layer: int, layers: dict[str, int]) -> bool | None:
    """Whether a follow-up query used a gold bridge into ``layer``; None when it cannot be judged."""
    members = set(chain)
    values = {
        fold(e.bridge_value)
        for e in case.edges
        if e.bridge_value and e.to_fact in members and layers.get(e.to_fact) == layer and e.from_fact in members
    }
    follow_ups = [s for s in trace.steps if _follow_up(s)]
    if not values or not follow_ups:
        return None
    for step in follow_ups:
        said = fold(" ".join([step.issued_query, step.sub_query, *(str(v) for v in step.bridge.values())]))
        if any(v in said for v in values):
            return True
    return False


def diagnose(
    case: Case,
    trace: Trace | None,
    *,
    corpus_ids: Collection[str] | None = None,
    context_k: int | None = None,
    judge: Judge | None = None,
    explanatory_pass: float = 0.6,
    missing: Collection[str] = (),
) -> Diagnosis:
    """The earliest failure of one case (see the module doc); ``passed`` when there is none.

    ``missing``: the fields the trace set lacks (:func:`missing_fields`); the classes needing them
    are not assessed. Empty (a single trace judged on its own): every class is assessed."""
    cid = case.case_id
    if trace is None:
        return Diagnosis(cid, False, "missing_trace", detail="no trace for this case")
    if trace.error and not trace.steps and not trace.evidence:
        return Diagnosis(cid, False, "pipeline_error", detail=str(trace.error)[:200])
    chains = [list(c) for c in case.valid_chains]
    chain_ok = True
    if chains:
        present = [c for c in chains if all(_present(case, f, corpus_ids) for f in c)]
        if not present:
            gone = sorted({f for c in chains for f in c if not _present(case, f, corpus_ids)})
            return Diagnosis(cid, False, "missing_corpus_fact", detail=f"absent facts: {gone}")
        context = context_facts(case, trace, context_k)
        chain_ok = any(set(c) <= context for c in present)
        if not chain_ok:
            return _retrieval_failure(case, trace, present, bridges="bridge state" not in missing)
    ok, why = _answer_ok(case, trace, explanatory_pass)
    cites = "citations" not in missing
    if ok and not cites:
        return Diagnosis(cid, True, None, detail="attribution not assessed: the traces carry no citations")
    attribution = attribute(case, trace, judge)
    cited_chain: bool | None = None
    if cites and chains and attribution.cited_chunks:
        cited = covered_facts(case, cited_items(trace, attribution))
        cited_chain = any(set(c) <= cited for c in chains)
    if not ok:
        if cited_chain is False and not trace.answer.abstained:
            return Diagnosis(cid, False, "unsupported_composition", detail=f"{why}; its citations cover no valid chain")
        return Diagnosis(cid, False, "wrong_answer", detail=why)
    if not trace.answer.claims:
        return Diagnosis(cid, False, "citation_failure", detail="the answer makes no cited claim")
    bad = [r for r in attribution.claims if r.supported is False]
    if bad:
        return Diagnosis(cid, False, "citation_failure", detail=f"{len(bad)} claim(s) unsupported: {bad[0].reason}")
    if cited_chain is False:
        return Diagnosis(cid, False, "citation_failure", detail="right answer, but its citations cover no valid chain")
    return Diagnosis(cid, True, None)


def _retrieval_failure(case: Case, trace: Trace, chains: list[list[str]], *, bridges: bool = True) -> Diagnosis:
    cid = case.case_id
    layers = fact_layers(case)
    found = covered_facts(case, retrieved_items(trace))
    if any(set(c) <= found for c in chains):
        return Diagnosis(cid, False, "selection_loss", detail="a full chain was retrieved but not kept in the context")
    progress: list[tuple[int, list[str]]] = []
    for chain in chains:
        by_layer = chain_layers(case, chain, layers)
        missing = [layer for layer in sorted(by_layer) if not by_layer[layer] <= found]
        progress.append((missing[0], chain))
    best_layer = max(p[0] for p in progress)
    if best_layer == 1:
        return Diagnosis(cid, False, "hop1_retrieval_miss", layer=1, detail="no chain's layer-1 facts were retrieved")
    if not bridges:
        return Diagnosis(cid, False, "hop2_retrieval_miss", layer=best_layer, detail=(
            f"layer-{best_layer} facts not retrieved (bridge extraction not assessable: the traces carry no bridge state)"))
    candidates = [chain for layer, chain in progress if layer == best_layer]
    tried = [_bridge_tried(case, trace, chain, best_layer, layers) for chain in candidates]
    if tried and all(t is False for t in tried):
        return Diagnosis(
            cid, False, "wrong_bridge_extraction", layer=best_layer, detail=f"no follow-up query used a gold bridge into layer {best_layer}"
        )
    return Diagnosis(cid, False, "hop2_retrieval_miss", layer=best_layer, detail=f"layer-{best_layer} facts not retrieved")


def failure_counts(diagnoses: Iterable[Diagnosis], *, unassessed: Collection[str] = ()) -> dict[str, int]:
    """Counts per class (every assessed class listed, zeros included; the ``unassessed`` ones left
    out, as no case can be in them) plus ``passed`` and ``failed``."""
    diagnoses = list(diagnoses)
    counts = Counter(d.failure for d in diagnoses if not d.passed)
    out = {name: counts.get(name, 0) for name in FAILURE_CLASSES + EXTRA_CLASSES if name not in unassessed}
    out["passed"] = sum(1 for d in diagnoses if d.passed)
    out["failed"] = len(diagnoses) - out["passed"]
    return out
