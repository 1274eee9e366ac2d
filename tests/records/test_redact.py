"""PII redaction of traces: typed, numbered, stable placeholders; ids and offsets kept; idempotent."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.security.pii import scan_text
from hoprag.records import Answer, Citation, Claim, Evidence, Hit, HopStep, Trace
from hoprag.security.redaction import PlaceholderTable, redact_text, redact_trace

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
LEGAL = "legal-ops@kestrel-dynamics.example"
IG = "ig@kestrel-dynamics.example"

pytestmark = pytest.mark.unit


def test_each_kind_gets_its_typed_numbered_placeholder() -> None:
    text = (f"Write to {LEGAL} or {IG}; {LEGAL.upper()} again. Call +44 20 7946 0958. "
            "Card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, SSN 123-45-6789, NI AB 12 34 56 C. "
            "Founded 1990, plan KP-214.")
    assert redact_text(text) == (
        "Write to <EMAIL_1> or <EMAIL_2>; <EMAIL_1> again. Call <PHONE_1>. "
        "Card <CARD_1>, IBAN <IBAN_1>, SSN <NATIONAL_ID_1>, NI <NATIONAL_ID_2>. "
        "Founded 1990, plan KP-214."
    )


def test_one_table_numbers_values_across_texts_and_same_spelling_variants_share_a_number() -> None:
    table = PlaceholderTable()
    assert redact_text(f"from {IG}", table) == "from <EMAIL_1>"
    assert redact_text(f"to {LEGAL}, cc {IG}", table) == "to <EMAIL_2>, cc <EMAIL_1>"
    assert redact_text("card 4111-1111-1111-1111 or 4111111111111111", table) == "card <CARD_1> or <CARD_1>"
    assert table.counts() == {"card": 1, "email": 2}


def test_text_without_pii_is_returned_unchanged() -> None:
    text = "Project Orion acquires Plan KP-214 (Tern Pro) for 400 aerial sensor units, effective 2026-03-01."
    assert redact_text(text) == text


def _trace() -> Trace:
    hit = Hit("email-8#0", "email-8", 7.25, 1, "bm25", start=0, end=412, title=f"Escalation from {IG}")
    other = Hit("policy-2#1", "policy-2", 3.5, 2, "bm25", start=300, end=640, title="Retention")
    step = HopStep(
        step_id="s1", hop=1, sub_query=f"who handles {LEGAL}", issued_query=f"{LEGAL} escalation",
        hits=(hit, other), selected=("email-8#0",), depends_on=(), filters={"acl": ["internal"]},
        bridge={"value": LEGAL, "kind": "identifier", "from_chunk": "email-8#0"},
        error=f"timeout asking about {IG}", latency_ms=1.5, cumulative_ms=1.5, duplicates=("policy-2#1",),
    )
    evidence = (
        Evidence(hit, f"From: Legal Ops <{LEGAL}>\nCc: {IG}\nCall +1 (415) 555-0134.", "Escalation", 1, "s1", "who"),
        Evidence(other, "Records are kept for 7 years.", "Retention", 1, "s1", "who"),
    )
    answer = Answer(
        text=f"Escalate to {LEGAL}.",
        claims=(Claim(f"Legal ops is {LEGAL}, phone +1 (415) 555-0134.", (Citation("email-8#0", "email-8", 1),)),),
        confidence=0.4, rejected_citations=("ghost#0",),
    )
    return Trace(
        run_id="run-1", case_id="ent-x", question=f"Which team answers {LEGAL}?", steps=(step,), evidence=evidence,
        answer=answer, stop_reason="sufficient", config_hash="abc", engine="multihop", latency_ms=12.0,
        error=None, plan={"sub_queries": [{"order": 1, "query": f"owner of {LEGAL}", "depends_on": []}]},
        warnings=(f"planner fell back while reading {IG}",),
    )


def test_a_value_reads_as_the_same_placeholder_everywhere_in_one_trace() -> None:
    red = redact_trace(_trace())
    assert red.question == "Which team answers <EMAIL_1>?"
    assert red.steps[0].sub_query == "who handles <EMAIL_1>" and red.steps[0].issued_query == "<EMAIL_1> escalation"
    assert red.steps[0].bridge == {"value": "<EMAIL_1>", "kind": "identifier", "from_chunk": "email-8#0"}
    assert red.steps[0].hits[0].title == "Escalation from <EMAIL_2>" and red.steps[0].error == "timeout asking about <EMAIL_2>"
    assert red.evidence[0].text == "From: Legal Ops <<EMAIL_1>>\nCc: <EMAIL_2>\nCall <PHONE_1>."
    assert red.answer.text == "Escalate to <EMAIL_1>."
    assert red.answer.claims[0].text == "Legal ops is <EMAIL_1>, phone <PHONE_1>."
    assert red.plan["sub_queries"][0]["query"] == "owner of <EMAIL_1>"
    assert red.warnings == ("planner fell back while reading <EMAIL_2>",)
    assert red.redacted and red.redactions == {"email": 2, "phone": 1}
    assert "@" not in json.dumps(red.to_dict())


def test_ids_offsets_ranks_and_scores_are_kept() -> None:
    raw = _trace()
    red = redact_trace(raw)
    assert (red.run_id, red.case_id, red.config_hash, red.engine, red.latency_ms, red.stop_reason) == (
        raw.run_id, raw.case_id, raw.config_hash, raw.engine, raw.latency_ms, raw.stop_reason)
    s_raw, s_red = raw.steps[0], red.steps[0]
    for a, b in zip(s_raw.hits, s_red.hits):
        assert (a.chunk_id, a.doc_id, a.score, a.rank, a.retriever, a.start, a.end) == (
            b.chunk_id, b.doc_id, b.score, b.rank, b.retriever, b.start, b.end)
    assert (s_red.step_id, s_red.selected, s_red.depends_on, s_red.duplicates, s_red.filters) == (
        s_raw.step_id, s_raw.selected, s_raw.depends_on, s_raw.duplicates, s_raw.filters)
    assert [e.hit for e in red.evidence] == [replace(e.hit, title=red.steps[0].hits[i].title) for i, e in enumerate(raw.evidence)]
    assert [(e.hop, e.step_id) for e in red.evidence] == [(e.hop, e.step_id) for e in raw.evidence]
    assert red.answer.claims[0].citations == raw.answer.claims[0].citations
    assert red.answer.rejected_citations == ("ghost#0",) and red.answer.confidence == raw.answer.confidence
    assert red.evidence[1] == raw.evidence[1]  # nothing to replace: the very same record


def test_redacting_twice_changes_nothing() -> None:
    once = redact_trace(_trace())
    assert redact_trace(once) == once
    text = redact_text(f"{LEGAL} +44 20 7946 0958")
    assert redact_text(text) == text


def test_new_values_are_numbered_after_placeholders_already_present() -> None:
    partly = replace(redact_trace(_trace()), question="Who wrote to onboarding@kestrel-dynamics.example?")
    again = redact_trace(partly)
    assert again.question == "Who wrote to <EMAIL_3>?"
    assert again.answer.text == "Escalate to <EMAIL_1>." and again.redactions == {"email": 3, "phone": 1}


def test_old_traces_load_unredacted_and_the_fields_round_trip() -> None:
    data = _trace().to_dict()
    del data["redacted"], data["redactions"]
    old = Trace.from_dict(data)
    assert old.redacted is False and old.redactions == {}
    red = redact_trace(old)
    assert Trace.from_dict(json.loads(json.dumps(red.to_dict()))) == red


_PII = st.sampled_from([
    LEGAL, IG, "Jane.Doe+x@mail.example.org", "+44 20 7946 0958", "(415) 555-0134", "415.555.0134",
    "4111 1111 1111 1111", "5500-0000-0000-0004", "GB82 WEST 1234 5698 7654 32", "DE89370400440532013000",
    "123-45-6789", "AB 12 34 56 C", "<EMAIL_1>", "<PHONE_12>",
])
_FILLER = st.text(alphabet=st.sampled_from(list("ab Z09@.+-_()<>:;\n")), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_PII, _FILLER), max_size=12))
def test_no_detector_finding_survives_redaction(parts: list[str]) -> None:
    text = "".join(parts)
    red = redact_text(text)
    assert scan_text(red) == []
    assert redact_text(red) == red


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_ends_clean(text: str) -> None:
    red = redact_text(text)
    assert scan_text(red) == [] and redact_text(red) == red
    if "@" not in text and not any(ch.isdigit() for ch in text):
        assert red == text


@pytest.fixture(scope="module")
def enterprise_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, dict[str, tuple[list, list]]]:
    from hoprag.datasets.schema import load_cases
    from hoprag.index.store import build_index, load_index
    from hoprag.ingest.loaders import load_documents
    from hoprag.pipeline.factory import make_engine

    out = tmp_path_factory.mktemp("ent-index")
    cases = load_cases(ENTERPRISE / "cases.jsonl")
    build_index(load_documents(ENTERPRISE / "corpus.jsonl"), out)
    index = load_index(out)
    runs = {}
    for kind in ("single", "multihop"):
        engine = make_engine(kind, index)
        raw = [engine.answer(c.query, case_id=c.case_id, run_id=f"r-{kind}") for c in cases]
        runs[kind] = (raw, [redact_trace(t) for t in raw])
    return cases, runs


@pytest.mark.integration
def test_eval_figures_equal_over_raw_and_redacted_enterprise_traces(enterprise_runs) -> None:
    from hoprag.evaluation.chain_eval import evaluate_chains
    from hoprag.evaluation.runner import evaluate

    cases, runs = enterprise_runs
    replaced = 0
    for raw, red in runs.values():
        replaced += sum(sum(t.redactions.values()) for t in red)
        base, other = evaluate(cases, raw, ks=(2, 5, 10)), evaluate(cases, red, ks=(2, 5, 10))
        assert other.aggregate == base.aggregate and other.cases == base.cases
        # what `hoprag eval` runs; supporting-fact EM/F1 cut evidence into sentences: hoprag.security.redaction.source_offset
        chains_raw, chains_red = evaluate_chains(cases, raw), evaluate_chains(cases, red)
        assert chains_red.aggregate == chains_raw.aggregate and chains_red.cases == chains_raw.cases
        assert chains_red.failures == chains_raw.failures and chains_raw.aggregate["sp_f1"] > 0
    assert replaced > 0  # the engines did retrieve the mailboxes, so the comparison is not vacuous


def _mapped_back(raw: Evidence, red: Evidence, trace: Trace) -> None:
    """Every character of the redacted text outside a placeholder sits where source_offset says."""
    from hoprag.security.redaction import PLACEHOLDER, source_length, source_offset

    assert source_length(trace, red) == len(raw.text)
    inside = {i for m in PLACEHOLDER.finditer(red.text) for i in range(m.start(), m.end())}
    for pos, ch in enumerate(red.text):
        if pos not in inside:
            assert raw.text[source_offset(trace, red.chunk_id, pos)] == ch


def test_redacted_evidence_maps_back_to_its_source_offsets() -> None:
    from hoprag.ingest.chunking import sentence_spans
    from hoprag.security.redaction import source_offset

    raw = _trace()
    red = redact_trace(raw)
    entry = red.evidence[0]
    # "From: Legal Ops <" is 17 characters, then <EMAIL_1> (9) for 34, ">\nCc: " (6), <EMAIL_2> (9) for 27,
    # "\nCall " (6), <PHONE_1> (9) for 17: ends at 26, 41, 56; shifts 34-9, +27-9, +17-9
    assert red.redaction_shifts == {"email-8#0": ((26, 25), (41, 43), (56, 51))}
    _mapped_back(raw.evidence[0], entry, red)
    back = [(source_offset(red, entry.chunk_id, a), source_offset(red, entry.chunk_id, b))
            for a, b in sentence_spans(entry.text)]
    assert back == sentence_spans(raw.evidence[0].text)
    assert redact_trace(red) == red and source_offset(red, "policy-2#1", 7) == 7


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_PII, _FILLER), max_size=10))
def test_offsets_map_back_through_any_redaction(parts: list[str]) -> None:
    text = "".join(parts)
    hit = Hit("d#0", "d", 1.0, 1, "bm25", start=100, end=100 + len(text))
    raw = Trace(run_id="r", case_id="c", question="q", evidence=(Evidence(hit, text, "t", 1, "s1", "q"),))
    red = redact_trace(raw)
    _mapped_back(raw.evidence[0], red.evidence[0], red)
    assert redact_trace(red) == red
