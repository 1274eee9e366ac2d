"""The pooled protocol on the bundled dev and train samples: chain coverage@5, passage recall@5 and
answer F1 of the default engines, by hop count and by the answer kind the question asks for.

    python bench/pooled.py                     # all three benchmarks, single-shot and multi-hop
    python bench/pooled.py musique --n 50      # one benchmark, the first 50 questions per sample
    python bench/pooled.py --json out.json     # also the figures as JSON
    python bench/pooled.py 2wiki --corpus 2wiki_dev_hipporag1000_corpus.json   # pool a larger corpus

Per benchmark, one index holds every bundled passage of it (the dev and train samples' contexts and
the HippoRAG corpora shipped with them), as larger evaluations search thousands of passages; the first
``--n`` questions (100) of the dev sample (MIGRES part 1) and of the train sample are asked over it:
default ``hoprag index`` + ``hoprag run``, BM25, offline engine, no model. Answer F1 follows each
benchmark's official normalisation (:mod:`hoprag.evaluation.answers`). Latency is wall time per
question in this process, so it moves with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from hoprag.datasets.importers import import_dataset
from hoprag.evaluation.answers import answer_f1
from hoprag.evaluation.hops import chain_coverage
from hoprag.evaluation.support import passage_recall
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.pipeline.answer_types import question_kind
from hoprag.pipeline.factory import make_engine

ROOT = Path(__file__).resolve().parents[1]
DATA, TRAIN = ROOT / "data", ROOT / "data" / "train"
K = 5
# benchmark: (format, {sample: question file}, other question files pooled, passage corpora pooled)
SETS = {
    "hotpotqa": ("hotpotqa",
                 {"dev": DATA / "hotpotqa/hotpot_dev_distractor_migres_part1.json",
                  "train": TRAIN / "hotpotqa/hotpot_train_hipporag100.json"},
                 [DATA / "hotpotqa/hotpot_dev_distractor_hoprag.json"],
                 [TRAIN / "hotpotqa/hotpot_train_hipporag100_corpus.json"]),
    "musique": ("musique",
                {"dev": DATA / "musique/musique_ans_dev_migres_part1.jsonl",
                 "train": TRAIN / "musique/musique_ans_train_hipporag100.jsonl"},
                [DATA / "musique/musique_ans_dev_hoprag.jsonl"],
                [TRAIN / "musique/musique_train_hipporag100_corpus.json"]),
    "2wiki": ("2wiki",
              {"dev": DATA / "2wikimultihopqa/2wiki_dev_migres_part1.json",
               "train": TRAIN / "2wikimultihopqa/2wiki_train_migres_part1.json"},
              [DATA / "2wikimultihopqa/2wiki_dev_hoprag.json"], []),
}


def hop_count(case) -> int:
    """Facts in the shortest valid chain (MuSiQue's '3hop1' → 3)."""
    return min((len(chain) for chain in case.valid_chains), default=0)


def _mean(values) -> float | None:
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 3) if kept else None


def _grouped(cases, rows, key) -> dict[str, dict]:
    groups: dict[str, list] = {}
    for case, row in zip(cases, rows):
        groups.setdefault(str(key(case)), []).append(row)
    return {g: {"n": len(r), **{m: _mean(x[m] for x in r) for m in ("cov5", "R5", "F1")}} for g, r in sorted(groups.items())}


def run_sample(index, cases, engine_name: str, **options) -> dict:
    """The figures of ``engine_name`` (``options``: its spec's settings, e.g. ``mode="hybrid"``) on ``cases``."""
    engine = make_engine(engine_name, index, **options)
    rows, latency = [], []
    for case in cases:
        start = time.perf_counter()
        trace = engine.answer(case.query, case_id=case.case_id)
        latency.append((time.perf_counter() - start) * 1000)
        rows.append({"cov5": chain_coverage(case, trace, K), "R5": passage_recall(case, trace, K), "F1": answer_f1(case, trace)})
    return {
        **{m: _mean(r[m] for r in rows) for m in ("cov5", "R5", "F1")},
        "p50_ms": round(statistics.median(latency), 1),
        "by_hops": _grouped(cases, rows, hop_count),
        "by_answer_kind": _grouped(cases, rows, lambda c: question_kind(c.query)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", help=f"benchmarks among {', '.join(SETS)} (default: all)")
    parser.add_argument("--corpus", type=Path, action="append", default=[],
                        help="extra passage corpus to pool (repeatable; with one benchmark named)")
    parser.add_argument("--n", type=int, default=100, help="questions per sample")
    parser.add_argument("--engines", default="single,multihop")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    unknown = [s for s in args.sets if s not in SETS]
    if unknown or (args.corpus and len(args.sets) != 1):
        parser.error(f"name benchmarks among {', '.join(SETS)}, and exactly one with --corpus")
    out: dict[str, dict] = {}
    for name in args.sets or list(SETS):
        fmt, samples, others, corpora = SETS[name]
        corpora = [*corpora, *args.corpus]
        pooled = import_dataset(fmt, [*samples.values(), *others], corpora)
        with tempfile.TemporaryDirectory() as tmp:
            build_index(pooled.documents, Path(tmp) / "index", IndexConfig())
            index = load_index(Path(tmp) / "index")
            for sample, path in samples.items():
                cases = import_dataset(fmt, [path]).cases[: args.n]
                row = {"questions": len(cases), "passages": len(pooled.documents)}
                for engine in args.engines.split(","):
                    row[engine] = run_sample(index, cases, engine)
                out[f"{name} {sample}"] = row
                figures = " · ".join(f"{e} cov@5 {row[e]['cov5']} R@5 {row[e]['R5']} F1 {row[e]['F1']} p50 {row[e]['p50_ms']} ms"
                                     for e in args.engines.split(","))
                print(f"{name} {sample} ({row['questions']} questions, {row['passages']} passages): {figures}", flush=True)
                last = row[args.engines.split(",")[-1]]
                for label in ("by_hops", "by_answer_kind"):
                    print(f"    {label}: " + "; ".join(f"{g} ({v['n']}) {v['cov5']}/{v['R5']}/{v['F1']}" for g, v in last[label].items()))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
