"""CPU per question of the service's answer path, part by part, on one thread (warm caches).

For each demo set (``hoprag demo --out DIR``): open the index as ``hoprag serve`` does, answer every
case's question through the service's engine pool (offline multi-hop engine, BM25, top clearance)
once to warm the caches a long-running server has, then ``--passes`` more times, timing each part
with the process's CPU clock (``time.process_time``: every thread of the process, so the engine's
hop threads count too):

* engine: ``EnginePool.answer`` (plan, hops, reranking, judge, extractive answer);
* view: :func:`hoprag.service.views.answer_view` (what ``POST /api/ask`` returns);
* redact: :func:`hoprag.security.boundary.trace_for_storage` (the stored trace's redaction);
* json: ``json.dumps`` of the view;
* store: ``RunStore.add_traces`` of the redacted trace into a SQLite run store in a temporary folder,
  eight at a time as the service's writer batches them (charged per question).

    python bench/question_cpu.py --demo demo-output [--sets hotpotqa,musique] [--passes 3]
    python bench/question_cpu.py --demo data --sets enterprise   # a set folder without index/ is indexed first

Run it before and after a change on one machine, in one sitting: on a shared machine the figures
move with the load (reported beside them).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

SETS = ("hotpotqa", "musique", "2wiki", "enterprise")
PARTS = ("engine", "view", "redact", "json", "store")


def measure(set_dir: Path, passes: int) -> dict[str, float]:
    """Milliseconds of CPU per question for each part, over ``passes`` warm passes."""
    from hoprag.index.open import open_index
    from hoprag.security.acl import ClearancePolicy
    from hoprag.security.boundary import trace_for_storage
    from hoprag.service.engines import EnginePool
    from hoprag.service.views import answer_view
    from hoprag.store import RunStore

    if not (set_dir / "index").exists():  # a set folder holding corpus.jsonl and cases.jsonl: index it as the demo does
        from hoprag.index.store import build_index
        from hoprag.ingest.loaders import load_documents

        build_index(load_documents(set_dir / "corpus.jsonl"), set_dir / "index")
    index = open_index(set_dir / "index")
    questions = [json.loads(line)["query"] for line in (set_dir / "cases.jsonl").read_text().splitlines() if line.strip()]
    policy = ClearancePolicy()
    pool = EnginePool(index, policy)
    clearance = policy.levels[-1]
    spent = dict.fromkeys(PARTS, 0.0)
    store = RunStore(f"sqlite:///{tempfile.mkdtemp(prefix='question-cpu-')}/runs.db")
    pending: list = []

    def one_pass(count: bool) -> None:
        for i, question in enumerate(questions):
            t0 = time.process_time()
            trace = pool.answer(question, trace_id=f"q{i}", run_id="bench", clearance=clearance, use_llm=False)
            t1 = time.process_time()
            view = answer_view(trace, pool.view(clearance), stored=True, clearance=clearance)
            t2 = time.process_time()
            pending.append(trace_for_storage(trace, "service-traces"))
            t3 = time.process_time()
            json.dumps(view, ensure_ascii=False)
            t4 = time.process_time()
            if len(pending) == 8:
                store.add_traces("bench", pending)
                pending.clear()
            t5 = time.process_time()
            if count:
                for part, seconds in zip(PARTS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                    spent[part] += seconds

    one_pass(False)
    for _ in range(passes):
        one_pass(True)
    n = passes * len(questions)
    return {part: round(1000.0 * seconds / n, 2) for part, seconds in spent.items()} | {
        "total": round(1000.0 * sum(spent.values()) / n, 2), "questions": len(questions)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=Path("demo-output"), help="a hoprag demo --out folder")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    report = {"passes": args.passes, "load_average_before": os.getloadavg()[0]}
    for name in args.sets.split(","):
        report[name] = measure(args.demo / name, args.passes)
    report["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
