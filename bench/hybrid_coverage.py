"""Benchmark: what a dense signal buys the multi-hop engine and what it costs, on the pooled protocol
(:mod:`bench.pooled`): BM25, hybrid MiniLM and hybrid static (model2vec) retrieval, each for every
lookup and for the bridge lookups only, beside the index build CPU time and size each needs.

Per benchmark (HotpotQA, MuSiQue, 2WikiMultihopQA), every bundled passage of it is pooled into one
corpus and indexed three ways: BM25 only, BM25 + MiniLM vectors, BM25 + static vectors (the same
chunks; a dense build includes the BM25 build). The first ``--n`` questions of the dev and of the
train sample are then answered by the offline engines (no model), and scored as ``bench/pooled.py``
does: chain coverage@5, passage recall@5 and answer F1, overall and by hop count, and the multi-hop
latency p50 (wall time per question in this process, so it moves with the machine's load).

Systems: ``single bm25`` (reference), ``multihop bm25`` (the default), ``multihop hybrid E`` (RRF of
BM25 and embedder E for every lookup, ``--mode hybrid``) and ``multihop hybrid E bridges`` (the
question's first lookups BM25, the dependent lookups hybrid, ``--mode hybrid --dense-lookups bridges``).
Build cost is process CPU seconds (what predicts another machine) and the index directory's bytes.

    python bench/hybrid_coverage.py [musique ...] [--n 100] [--embedders minilm,static] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pooled import SETS, run_sample  # noqa: E402  (the pooled protocol's corpora and scoring)

from hoprag.datasets.importers import import_dataset  # noqa: E402
from hoprag.index.store import IndexConfig, build_index, load_index  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _systems(embedders: list[str]) -> list[tuple[str, str, str, dict]]:
    """(label, index, engine, spec settings) of every system measured."""
    rows = [("single bm25", "bm25", "single", {}), ("multihop bm25", "bm25", "multihop", {})]
    for name in embedders:
        rows.append((f"hybrid {name}", name, "multihop", {"mode": "hybrid"}))
        rows.append((f"hybrid {name} bridges", name, "multihop", {"mode": "hybrid", "dense_lookups": "bridges"}))
    return rows


def _cpu() -> float:
    """CPU seconds of this process and its finished children (a build may run worker processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measure(name: str, n: int, embedders: list[str], tmp: Path) -> dict:
    fmt, samples, others, corpora = SETS[name]
    pooled = import_dataset(fmt, [*samples.values(), *others], corpora)
    builds, indexes = {}, {}
    for index_name in ["bm25", *embedders]:
        out = tmp / f"{name}-{index_name}"
        config = IndexConfig() if index_name == "bm25" else IndexConfig(dense=True, embedder=index_name)  # type: ignore[arg-type]
        cpu, wall = _cpu(), time.perf_counter()
        manifest = build_index(pooled.documents, out, config)
        builds[index_name] = {"cpu_s": round(_cpu() - cpu, 1), "wall_s": round(time.perf_counter() - wall, 1),
                              "mb": round(_size(out) / 1e6, 1), "chunks": manifest.chunk_count}
        indexes[index_name] = load_index(out)
    print(f"{name}: {len(pooled.documents)} passages pooled; build cpu s / MB: "
          + " · ".join(f"{k} {b['cpu_s']}/{b['mb']}" for k, b in builds.items()), flush=True)
    rows = {}
    for sample, path in samples.items():
        cases = import_dataset(fmt, [path]).cases[:n]
        row = {}
        for label, index_name, engine, options in _systems(embedders):
            row[label] = run_sample(indexes[index_name], cases, engine, **options)
            r = row[label]
            hops = "; ".join(f"{h}-hop ({v['n']}) {v['cov5']}/{v['R5']}" for h, v in r["by_hops"].items())
            print(f"  {name} {sample} {label}: cov@5 {r['cov5']} R@5 {r['R5']} F1 {r['F1']} p50 {r['p50_ms']} ms | {hops}",
                  flush=True)
        rows[sample] = {"questions": len(cases), "systems": row}
    return {"passages": len(pooled.documents), "build": builds, "samples": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", help=f"benchmarks among {', '.join(SETS)} (default: all)")
    parser.add_argument("--n", type=int, default=100, help="questions per sample")
    parser.add_argument("--embedders", default="minilm,static", help="dense embedders to compare (minilm, static)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if any(s not in SETS for s in args.sets):
        parser.error(f"name benchmarks among {', '.join(SETS)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedders = [e for e in args.embedders.split(",") if e]
    report = {"commit": _commit(), "cpu_count": os.cpu_count(), "n": args.n, "sets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets or list(SETS):
            report["sets"][name] = measure(name, args.n, embedders, Path(tmp))
            if args.json:  # written after every benchmark, so a long run keeps what it measured
                args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"commit {report['commit']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
