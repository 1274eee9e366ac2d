"""hoprag's retrieval measures vs pytrec_eval on 10,000 queries x 100 hits: time and equality.

    python bench/metrics.py [--queries 10000] [--hits 100] [--repeat 3]

A seeded synthetic run (graded qrels 0-3 on 10 judged documents per query, scores with ties) is
scored by both; the best of ``--repeat`` wall times is reported (pytrec_eval's includes building
its evaluator, since a run is scored once), with the largest per-query difference.
"""

from __future__ import annotations

import argparse
import random
import time

MEASURES = {"P@5": "P_5", "P@10": "P_10", "RR": "recip_rank", "nDCG@10": "ndcg_cut_10", "R@100": "recall_100",
            "AP": "map"}


def make_run(queries: int, hits: int, seed: int = 7) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(queries):
        docs = [f"d{rng.randrange(hits * 20)}" for _ in range(hits)]
        qrels[f"q{q}"] = {d: rng.choice((0, 1, 1, 2, 3)) for d in rng.sample(docs, 10)}
        run[f"q{q}"] = {d: round(rng.random(), 2) for d in docs}
    return qrels, run


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10000)
    parser.add_argument("--hits", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pytrec_eval

    from hoprag.evaluation.measures.documents import retrieval_measures

    qrels, run = make_run(args.queries, args.hits)
    ours_s, ours = best_of(lambda: retrieval_measures(qrels, run, list(MEASURES)), args.repeat)
    theirs_s, theirs = best_of(
        lambda: pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values())).evaluate(run), args.repeat)
    worst = max(abs(ours.per_query[m][q] - theirs[q][t]) for m, t in MEASURES.items() for q in theirs)
    print(f"{args.queries} queries x {args.hits} hits, measures {', '.join(MEASURES)}")
    print(f"hoprag      {ours_s:.3f} s")
    print(f"pytrec_eval {theirs_s:.3f} s")
    print(f"ratio hoprag/pytrec_eval = {ours_s / theirs_s:.2f}  (max per-query difference {worst:.2e})")


if __name__ == "__main__":
    main()
