"""The proof on the enterprise fixture: at every clearance, no output holds a document above it.

Each engine answers all 16 enterprise cases at every level (and unrestricted, as the control that
shows the leak detector does find restricted documents when nothing stops them). A trace's every
string (hits, evidence, bridges, answer, claims, citations) and its rendered trail are searched for
the ids, titles and any 40-character window of text of the documents above the clearance
(:class:`hoprag.security.acl.LeakDetector`). The CLI side, and ``ablate``'s oracle rows, are proved in
``tests/cli/test_cli_clearance.py``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from hoprag.security.acl import Clearance, ClearancePolicy, LeakDetector
from hoprag.datasets.schema import Case, load_cases
from hoprag.errors import ConfigError
from hoprag.index.store import build_index, load_index
from hoprag.ingest.loaders import load_corpora
from hoprag.pipeline.bridges import title_key
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.multihop import MultiHopEngine
from hoprag.records import Trace
from hoprag.render import trace_report

pytestmark = pytest.mark.unit

ENTERPRISE = Path(__file__).resolve().parents[2] / "data" / "enterprise"
LEVELS = ("public", "internal", "confidential", "restricted")
ENGINES = ("single", "multihop")


@pytest.fixture(scope="module")
def documents():
    return load_corpora([ENTERPRISE / "corpus.jsonl"])


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases(ENTERPRISE / "cases.jsonl")


@pytest.fixture(scope="module")
def index(tmp_path_factory, documents):
    out = tmp_path_factory.mktemp("enterprise-index")
    build_index(documents, out)
    return load_index(out)


@pytest.fixture(scope="module")
def runs(index, cases) -> dict[tuple[str, str | None], list[Trace]]:
    out = {}
    for engine in ENGINES:
        for level in (None, *LEVELS):
            answerer = make_engine(engine, index, clearance=level)
            out[(engine, level)] = [answerer.answer(c.query, case_id=c.case_id, run_id="acl") for c in cases]
    return out


def rendered(trace: Trace) -> str:
    console = Console(file=io.StringIO(), record=True, width=1000)
    for part in trace_report(trace):
        console.print(part)
    return console.export_text()


def needs_above(case: Case, documents, level: str) -> bool:
    """Whether every valid chain of ``case`` needs a document the clearance hides."""
    clearance = Clearance(level)
    acl = {d.id: d.acl for d in documents}
    return all(any(not clearance.allows(acl[case.facts[f].source_id]) for f in chain) for chain in case.valid_chains)


def cited_docs(trace: Trace) -> set[str]:
    return {c.doc_id for claim in trace.answer.claims for c in claim.citations}


def test_unrestricted_answers_cite_restricted_documents_and_the_detector_sees_them(runs, documents) -> None:
    """The control: without a clearance the leak is real, so a zero below is not a blind detector."""
    restricted = {d.id for d in documents if d.acl == "restricted"}
    traces = runs[("multihop", None)]
    citing = [t.case_id for t in traces if cited_docs(t) & restricted]
    assert len(citing) >= 8, citing
    detector = LeakDetector(documents, Clearance("internal"))
    assert all(detector.find_in(t.to_dict()) for t in traces if t.case_id in citing)
    assert all(detector.find(rendered(t)) for t in traces[:3] if t.case_id in citing)
    mailbox = "legal-ops@kestrel-dynamics.example"
    assert any(mailbox in str(t.to_dict()) for t in traces)


@pytest.fixture(scope="module")
def detectors(documents) -> dict[str, LeakDetector]:
    return {level: LeakDetector(documents, Clearance(level)) for level in LEVELS}


@pytest.mark.parametrize("level", LEVELS)
def test_no_trace_answer_citation_or_hit_holds_a_document_above_the_clearance(runs, documents, detectors, level) -> None:
    clearance = Clearance(level)
    allowed = {d.id for d in documents if clearance.allows(d.acl)}
    visible = " ".join(" ".join((d.title + " " + d.text).split()).lower() for d in documents if d.id in allowed)
    for engine in ENGINES:
        traces = runs[(engine, level)]
        assert len(traces) == 16
        for trace in traces:
            hit_docs = {h.doc_id for s in trace.steps for h in s.hits}
            assert hit_docs <= allowed, (trace.case_id, hit_docs - allowed)
            assert {e.doc_id for e in trace.evidence} <= allowed
            assert cited_docs(trace) <= allowed
            assert detectors[level].find_in(trace.to_dict()) == set(), (engine, trace.case_id)
            assert all(s.filters == {"clearance": level} for s in trace.steps)
            # the answer itself comes from what the caller may see (or is a yes/no or a compared name)
            said = " ".join(trace.answer.text.split()).lower()
            assert trace.answer.abstained or said in visible or said in trace.question.lower() or said in ("yes", "no")


def test_the_printed_trail_holds_no_document_above_the_clearance(runs, detectors) -> None:
    """``render.trace_report`` reads nothing but the trace, so one level is rendered here (rendering is
    slow); ``tests/cli/test_cli_clearance.py`` checks what ``ask`` prints at every level."""
    for trace in runs[("multihop", "public")]:
        assert detectors["public"].find(rendered(trace)) == set(), trace.case_id


@pytest.mark.parametrize("level", ("public", "internal"))
def test_cases_that_need_hidden_evidence_never_answer_from_it(runs, documents, cases, level) -> None:
    """A case whose every chain needs a document above the clearance: no citation of what the caller
    may not see; the multi-hop engine abstains on most of them (the judge was not satisfied, and the
    clearance hides documents, so a guess from the visible ones is withheld)."""
    hidden = {d.id for d in documents if not Clearance(level).allows(d.acl)}
    blocked = [c.case_id for c in cases if needs_above(c, documents, level)]
    assert blocked == ([c.case_id for c in cases] if level == "public" else ["ent-005", "ent-008"])
    for engine in ENGINES:
        for trace in runs[(engine, level)]:
            if trace.case_id in blocked:
                assert not cited_docs(trace) & hidden
    abstained = [t for t in runs[("multihop", level)] if t.case_id in blocked and t.answer.abstained]
    assert len(abstained) >= len(blocked) // 2
    # an abstention under a clearance is never also flagged partial: it gave nothing to flag
    assert not any(t.answer.partial for t in abstained)


def test_partial_answers_under_a_hiding_clearance_become_abstentions(index, cases) -> None:
    """restricted_partial: 'abstain' (default) withholds an unsupported guess; 'partial' keeps it, flagged."""
    withhold = make_engine("multihop", index, clearance="public")
    keep = make_engine("multihop", index, clearance="public", restricted_partial="partial")
    unsupported = 0
    for case in cases:
        withheld = withhold.answer(case.query, case_id=case.case_id)
        kept = keep.answer(case.query, case_id=case.case_id)
        if withheld.stop_reason == "sufficient":
            assert withheld.answer == kept.answer
            continue
        unsupported += 1
        assert withheld.answer.abstained and withheld.answer.text == ""
        assert kept.answer.partial and not kept.answer.abstained and kept.answer.text
    assert unsupported >= len(cases) // 2
