"""Test fixtures built from a case's own labels: a trace holding exactly its first chain's spans, and a
copy of the case with one labelled span that no longer matches its document."""

from __future__ import annotations

from hoprag.datasets.schema import Case, Span
from hoprag.records import Answer, Evidence, Hit, Trace


def oracle_trace(case: Case, run_id: str = "r") -> Trace:
    """Evidence holding exactly the spans of the case's first chain (as an oracle-hop run finds them)."""
    evidence = []
    for fact_id in case.valid_chains[0]:
        fact = case.facts[fact_id]
        for span in fact.spans:
            hit = Hit(f"{fact.source_id}@{span.start}", fact.source_id, 1.0, len(evidence) + 1, "oracle", span.start, span.end)
            evidence.append(Evidence(hit, span.text, "", 1, "s1", case.query))
    return Trace(run_id=run_id, case_id=case.case_id, question=case.query, evidence=tuple(evidence),
                 answer=Answer(text=case.answers[0] if case.answers else ""))


def broken(case: Case) -> Case:
    """One word of the first labelled span differs from the document (a label error)."""
    fact_id = case.valid_chains[0][0]
    fact = case.facts[fact_id]
    span = fact.spans[0]
    wrong = Span(start=span.start, end=span.end, text=span.text.replace("Project", "Projekt", 1))
    facts = {**case.facts, fact_id: fact.model_copy(update={"spans": [wrong, *fact.spans[1:]]})}
    return case.model_copy(update={"facts": facts})
