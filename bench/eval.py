"""Bench: a 1,000-case evidence-chain evaluation with a 2,000-resample paired cluster bootstrap.

Cases are the bundled enterprise cases replicated under new ids (each copy its own graph path);
traces are synthetic but realistic: two hops of hits drawn (seeded) from each case's fact sources
and distractors, an evidence buffer, an answer with citations. Run: ``python bench/eval.py``.
The issue's bar is < 10 s for the whole evaluation, bootstrap included.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.compare import compare_runs
from hoprag.evaluation.stats import cluster_of, paired_cluster_bootstrap
from hoprag.records import Answer, Citation, Claim, Evidence, Hit, HopStep, Trace

ROOT = Path(__file__).resolve().parents[1]


def make_cases(n: int):
    base = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")
    out = []
    for i in range(n):
        case = base[i % len(base)]
        keys = case.split_keys.model_copy(update={"seed": f"{case.split_keys.seed}-{i // len(base)}"})
        out.append(case.model_copy(update={"case_id": f"{case.case_id}-{i:04d}", "split_keys": keys}))
    return out


def make_trace(case, rng: random.Random, quality: float) -> Trace:
    gold = [case.facts[f] for f in case.valid_chains[0]]
    noise = [d.source_id for d in case.distractors] or ["contract-09"]
    steps, evidence, clock = [], [], 0.0
    for hop in (1, 2):
        hits = []
        for rank in range(1, 11):
            if rng.random() < quality / rank:
                fact = rng.choice(gold)
                span = fact.spans[-1]
                hit = Hit(f"{fact.source_id}#0", fact.source_id, 10.0 / rank, rank, "bm25", span.start, span.end)
            else:
                doc = rng.choice(noise)
                hit = Hit(f"{doc}#0", doc, 10.0 / rank, rank, "bm25", 0, 400)
            hits.append(hit)
        latency = rng.uniform(5, 60)
        clock += latency
        step = HopStep(f"s{hop}", hop, case.query, case.query, tuple(hits), tuple(h.chunk_id for h in hits[:3]),
                       ("s1",) if hop == 2 else (), latency_ms=latency, cumulative_ms=clock)
        steps.append(step)
        evidence.extend(Evidence(h, "", "", hop, step.step_id, case.query) for h in hits[:3])
    answer_text = case.answers[0] if case.answers and rng.random() < quality else "unknown"
    claims = (Claim(answer_text, (Citation(evidence[0].chunk_id, evidence[0].doc_id, 1),)),)
    return Trace("bench", case.case_id, case.query, tuple(steps), tuple(evidence), Answer(answer_text, claims),
                 "sufficient", latency_ms=clock)


def main(n: int = 1000) -> float:
    rng = random.Random(7)
    cases = make_cases(n)
    a = [make_trace(c, rng, 0.5) for c in cases]
    b = [make_trace(c, rng, 0.7) for c in cases]
    t0 = time.perf_counter()
    report = evaluate_chains(cases, b, ks=(2, 5, 10), oracle_traces=a)
    t1 = time.perf_counter()
    ra = evaluate_chains(cases, a, ks=(10,))
    clusters = [cluster_of(c, "path") for c in cases]
    ci = paired_cluster_bootstrap([r["chain_coverage@10"] for r in ra.cases], [r["chain_coverage@10"] for r in report.cases],
                                  clusters, resamples=2000, seed=0)
    t2 = time.perf_counter()
    comparison = compare_runs(cases, a, b, k=10, resamples=2000, seed=0)
    t3 = time.perf_counter()
    coverage_row = next(r for r in comparison.rows if r["metric"] == "chain_coverage@10")
    print(f"{n} cases: full evaluation (all metrics, failures, conditional recall) {t1 - t0:.2f} s")
    print(f"second run + 2,000-resample paired cluster bootstrap ({ci.n_clusters} clusters) {t2 - t1:.2f} s "
          f"→ coverage@10 diff {ci.mean:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]")
    print(f"hoprag compare (two full evaluations + 5 bootstraps x 2,000) {t3 - t2:.2f} s "
          f"→ coverage@10 diff {coverage_row['diff']:+.3f} [{coverage_row['ci_low']:+.3f}, {coverage_row['ci_high']:+.3f}]")
    total = t2 - t0
    print(f"TOTAL evaluation + bootstrap: {total:.2f} s (bar: < 10 s); with compare: {t3 - t0:.2f} s")
    print("failure classes:", {k: v for k, v in report.failures.items() if v})
    return total


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
