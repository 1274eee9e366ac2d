"""Paired cluster bootstrap (hand-checked) and TREC exports read back by pytrec_eval."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.stats import paired_cluster_bootstrap
from hoprag.evaluation.measures.documents import retrieval_measures
from hoprag.evaluation.qrels import case_qrels, qrels_from_cases, ranked_docs, run_from_traces
from hoprag.trec import read_qrels, read_run, write_qrels, write_run
from hoprag.records import Evidence, Hit, Trace

pytestmark = pytest.mark.unit
CASES = {c.case_id: c for c in load_cases(Path(__file__).parents[2] / "data" / "enterprise" / "cases.jsonl")}


def test_bootstrap_hand_values() -> None:
    # identical differences: every replicate equals the mean, so the interval collapses
    ci = paired_cluster_bootstrap([0, 0, 0, 0], [1, 1, 1, 1], ["a", "a", "b", "c"], resamples=500, seed=3)
    assert (ci.mean, ci.low, ci.high, ci.n_clusters, ci.p_value) == (1.0, 1.0, 1.0, 3, 0.0)
    # two clusters: sums (2, 0) counts (2, 1); replicates are 1 (aa), 2/3 (ab/ba) or 0 (bb)
    ci = paired_cluster_bootstrap([0, 0, 0], [1, 1, 0], ["x", "x", "y"], resamples=4000, seed=1)
    assert ci.mean == pytest.approx(2 / 3) and ci.low == 0.0 and ci.high == 1.0
    rng = np.random.default_rng(1)
    draws = rng.integers(0, 2, size=(4000, 2))
    means = np.array([2.0, 0.0])[draws].sum(1) / np.array([2.0, 1.0])[draws].sum(1)
    assert ci.p_value == pytest.approx(min(1.0, 2 * min(np.mean(means <= 0), np.mean(means >= 0))))
    again = paired_cluster_bootstrap([0, 0, 0], [1, 1, 0], ["x", "x", "y"], resamples=4000, seed=1)
    assert again == ci  # seeded
    missing = paired_cluster_bootstrap([None, 0.5, 1.0], [1.0, None, 1.0], ["a", "b", "c"])
    assert (missing.n, missing.excluded, missing.mean) == (1, 2, 0.0)
    with pytest.raises(ValueError, match="one entry per case"):
        paired_cluster_bootstrap([1], [1, 2], ["a"])


def _trace(case_id: str, docs: list[str]) -> Trace:
    ev = tuple(Evidence(Hit(f"{d}#0", d, 1.0, i, "t"), "", "", 1, "s1", "") for i, d in enumerate(docs, 1))
    return Trace("r", case_id, "q", evidence=ev)


@pytest.mark.parametrize("clusters,resamples", [(1, 50), (3, 2000), (999, 1200), (10_000, 300), (1_500_000, 3)])
def test_replicates_drawn_in_blocks_equal_one_draw_of_them_all(clusters: int, resamples: int) -> None:
    from hoprag.evaluation.stats import _replicate_means

    data = np.random.default_rng(5)
    sums, counts = data.normal(size=clusters), data.integers(1, 4, size=clusters).astype(float)
    draws = np.random.default_rng(11).integers(0, clusters, size=(resamples, clusters))
    expected = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    got = _replicate_means(sums, counts, resamples, np.random.default_rng(11))
    assert got.tobytes() == expected.tobytes()  # the same floats, bit for bit


def test_trec_round_trip_through_pytrec_eval(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    cases = [CASES["ent-003"], CASES["ent-014"]]
    # ent-003 relevant docs: contract-31 (1), ticket-2290 (1), policy-11 (2); distractors policy-17, faq-10 at 0
    assert case_qrels(cases[0]) == {"contract-31": 1, "ticket-2290": 1, "policy-11": 2, "policy-17": 0, "faq-10": 0}
    traces = [_trace("ent-003", ["faq-10", "policy-11", "policy-11", "contract-31", "memo-4"]),
              _trace("ent-014", ["policy-14-v1", "catalog-3"])]
    assert ranked_docs(traces[0]) == ["faq-10", "policy-11", "contract-31", "memo-4"]
    write_qrels(tmp_path / "eval4.qrels", qrels_from_cases(cases))
    write_run(tmp_path / "eval4.run", run_from_traces(traces))
    qrels, run = read_qrels(tmp_path / "eval4.qrels"), read_run(tmp_path / "eval4.run")
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"P.2", "recall.5", "recip_rank"}).evaluate(run)
    # ent-003: ranks faq-10, policy-11, contract-31, memo-4 -> P@2 = 1/2, recall@5 = 2/3, RR = 1/2
    assert scores["ent-003"]["P_2"] == pytest.approx(0.5)
    assert scores["ent-003"]["recall_5"] == pytest.approx(2 / 3)
    assert scores["ent-003"]["recip_rank"] == pytest.approx(0.5)
    # ent-014: policy-14-v1 (obsolete distractor, 0), catalog-3 (1); policy-14-v2 never retrieved
    assert scores["ent-014"]["recall_5"] == pytest.approx(1 / 2)
    assert scores["ent-014"]["recip_rank"] == pytest.approx(0.5)
    ours = retrieval_measures(qrels, run, ["R@5", "P@2"]).per_query
    for case in cases:
        assert ours["R@5"][case.case_id] == pytest.approx(scores[case.case_id]["recall_5"])
        assert ours["P@2"][case.case_id] == pytest.approx(scores[case.case_id]["P_2"])
    ir_measures = pytest.importorskip("ir_measures")
    got = ir_measures.calc_aggregate([ir_measures.R @ 5], ir_measures.read_trec_qrels(str(tmp_path / "eval4.qrels")),
                                     ir_measures.read_trec_run(str(tmp_path / "eval4.run")))
    assert got[ir_measures.R @ 5] == pytest.approx((2 / 3 + 1 / 2) / 2)
