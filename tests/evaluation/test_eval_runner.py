"""The runner: pairing cases with traces, per-case rows, aggregates, JSON shape, trace files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.datasets.schema import Case, load_cases
from hoprag.errors import InputError
from hoprag.evaluation.measures.cases import ChainCoverage, Measure, default_measures
from hoprag.evaluation.runner import evaluate
from hoprag.io.traces import read_traces
from hoprag.records import Answer, Evidence, Hit, Trace

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
CASES = ROOT / "data" / "enterprise" / "cases.jsonl"
TRACES = ROOT / "tests" / "data" / "eval_traces.jsonl"


@pytest.fixture(scope="module")
def all_cases() -> dict[str, Case]:
    return {c.case_id: c for c in load_cases(CASES)}


@pytest.fixture(scope="module")
def picked(all_cases: dict[str, Case]) -> list[Case]:
    return [
        all_cases["ent-003"].model_copy(update={"question_type": "bridge", "dataset": "enterprise"}),
        all_cases["ent-007"],
        all_cases["ent-012"].model_copy(update={"question_type": "comparison", "dataset": "enterprise"}),
        all_cases["ent-016"].model_copy(update={"question_type": "bridge", "dataset": "enterprise"}),
    ]


def test_read_traces_fixture() -> None:
    traces = read_traces(TRACES)
    assert [t.case_id for t in traces] == ["ent-003", "ent-999", "ent-012", "ent-007"]
    foreign = traces[2]  # a doc-level pipeline that writes only what it knows
    assert foreign.evidence[0].hit.start is None and foreign.steps == ()


def test_rows_and_aggregate(picked: list[Case]) -> None:
    result = evaluate(picked, read_traces(TRACES), ks=(2, 5))
    rows = {row["case_id"]: row for row in result.cases}
    assert [r["case_id"] for r in result.cases] == ["ent-003", "ent-007", "ent-012", "ent-016"]

    # ent-003: both hops found in top 2, hop-1 hits cover both starting facts, correct answer,
    # latency from the last step's cumulative time.
    assert rows["ent-003"] == {
        "case_id": "ent-003",
        "question_type": "bridge",
        "dataset": "enterprise",
        "chain_coverage@2": 1.0,
        "chain_coverage@5": 1.0,
        "hop1_recall@2": 1.0,
        "hop1_recall@5": 1.0,
        "answer_em": 1.0,
        "answer_f1": 1.0,
        "latency_ms": 84.5,
        "hops": 2.0,
        "steps": 2.0,
        "evidence_count": 2.0,
        "stop_reason": "answered",
        "missing_trace": False,
    }
    # ent-007 (explanatory): policy facts never retrieved; memo-4 found at hop 1; no closed answer.
    assert rows["ent-007"]["chain_coverage@5"] == 0.0
    assert rows["ent-007"]["hop1_recall@2"] == 1.0
    assert rows["ent-007"]["answer_em"] is None and rows["ent-007"]["answer_f1"] is None
    # ent-012 (foreign, doc-level): ticket-2041 + catalog-3 is a valid chain; no steps, so no hop-1 hits.
    assert rows["ent-012"]["chain_coverage@2"] == 1.0
    assert rows["ent-012"]["hop1_recall@5"] == 0.0
    assert rows["ent-012"]["answer_em"] == 1.0  # alias 'the Skyline Telemetry family'
    assert (rows["ent-012"]["hops"], rows["ent-012"]["stop_reason"]) == (0.0, "")
    # ent-016 has no trace: defaults, never dropped.
    missing = rows["ent-016"]
    assert missing["missing_trace"] is True
    assert (missing["chain_coverage@2"], missing["hop1_recall@2"], missing["answer_em"], missing["answer_f1"]) == (
        0.0,
        0.0,
        0.0,
        0.0,
    )
    assert missing["latency_ms"] is None and missing["hops"] is None and missing["stop_reason"] is None

    agg = result.aggregate
    assert (agg["cases"], agg["missing_traces"], agg["unknown_traces"], agg["duplicate_traces"]) == (4, 1, 1, 0)
    assert agg["chain_coverage@2"] == (1 + 0 + 1 + 0) / 4
    assert agg["hop1_recall@2"] == (1 + 1 + 0 + 0) / 4
    assert agg["answer_em"] == pytest.approx((1 + 1 + 0) / 3)
    assert (agg["n_answer_em"], agg["na_answer_em"]) == (3, 1)
    assert "n_chain_coverage@2" not in agg  # every case applicable
    # latencies 84.5, 300, 1200: median 300; p95 at position 2 * 0.95 = 1.9 -> 300 + 0.9 * 900
    assert agg["latency_ms_p50"] == 300.0
    assert agg["latency_ms_p95"] == pytest.approx(1110.0)
    assert "latency_ms" not in agg and agg["n_latency_ms"] == 3
    assert agg["hops"] == (2 + 1 + 0) / 3


def test_json_shape(picked: list[Case]) -> None:
    result = evaluate(picked, read_traces(TRACES), ks=(2,))
    payload = result.to_json()
    assert set(payload) == {"aggregate", "cases", "config"}
    assert json.loads(json.dumps(payload)) == payload
    assert payload["config"]["ks"] == [2]
    assert payload["config"]["datasets"] == ["enterprise"]
    assert payload["config"]["measures"][:2] == ["chain_coverage@2", "hop1_recall@2"]
    assert len(payload["cases"]) == 4


def test_aggregate_by(picked: list[Case]) -> None:
    result = evaluate(picked, read_traces(TRACES), ks=(2,))
    by_type = result.aggregate_by("question_type")
    assert sorted(by_type) == ["(none)", "bridge", "comparison"]
    assert by_type["bridge"]["cases"] == 2 and by_type["bridge"]["missing_traces"] == 1
    assert by_type["bridge"]["chain_coverage@2"] == (1 + 0) / 2
    assert by_type["(none)"]["answer_em"] is None and by_type["(none)"]["na_answer_em"] == 1
    assert result.aggregate_by("dataset")["enterprise"]["cases"] == 3
    with pytest.raises(ValueError, match="question_type, dataset"):
        result.aggregate_by("split")


def _answer(case_id: str, text: str) -> Trace:
    return Trace(run_id="r", case_id=case_id, question="q", answer=Answer(text=text))


def test_duplicate_traces_last_wins(all_cases: dict[str, Case]) -> None:
    cases = [all_cases["ent-001"]]
    wrong, right = _answer("ent-001", "5 years"), _answer("ent-001", "7 years")
    first = evaluate(cases, [wrong, right], ks=(1,))
    assert first.aggregate["duplicate_traces"] == 1 and first.cases[0]["answer_em"] == 1.0
    assert evaluate(cases, [right, wrong], ks=(1,)).cases[0]["answer_em"] == 0.0


def test_no_traces_at_all(all_cases: dict[str, Case]) -> None:
    result = evaluate(list(all_cases.values()), [], ks=(5,))
    agg = result.aggregate
    assert agg["missing_traces"] == agg["cases"] == 16
    assert agg["chain_coverage@5"] == 0.0
    assert agg["latency_ms_p50"] is None and agg["n_latency_ms"] == 0


def test_custom_measures_and_errors(all_cases: dict[str, Case]) -> None:
    case = all_cases["ent-014"]
    t = Trace(
        run_id="r",
        case_id="ent-014",
        question="q",
        evidence=tuple(
            Evidence(
                hit=Hit(chunk_id=doc, doc_id=doc, score=1.0, rank=rank, retriever="x"),
                text="",
                title="",
                hop=rank,
                step_id="",
                sub_query="",
            )
            for rank, doc in enumerate(["catalog-3", "policy-14-v2"], start=1)
        ),
    )
    result = evaluate([case], [t], measures=[ChainCoverage @ 1, ChainCoverage @ 2])
    assert list(result.aggregate)[2:4] == ["chain_coverage@1", "chain_coverage@2"]
    assert (result.aggregate["chain_coverage@1"], result.aggregate["chain_coverage@2"]) == (0.0, 1.0)
    with pytest.raises(ValueError, match="duplicate names"):
        evaluate([case], [t], measures=[ChainCoverage @ 1, ChainCoverage @ 1])
    with pytest.raises(ValueError, match="k must be >= 1"):
        ChainCoverage.at(0)
    with pytest.raises(ValueError, match="unknown summary"):
        Measure("x", ChainCoverage.fn, summaries=("median",))
    with pytest.raises(InputError, match="duplicate case_id"):
        evaluate([case, case], [t])
    assert [str(m) for m in default_measures((5, 5))][:2] == ["chain_coverage@5", "hop1_recall@5"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"case_id": "ent-001"}\n{"case_id": \n', r"eval_bad\.jsonl:2: malformed JSON"),
        ('{"case_id": "ent-001"}\n\n{"question": "q"}\n', r"eval_bad\.jsonl:3: trace has no case_id \(field 'case_id'\)"),
        ('{"case_id": "  "}\n', r"eval_bad\.jsonl:1: trace has no case_id"),
        ('{"case_id": "ent-001", "evidence": [{"hit": {"rank": 1}}]}\n', r"eval_bad\.jsonl:1: .*\(field 'doc_id'\)"),
        ('{"case_id": "ent-001", "latency_ms": "fast"}\n', r"eval_bad\.jsonl:1: trace 'ent-001' is invalid"),
        ('{"case_id": "ent-001", "steps": ["s1"]}\n', r"eval_bad\.jsonl:1: trace 'ent-001' is invalid"),
        ("[1, 2]\n", r"eval_bad\.jsonl:1: expected a JSON object"),
    ],
)
def test_read_traces_errors(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "eval_bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=expected):
        read_traces(path)


def test_read_traces_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_traces(tmp_path / "nope.jsonl")
