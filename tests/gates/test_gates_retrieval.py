"""Retrieval measures: hand-derived values, and equality with pytrec_eval / ir_measures on real runs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.measures.documents import parse_document_measure as parse_measure
from hoprag.evaluation.measures.documents import retrieval_measures
from hoprag.trec import read_qrels, read_run

QRELS = {"q1": {"a": 2, "b": 1, "c": 0, "z": 1}, "q2": {"x": 1}}
RUN = {"q1": {"c": 3.0, "a": 2.0, "b": 2.0, "d": 1.0}, "q2": {"y": 1.0}, "q3": {"a": 1.0}}


@pytest.mark.unit
def test_hand_computed_values() -> None:
    # q1 ranking by score desc, ties by docid desc: c (3.0), b (2.0), a (2.0), d (1.0)
    res = retrieval_measures(QRELS, RUN, ["P@2", "R@3", "RR", "nDCG@3", "Success@1", "AP", "nDCG"])
    q1 = {m: v["q1"] for m, v in res.per_query.items()}
    assert q1["P@2"] == pytest.approx(1 / 2)
    assert q1["R@3"] == pytest.approx(2 / 3)  # b and a of the three relevant (a, b, z)
    assert q1["RR"] == pytest.approx(1 / 2)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)  # b at rank 2, a at rank 3
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)  # ideal gains 2, 1, 1
    assert q1["nDCG@3"] == pytest.approx(dcg / idcg)
    assert q1["nDCG"] == pytest.approx(dcg / idcg)
    assert q1["Success@1"] == 0.0
    assert q1["AP"] == pytest.approx((1 / 2 + 2 / 3) / 3)
    assert res.queries == 2  # q3 has no qrels, q2 is judged: pytrec_eval's convention
    assert res.per_query["RR"]["q2"] == 0.0
    assert res.aggregate["P@2"] == pytest.approx((1 / 2 + 0) / 2)


@pytest.mark.unit
def test_include_missing_scores_absent_queries_zero() -> None:
    res = retrieval_measures({**QRELS, "q9": {"a": 1}}, RUN, ["RR"], include_missing=True)
    assert res.queries == 3 and res.per_query["RR"]["q9"] == 0.0


@pytest.mark.unit
def test_measure_names_errors_list_the_valid_ones() -> None:
    assert str(parse_measure("coverage@10")) == "Success@10"
    assert str(parse_measure("nDCG@10")) == "nDCG@10"
    for bad in ("P", "RR@5", "Foo@3", "P@0"):
        with pytest.raises(ConfigError, match="valid: P@k"):
            parse_measure(bad)


@pytest.mark.unit
def test_trec_readers_name_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "run.txt"
    bad.write_text("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 high tag\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"run.txt:2: score 'high'"):
        read_run(bad)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"qrels.txt:1: expected 4 columns"):
        read_qrels(qrels)


PYTREC = {"P@5": "P_5", "P@10": "P_10", "R@10": "recall_10", "R@100": "recall_100", "RR": "recip_rank",
          "nDCG@10": "ndcg_cut_10", "nDCG@100": "ndcg_cut_100", "nDCG": "ndcg", "Success@5": "success_5",
          "Success@10": "success_10", "AP": "map"}


@pytest.mark.integration
def test_equal_to_pytrec_eval_on_real_run(real_trec_pair: tuple[Path, Path, int]) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels_path, run_path, n = real_trec_pair
    assert n >= 1000
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    ours = retrieval_measures(qrels, run, list(PYTREC))
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)
    assert ours.queries == len(ref) >= 1000
    for name, trec_name in PYTREC.items():
        worst = max(abs(ours.per_query[name][q] - ref[q][trec_name]) for q in ref)
        assert worst <= 1e-9, (name, worst)
        mean = sum(ref[q][trec_name] for q in ref) / len(ref)
        assert abs(ours.aggregate[name] - mean) <= 1e-9


@pytest.mark.integration
def test_equal_to_ir_measures_aggregates(real_trec_pair: tuple[Path, Path, int]) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    qrels_path, run_path, _ = real_trec_pair
    names = ["P@5", "RR", "nDCG@10", "R@100", "AP"]
    ours = retrieval_measures(read_qrels(qrels_path), read_run(run_path), names)
    theirs = ir_measures.calc_aggregate([ir_measures.parse_measure(n) for n in names],
                                        ir_measures.read_trec_qrels(str(qrels_path)),
                                        ir_measures.read_trec_run(str(run_path)))
    for name in names:
        assert abs(ours.aggregate[name] - theirs[ir_measures.parse_measure(name)]) <= 1e-9, name


@pytest.mark.unit
@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 3), min_size=1),
       st.dictionaries(st.sampled_from("abcdefghij"), st.floats(-5, 5, allow_nan=False), min_size=1))
def test_bounds_and_monotone_cutoffs(judged: dict[str, int], ranked: dict[str, float]) -> None:
    res = retrieval_measures({"q": judged}, {"q": ranked}, ["P@3", "R@3", "R@8", "nDCG@3", "RR", "AP", "Success@3"])
    for name, values in res.per_query.items():
        assert 0.0 <= values["q"] <= 1.0 + 1e-12, name
    assert res.per_query["R@3"]["q"] <= res.per_query["R@8"]["q"]
