"""Bench: ``hoprag eval`` on bench/eval.py's 10,000 cases: one process, forked processes, Ray with 2 workers.

The cases and the two runs' traces are bench/eval.py's (the enterprise cases replicated under new
ids, seeded synthetic traces). Measured in one run, so the figures share the machine's load:

1. The command line, process start to exit (wall seconds, and the CPU seconds of the ``hoprag``
   process and the children it waited for; a Ray instance's own daemons are not among them):
   ``hoprag eval CASES TRACES --json OUT`` scoring in its own process (``--workers 1``), as it runs
   by default (the local executor: a forked scoring process per CPU), and with ``--executor ray
   --workers 2`` (Ray started by the command),
   the three in turn, ``--repeat`` times; each figure is the fastest of its repeats. The JSON files
   must be byte-identical (exit 1 otherwise).
2. In process, the scoring alone (cases and traces already loaded; with the second run as the
   oracle run): :func:`evaluate_chains` in this process and on 2 forked processes in turn, then
   ``ray.init(num_cpus=2)`` timed on its own (Ray's threads would keep the process from forking),
   then on Ray with 2 workers (starting the two actors included), each the fastest of
   ``--repeat``. The reports must be equal.

    python bench/eval_executor.py [--cases 10000] [--repeat 2] [--json OUT] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eval import make_cases, make_trace  # bench/eval.py: the same cases and traces

from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.executors import RayExecutor
from hoprag.forks import ProcessExecutor

COMMANDS = {"local, --workers 1": ["--workers", "1"], "local, default": [],
            "ray, 2 workers": ["--executor", "ray", "--workers", "2"]}


def timed_eval(args: list[str]) -> dict:
    """Wall and CPU seconds of one ``hoprag eval`` child process, from its start to its exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "hoprag.cli", "eval", *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"hoprag eval {' '.join(args)} failed: {done.stderr[-800:]}")
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def command_line(cases, traces, work: Path, repeat: int) -> dict:
    cases_file, traces_file = work / "cases.jsonl", work / "traces.jsonl"
    cases_file.write_text("".join(c.to_json() + "\n" for c in cases), encoding="utf-8")
    traces_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in traces), encoding="utf-8")
    runs: dict[str, list[dict]] = {name: [] for name in COMMANDS}
    outputs = set()
    for _ in range(repeat):
        for name, extra in COMMANDS.items():
            json_out = work / "eval.json"
            runs[name].append(timed_eval([str(cases_file), str(traces_file), "--json", str(json_out), *extra]))
            outputs.add(json_out.read_bytes())
    out: dict = {name: {"wall_s": min(r["wall_s"] for r in rows), "cpu_s": min(r["cpu_s"] for r in rows), "runs": rows}
                 for name, rows in runs.items()}
    out["json_identical"] = len(outputs) == 1
    return out


def in_process(cases, traces, oracle, repeat: int) -> dict:
    import ray

    figures: dict = {"local_s": [], "forked_2_s": [], "ray_2_workers_s": []}
    reports = set()

    def score(key: str, executor) -> None:
        t1 = time.perf_counter()
        report = evaluate_chains(cases, traces, oracle_traces=oracle, executor=executor)
        figures[key].append(time.perf_counter() - t1)
        reports.add(json.dumps(report.to_json()))

    for _ in range(repeat):  # before Ray starts its threads in this process (a fork needs a single thread)
        score("local_s", None)
        score("forked_2_s", ProcessExecutor(workers=2))
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    figures["ray_init_s"] = time.perf_counter() - t0
    try:
        for _ in range(repeat):
            score("ray_2_workers_s", RayExecutor(workers=2))
    finally:
        ray.shutdown()
    return {**figures, "local_best_s": min(figures["local_s"]), "forked_best_s": min(figures["forked_2_s"]),
            "ray_best_s": min(figures["ray_2_workers_s"]), "reports_equal": len(reports) == 1}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="number of cases (default: the bench's 10,000)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each configuration, in turn (the fastest is reported)")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    parser.add_argument("--quick", action="store_true", help="a tiny run (100 cases) that only checks the bench starts")
    args = parser.parse_args(argv)
    n, repeat = (100, 1) if args.quick else (args.cases, max(1, args.repeat))
    rng = random.Random(7)
    cases = make_cases(n)
    a = [make_trace(c, rng, 0.5) for c in cases]
    b = [make_trace(c, rng, 0.7) for c in cases]
    figures: dict = {"cases": n, "cpus": os.cpu_count(), "load_average_1m_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        figures["command_line"] = command_line(cases, b, Path(tmp), repeat)
    figures["in_process"] = in_process(cases, b, a, repeat)
    figures["load_average_1m_after"] = os.getloadavg()[0]
    c, p = figures["command_line"], figures["in_process"]
    base = c["local, --workers 1"]["wall_s"]
    for name in COMMANDS:
        row = c[name]
        print(f"hoprag eval, {name:<18} process start to exit: {row['wall_s']:6.2f} s wall ({base / row['wall_s']:.2f}x "
              f"one process), {row['cpu_s']:6.2f} s CPU")
    print(f"scoring alone: one process {p['local_best_s']:.2f} s, 2 forked {p['forked_best_s']:.2f} s "
          f"({p['local_best_s'] / p['forked_best_s']:.2f}x), Ray with 2 workers {p['ray_best_s']:.2f} s "
          f"({p['local_best_s'] / p['ray_best_s']:.2f}x), ray.init {p['ray_init_s']:.2f} s on its own")
    print(f"{n} cases, fastest of {repeat}; JSON identical on every executor: {c['json_identical']}; reports equal: {p['reports_equal']} "
          f"(load average {figures['load_average_1m_before']:.1f} → {figures['load_average_1m_after']:.1f} on "
          f"{figures['cpus']} CPUs)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if not (c["json_identical"] and p["reports_equal"]):
        raise SystemExit("the executors disagree")
    return figures


if __name__ == "__main__":
    main()
