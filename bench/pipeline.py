"""Pipeline benchmark: where a question's time goes, and what running independent hops concurrently buys.

    python bench/pipeline.py [--delay 0.2] [--json] [--quick]

1. Offline multi-hop engine on the pooled demo corpus (every bundled question over the union of all
   sets' passages): per-question latency split into planning / retrieval / ranking / synthesis.
2. Concurrency: a plan with independent dependent sub-queries whose conditioning calls a backend
   with a fixed per-call delay; wall time with the hops run concurrently vs one after another.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from hoprag.datasets.importers import import_dataset
from hoprag.datasets.schema import load_cases
from hoprag.index.store import build_index, load_index
from hoprag.ingest.loaders import load_documents
from hoprag.llm.fake import ScriptedLLM
from hoprag.pipeline.engine import MultiHopConfig
from hoprag.pipeline.llm_roles import LLMExpander
from hoprag.pipeline.multihop import MultiHopEngine
from hoprag.pipeline.plan import Plan, SubQuery

DATA = Path(__file__).resolve().parents[1] / "data"


def pooled_corpus():
    documents, questions = {}, []
    for fmt, folder, pattern in (("hotpotqa", "hotpotqa", "*.json"), ("musique", "musique", "*.jsonl"), ("2wiki", "2wikimultihopqa", "*.json")):
        result = import_dataset(fmt, sorted((DATA / folder).glob(pattern)))
        documents.update({d.id: d for d in result.documents})
        questions += [c.query for c in result.cases]
    for doc in load_documents(DATA / "enterprise" / "corpus.jsonl"):
        documents[doc.id] = doc
    questions += [c.query for c in load_cases(DATA / "enterprise" / "cases.jsonl")]
    return list(documents.values()), questions


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def latency_split(index, questions):
    engine = MultiHopEngine(index.retriever(), index.chunks, index.documents)
    engine.answer(questions[0])  # warm the term statistics
    phases = {"planning_ms": [], "retrieval_ms": [], "ranking_ms": [], "synthesis_ms": [], "total_ms": [], "calls": []}
    for question in questions:
        trace = engine.answer(question)
        for name in ("planning_ms", "retrieval_ms", "ranking_ms", "synthesis_ms"):
            phases[name].append(trace.timings[name])
        phases["total_ms"].append(trace.latency_ms)
        phases["calls"].append(len(trace.steps))
    return {name: {"mean": statistics.fmean(v), "p50": pct(v, 50), "p95": pct(v, 95)} for name, v in phases.items()}


class FixedPlanner:
    """Three facts about one anchor, each needing the anchor's bridge value: one hop of independent branches."""

    name = "fixed-bench"

    def plan(self, question: str) -> Plan:
        return Plan(
            sub_queries=[
                SubQuery(order=1, query=question),
                SubQuery(order=2, query="birth place of the person found", depends_on=[1]),
                SubQuery(order=3, query="spouse of the person found", depends_on=[1]),
                SubQuery(order=4, query="awards of the person found", depends_on=[1]),
            ]
        )


def concurrency(index, questions, delay: float, n: int = 6):
    def engine(parallelism: int):
        llm = ScriptedLLM(default={"queries": [{"query": "Neil Peart drummer", "bridge": "Neil Peart"}]}, delay=delay)
        e = MultiHopEngine(
            index.retriever(), index.chunks, index.documents, MultiHopConfig(parallelism=parallelism, max_hops=2, cache_size=0), planner=FixedPlanner()
        )
        e.expander = LLMExpander(llm, e.bridges)
        return e

    timings = {}
    for label, parallelism in (("sequential", 1), ("concurrent", 4)):
        e = engine(parallelism)
        start = time.perf_counter()
        for question in questions[:n]:
            e.answer(question)
        timings[label] = (time.perf_counter() - start) / n
        e.close()
    return {
        "delay_s": delay,
        "questions": n,
        "independent_branches": 3,
        "sequential_s_per_question": timings["sequential"],
        "concurrent_s_per_question": timings["concurrent"],
        "ratio": timings["concurrent"] / timings["sequential"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2, help="per-call backend delay in seconds")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="10 questions, 10 ms per call: only checks the bench starts")
    args = parser.parse_args()
    documents, questions = pooled_corpus()
    if args.quick:
        questions, args.delay = questions[:10], 0.01
    with tempfile.TemporaryDirectory() as tmp:
        build_index(documents, Path(tmp) / "index")
        index = load_index(Path(tmp) / "index")
        split = latency_split(index, questions)
        conc = concurrency(index, questions, args.delay)
    result = {"documents": len(documents), "questions": len(questions), "latency": split, "concurrency": conc}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"offline multi-hop engine, pooled corpus: {len(documents)} passages, {len(questions)} questions")
    print(f"{'phase':<14}{'mean ms':>10}{'p50 ms':>10}{'p95 ms':>10}")
    for name, row in split.items():
        print(f"{name:<14}{row['mean']:>10.2f}{row['p50']:>10.2f}{row['p95']:>10.2f}")
    print(
        f"independent hops, {conc['delay_s'] * 1000:.0f} ms per backend call, {conc['independent_branches']} branches: "
        f"sequential {conc['sequential_s_per_question']:.3f} s/question, concurrent {conc['concurrent_s_per_question']:.3f} s/question, "
        f"ratio {conc['ratio']:.2f}x (target <= 0.6x)"
    )


if __name__ == "__main__":
    main()
