"""Bench: evidence-chain evaluation at 10,000 cases, in process and through the CLI.

Cases are the bundled enterprise cases replicated under new ids (each copy its own graph path);
traces are synthetic but realistic: two hops of hits drawn (seeded) from each case's fact sources
and distractors, an evidence buffer, an answer with citations.

1. In process: every chain metric, then a second run plus a 2,000-resample paired cluster
   bootstrap, then ``compare_runs``.
2. The command line, as a user runs it, from process start to exit: ``hoprag eval CASES TRACES
   --json OUT`` and ``hoprag compare A B --cases CASES --json OUT`` on the files written to a
   temporary folder (wall and CPU seconds of the child process, the best of ``--repeat`` runs).
   With ``--peer-src DIR`` each command also runs with the ``hoprag`` package of another source tree
   (e.g. ``git worktree add ../before HEAD~3`` then ``--peer-src ../before/src``), alternating
   with this one, and its JSON output is compared with this tree's.

    python bench/eval.py [--cases 10000] [--json OUT] [--quick] [--command-line-only] [--repeat N] [--peer-src DIR]

The issue's bar: ``hoprag eval`` on 10,000 cases <= 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
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


def in_process(cases, a, b) -> dict:
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
    return {"evaluation_s": t1 - t0, "second_run_and_bootstrap_s": t2 - t1, "compare_runs_s": t3 - t2,
            "bootstrap_clusters": ci.n_clusters, "coverage_diff": [ci.mean, ci.low, ci.high],
            "compare_coverage_diff": [coverage_row["diff"], coverage_row["ci_low"], coverage_row["ci_high"]],
            "failures": {k: v for k, v in report.failures.items() if v}}


def timed_command(args: list[str], src: str | None = None) -> dict:
    """Wall and CPU seconds of one ``hoprag`` child process, from its start to its exit (``src``: the
    source tree whose ``hoprag`` package it runs; default this one)."""
    env = dict(os.environ, PYTHONPATH=src) if src else None
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "hoprag.cli", *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage, however many ran before it
    wall = time.perf_counter() - t0
    errors = child.stderr.read().decode("utf-8", "replace") if child.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"hoprag {args[0]} failed ({code}): {errors[-800:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mib": usage.ru_maxrss / 1024}


def _best(runs: list[dict]) -> dict:
    best = min(runs, key=lambda r: r["cpu_s"])
    return {**best, "runs": runs}


def command_line(cases, a, b, work: Path, *, repeat: int = 1, peer_src: str | None = None) -> dict:
    cases_file, a_file, b_file = work / "cases.jsonl", work / "a.jsonl", work / "b.jsonl"
    cases_file.write_text("".join(c.to_json() + "\n" for c in cases), encoding="utf-8")
    for path, traces in ((a_file, a), (b_file, b)):
        path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in traces), encoding="utf-8")
    commands = {
        "eval": lambda out: ["eval", str(cases_file), str(b_file), "--json", str(out)],
        "compare": lambda out: ["compare", str(a_file), str(b_file), "--cases", str(cases_file), "--json", str(out)],
    }
    figures: dict = {}
    for name, argv in commands.items():
        ours, peers = [], []
        for _ in range(repeat):  # alternating, so both trees see the same load
            if peer_src:
                peers.append(timed_command(argv(work / f"{name}.peer.json"), peer_src))
            ours.append(timed_command(argv(work / f"{name}.json")))
        figures[name] = _best(ours)
        if peer_src:
            peer = figures[f"{name}_peer"] = _best(peers)
            peer["same_json"] = (work / f"{name}.json").read_bytes() == (work / f"{name}.peer.json").read_bytes()
    return figures


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="number of cases (bar: 10,000)")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    parser.add_argument("--quick", action="store_true", help="a tiny run (100 cases) that only checks the bench starts")
    parser.add_argument("--command-line-only", action="store_true", help="skip the in-process timings")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command (the least CPU time is reported)")
    parser.add_argument("--peer-src", help="also run each command with the hoprag package of this source tree")
    args = parser.parse_args(argv)
    n = 100 if args.quick else args.cases
    rng = random.Random(7)
    cases = make_cases(n)
    a = [make_trace(c, rng, 0.5) for c in cases]
    b = [make_trace(c, rng, 0.7) for c in cases]
    figures = {"cases": n, "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0]}
    if not args.command_line_only:
        figures["in_process"] = p = in_process(cases, a, b)
        print(f"{n} cases: full evaluation (all metrics, failures, conditional recall) {p['evaluation_s']:.2f} s")
        print(f"second run + 2,000-resample paired cluster bootstrap ({p['bootstrap_clusters']} clusters) "
              f"{p['second_run_and_bootstrap_s']:.2f} s")
        print(f"compare_runs (two full evaluations + 5 bootstraps x 2,000) {p['compare_runs_s']:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        figures["command_line"] = c = command_line(cases, a, b, Path(tmp), repeat=max(1, args.repeat),
                                                   peer_src=args.peer_src)
    for name in ("eval", "compare"):
        for key, who in ((f"{name}_peer", "peer tree"), (name, "this tree")):
            if key not in c:
                continue
            row = c[key]
            same = "" if "same_json" not in row else f", JSON {'identical' if row['same_json'] else 'DIFFERENT'}"
            print(f"hoprag {name:<8} ({who}) process start to exit: {row['wall_s']:.2f} s wall, {row['cpu_s']:.2f} s CPU, "
                  f"peak RSS {row['peak_rss_mib']:.0f} MiB{same}" + ("  (bar: <= 10 s at 10,000 cases)" if key == "eval" else ""))
    figures["load_average_1m_end"] = os.getloadavg()[0]
    print(f"(load average {figures['load_average_1m']:.1f} at the start, {figures['load_average_1m_end']:.1f} at the end, "
          f"on {figures['cpus']} CPUs)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
