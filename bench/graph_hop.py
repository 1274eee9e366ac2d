"""The graph hop on the six bundled samples: chain coverage@5 and supporting-passage recall@5 of
single-shot, multi-hop without and with the graph hop, split by question type and hop count, plus
index build time (wall and CPU, caches emptied before each build) and query latency with the graph
off and on.

    python bench/graph_hop.py                 # all six samples, markdown tables
    python bench/graph_hop.py --json out.json # also the figures as JSON

It also checks the local walk (forward push, ``hoprag.pipeline.local_ppr``) against the power
iteration over the whole graph it replaced: every walk the graph engine makes on a sample is run
again by both, at each ``--epsilon``, and the table gives the share of walks whose proposals (in
order) and whose top-10 chunks are the same, with each walk's mean time.

Samples (paths relative to the repository; the training-split ones under ``data/train``): the bundled dev
sets as the demo pools them (HopRAG quickstart + MIGRES part 1 per benchmark), and the
training-split samples (HotpotQA and MuSiQue with the HippoRAG corpora they ship with, 2Wiki
MIGRES part 1 pooled). Each sample is searched over its own corpus, BM25, offline engine, no model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from hoprag.datasets.importers import import_dataset
from hoprag.evaluation.runner import evaluate
from hoprag.evaluation.support import passage_recall
from hoprag.index import entities
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.ingest.text import fold
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.graph_hop import GraphHop, personalized_pagerank, transition_matrix
from hoprag.pipeline.local_ppr import EPSILON, PushResult

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "data" / "train"  # the training-split samples (DATA_LICENSES.md)
K = 5
BUILDS = 3  # builds per setting; the fastest is kept
EPSILONS = (1e-5, EPSILON, 1e-7, 1e-8)

SAMPLES = {
    "HotpotQA dev": ("hotpotqa", ["data/hotpotqa/hotpot_dev_distractor_hoprag.json",
                                  "data/hotpotqa/hotpot_dev_distractor_migres_part1.json"], []),
    "MuSiQue dev": ("musique", ["data/musique/musique_ans_dev_hoprag.jsonl",
                                "data/musique/musique_ans_dev_migres_part1.jsonl"], []),
    "2Wiki dev": ("2wiki", ["data/2wikimultihopqa/2wiki_dev_hoprag.json",
                            "data/2wikimultihopqa/2wiki_dev_migres_part1.json"], []),
    "HotpotQA train": ("hotpotqa", ["SHARED/hotpotqa/hotpot_train_hipporag100.json"],
                       ["SHARED/hotpotqa/hotpot_train_hipporag100_corpus.json"]),
    "MuSiQue train": ("musique", ["SHARED/musique/musique_ans_train_hipporag100.jsonl"],
                      ["SHARED/musique/musique_train_hipporag100_corpus.json"]),
    "2Wiki train": ("2wiki", ["SHARED/2wikimultihopqa/2wiki_train_migres_part1.json"], []),
}
ROWS = (("single", "single", None), ("multihop", "multihop", False), ("multihop+graph", "multihop", True))


def _path(name: str) -> Path:
    return SHARED / name[len("SHARED/"):] if name.startswith("SHARED/") else ROOT / name


def hop_count(case) -> int:
    """Facts in the shortest valid chain (MuSiQue's '3hop1' → 3)."""
    return min((len(chain) for chain in case.valid_chains), default=0)


def _timed_build(documents, out: Path, graph: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one build, with the process's text caches emptied first (as in a fresh
    ``hoprag index``: a warm cache would hand the second build the first one's work)."""
    fold.cache_clear()
    entities._mention.cache_clear()
    start, cpu = time.perf_counter(), time.process_time()
    build_index(documents, out, IndexConfig(graph=graph))
    return time.perf_counter() - start, time.process_time() - cpu


class PowerIterationHop(GraphHop):
    """The walk as it was before the local push: power iteration over the whole graph (scipy)."""

    def __init__(self, graph) -> None:
        from scipy import sparse

        super().__init__(graph)
        mentions, links = graph.entity_chunk.astype(np.float64), graph.chunk_chunk.astype(np.float64)
        adjacency = sparse.bmat([[None, mentions], [mentions.T, links]], format="csr")
        self.transition_t = transition_matrix(adjacency)

    def walk(self, seed):
        vector = np.zeros(self.transition_t.shape[0])
        for node, mass in seed.items():
            vector[node] += mass
        scores = personalized_pagerank(self.transition_t, vector)
        nodes = np.flatnonzero(scores > 0)
        return PushResult(nodes, scores[nodes], self.transition_t.nnz, 0.0, False)


def walk_agreement(index, cases, epsilons=EPSILONS) -> dict:
    """Every walk the graph engine makes on ``cases``, run by the power iteration and by the push at
    each epsilon: shares of equal proposals and equal top-10 chunks, and mean ms per walk."""
    engine = make_engine("multihop", index, graph=True)
    calls = []
    original = engine.graph_hop.propose

    def recording(question, held, **kw):
        calls.append((question, dict(held), kw))
        return original(question, held, **kw)

    engine.graph_hop.propose = recording
    for case in cases:
        engine.answer(case.query)

    def run(hop):
        start = time.perf_counter()
        found = [hop.propose(q, held, **kw) for q, held, kw in calls]
        return found, (time.perf_counter() - start) * 1000 / max(len(calls), 1)

    def key(p):
        return ([c for c, _ in p.proposed], [c for c, _ in p.ranked[:10]]) if p is not None else ([], [])

    reference, ref_ms = run(PowerIterationHop(index.graph))
    out = {"walks": len(calls), "power_ms": round(ref_ms, 3), "push": {}}
    for eps in epsilons:
        found, ms = run(GraphHop(index.graph, epsilon=eps))
        same = [key(a)[0] == key(b)[0] for a, b in zip(reference, found)]
        top = [key(a)[1] == key(b)[1] for a, b in zip(reference, found)]
        out["push"][f"{eps:g}"] = {"same_proposals": _share(same), "same_top10": _share(top), "ms": round(ms, 3)}
    return out


def _share(flags) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 1.0


def run_sample(name: str) -> dict:
    fmt, files, corpora = SAMPLES[name]
    result = import_dataset(fmt, [_path(f) for f in files], extra_corpora=[_path(c) for c in corpora])
    cases = result.cases
    with tempfile.TemporaryDirectory() as tmp:
        # builds without and with the graph, alternating, three of each, the fastest kept (wall and
        # CPU apart): the machine is shared, and CPU seconds move less with its load
        _timed_build(result.documents, Path(tmp) / "warm", True)  # imports and first-use compiles
        times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for i in range(BUILDS):
            for graph in (False, True):
                times[graph].append(_timed_build(result.documents, Path(tmp) / f"{'graph' if graph else 'plain'}{i}", graph))
        plain, graphed = (min(t for t, _ in times[g]) for g in (False, True))
        plain_cpu, graphed_cpu = (min(c for _, c in times[g]) for g in (False, True))
        index = load_index(Path(tmp) / "graph0")
        info = index.manifest.graph
        out = {"questions": len(cases), "passages": len(result.documents), "chunks": index.manifest.chunk_count,
               "build_s": {"no_graph": round(plain, 3), "graph": round(graphed, 3),
                           "graph_part": info.build_seconds, "ratio": round(graphed / plain, 3),
                           "no_graph_cpu": round(plain_cpu, 3), "graph_cpu": round(graphed_cpu, 3),
                           "cpu_ratio": round(graphed_cpu / plain_cpu, 3)},
               "graph": info.model_dump(exclude={"config", "directory"}), "rows": {}}
        for label, engine_name, graph in ROWS:
            engine = make_engine(engine_name, index, graph=graph)
            engine.answer(cases[0].query)  # warm the caches every engine builds once
            traces, latencies = [], []
            for case in cases:
                start = time.perf_counter()
                traces.append(engine.answer(case.query, case_id=case.case_id))
                latencies.append((time.perf_counter() - start) * 1000)
            evaluation = evaluate(cases, traces, ks=(K,))
            by_id = {t.case_id: t for t in traces}
            recall = {c.case_id: passage_recall(c, by_id[c.case_id], K) for c in cases}
            coverage = {row["case_id"]: row.get(f"chain_coverage@{K}") for row in evaluation.cases}

            def split(key) -> dict:
                groups: dict[str, list] = {}
                for case in cases:
                    groups.setdefault(str(key(case)), []).append(case.case_id)
                return {g: {"n": len(ids), "cov": _mean(coverage[i] for i in ids), "recall": _mean(recall[i] for i in ids)}
                        for g, ids in sorted(groups.items())}

            out["rows"][label] = {
                "chain_coverage@5": evaluation.aggregate[f"chain_coverage@{K}"],
                "passage_recall@5": _mean(recall.values()),
                "latency_ms_p50": round(statistics.median(latencies), 2),
                "latency_ms_mean": round(statistics.fmean(latencies), 2),
                "by_type": split(lambda c: c.question_type or "(none)"),
                "by_hops": split(hop_count),
            }
        out["walk"] = walk_agreement(index, cases)
    return out


def _mean(values) -> float:
    found = [v for v in values if v is not None]
    return round(sum(found) / len(found), 4) if found else 0.0


def render(results: dict) -> str:
    lines = ["| sample | q | passages | single cov@5 | multi-hop cov@5 | + graph cov@5 | single R@5 | multi-hop R@5 | + graph R@5 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        rows = r["rows"]
        cells = [f"{rows[x]['chain_coverage@5']:.3f}" for x in ("single", "multihop", "multihop+graph")]
        cells += [f"{rows[x]['passage_recall@5']:.3f}" for x in ("single", "multihop", "multihop+graph")]
        lines.append(f"| {name} | {r['questions']} | {r['passages']:,} | " + " | ".join(cells) + " |")
    lines += ["", "| sample | split | n | single cov@5 | multi-hop cov@5 | + graph cov@5 | single R@5 | + graph R@5 |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        for kind in ("by_type", "by_hops"):
            for group, g in r["rows"]["multihop+graph"][kind].items():
                s, m = r["rows"]["single"][kind][group], r["rows"]["multihop"][kind][group]
                label = group if kind == "by_type" else f"{group} facts"
                lines.append(f"| {name} | {label} | {g['n']} | {s['cov']:.3f} | {m['cov']:.3f} | {g['cov']:.3f} | "
                             f"{s['recall']:.3f} | {g['recall']:.3f} |")
    lines += ["", "| sample | chunks | build s (no graph) | build s (graph) | ratio | CPU s (no graph) | CPU s (graph) | "
              "CPU ratio | graph entities | graph KiB | multi-hop p50 ms | + graph p50 ms | latency ratio |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        b, rows = r["build_s"], r["rows"]
        m, g = rows["multihop"]["latency_ms_p50"], rows["multihop+graph"]["latency_ms_p50"]
        lines.append(f"| {name} | {r['chunks']:,} | {b['no_graph']:.2f} | {b['graph']:.2f} | {b['ratio']:.2f}× | "
                     f"{b['no_graph_cpu']:.2f} | {b['graph_cpu']:.2f} | {b['cpu_ratio']:.2f}× | {r['graph']['entities']:,} | {r['graph']['bytes'] / 1024:.0f} | {m:.1f} | {g:.1f} | {g / m:.2f}× |")
    lines += ["", "| sample | walks | power iteration ms | " + " | ".join(f"ε={e:g} same proposals / top-10 / ms" for e in EPSILONS) + " |",
              "|---|---:|---:|" + "---:|" * len(EPSILONS)]
    for name, r in results.items():
        w = r["walk"]
        cells = [f"{v['same_proposals']:.3f} / {v['same_top10']:.3f} / {v['ms']:.2f}" for v in w["push"].values()]
        lines.append(f"| {name} | {w['walks']} | {w['power_ms']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="sample names (default: all six)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--walks-only", action="store_true", help="only the walk agreement (no builds timed, no coverage)")
    args = parser.parse_args()
    names = args.only or list(SAMPLES)
    if args.walks_only:
        for name in names:
            fmt, files, corpora = SAMPLES[name]
            result = import_dataset(fmt, [_path(f) for f in files], extra_corpora=[_path(c) for c in corpora])
            with tempfile.TemporaryDirectory() as tmp:
                build_index(result.documents, Path(tmp))
                print(name, json.dumps(walk_agreement(load_index(Path(tmp)), result.cases)), flush=True)
        return
    results = {name: run_sample(name) for name in names}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(render(results))


if __name__ == "__main__":
    main()
