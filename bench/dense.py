"""Benchmark: dense embedding throughput (texts/s, per core) and exact vs HNSW search on the pooled demo corpus.

Corpus and queries are those of ``bench/bm25.py``: every context paragraph of the bundled HotpotQA,
MuSiQue and 2WikiMultihopQA samples plus the enterprise corpus, chunked with the default
ChunkConfig, each chunk embedded as ``title + "\\n" + text`` (what the index stores). For each
embedder (``minilm``: int8 ONNX all-MiniLM-L6-v2; ``static``: model2vec static model) it reports

* model load time (s) and the chunks' token counts (p50 / p95 / share over the 256-token cap),
* corpus throughput: chunks embedded per wall-clock second and per CPU second of the process (all
  its threads; on a machine shared with other work the CPU figure is the one that transfers, and
  per CPU second with one thread is the per-core rate that predicts a cluster's time:
  ``hours = chunks / (rate x cores) / 3600``); MiniLM once per ``--threads`` value,
* query latency: one question at a time, as an engine issues them (p50 / p95 ms),
* search over the embedded chunks, top-10: exact (matrix-vector product) p50 ms, and the HNSW
  graph (:mod:`hoprag.index.ann`) build seconds, p50 ms and recall@10 against exact on the
  questions and on 200 chunk vectors (as the manifest records it),
* with ``--exact-sizes``, exact search p50 ms over the corpus vectors tiled to those sizes (the
  cost grows with size, not content): where ``--ann auto`` switches to the graph.

    python bench/dense.py [--data DIR] [--embedders minilm,static] [--limit N] [--threads 1,2]
                          [--queries N] [--exact-sizes 10000,50000,200000] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.index.ann import HnswIndex, measure_recall
from hoprag.index.dense import DenseRetriever, chunk_texts
from hoprag.index.embedders import EMBEDDERS, available_cores, make_embedder
from hoprag.ingest.chunking import ChunkConfig, chunk_documents

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "data"
K = 10


def _pooled_corpus(data: Path) -> tuple[list[Any], list[str], str]:
    """The pooled corpus of bench/bm25.py (loaded by path: bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("hoprag_bench_bm25", Path(__file__).with_name("bm25.py"))
    if spec is None or spec.loader is None:
        raise SystemExit("bench/bm25.py not found next to bench/dense.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.pooled_corpus(data)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _rates(embedder: Any, texts: list[str]) -> tuple[np.ndarray, dict[str, float]]:
    embedder.embed(texts[:4])  # warm-up: first-call allocations, not throughput
    cpu, wall = time.process_time(), time.perf_counter()
    vectors = embedder.embed(texts)
    wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    return vectors, {"corpus_s": round(wall_s, 3), "cpu_s": round(cpu_s, 3),
                     "texts_per_s": round(len(texts) / wall_s, 2), "texts_per_cpu_s": round(len(texts) / cpu_s, 2)}


def _search_ms(retriever: DenseRetriever, questions: list[str]) -> list[float]:
    out = []
    for q in questions:
        t0 = time.perf_counter()
        retriever.retrieve(q, K)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def measure(name: str, texts: list[str], chunks: list[Any], docs: dict[str, Any], questions: list[str],
            threads: list[int]) -> dict[str, Any]:
    started = time.perf_counter()
    embedder = make_embedder(name, shared=False)
    load_s = time.perf_counter() - started
    report: dict[str, Any] = {"dim": embedder.dim, "load_s": round(load_s, 3), "corpus_texts": len(texts),
                              "corpus_chars_mean": round(statistics.fmean(len(t) for t in texts), 1)}
    tokenizer = getattr(embedder, "tokenizer", None)
    if name == "minilm" and tokenizer is not None:
        counts = [len(e.ids) for e in tokenizer.encode_batch(texts)]  # already truncated at the cap
        report["tokens_p50"] = _percentile(counts, 0.5)
        report["tokens_p95"] = _percentile(counts, 0.95)
        report["share_at_cap"] = round(sum(c >= embedder.max_length for c in counts) / len(counts), 4)
        report["by_threads"] = {}
        vectors = None
        for t in threads:
            per_thread = embedder if t == embedder.threads else make_embedder(name, shared=False, threads=t)
            got, rates = _rates(per_thread, texts)
            vectors = got if vectors is None else vectors
            report["by_threads"][str(t)] = rates
        report.update(report["by_threads"][str(threads[-1])])
    else:
        vectors, rates = _rates(embedder, texts)
        report.update(rates)

    query_ms = []
    for q in questions:
        t0 = time.perf_counter()
        embedder.embed([q])
        query_ms.append((time.perf_counter() - t0) * 1000)

    exact = DenseRetriever(chunks, docs, embedder, vectors)
    for q in questions:  # embed outside the timed loops, so only the search is timed
        exact.query_vector(q)
    exact_ms = _search_ms(exact, questions)
    t0 = time.perf_counter()
    graph = HnswIndex.build(vectors)
    build_s = time.perf_counter() - t0
    hnsw = DenseRetriever(chunks, docs, embedder, vectors, backend="hnsw", ann=graph)
    for q in questions:
        hnsw.query_vector(q)
    hnsw_ms = _search_ms(hnsw, questions)
    overlap = [len({h.chunk_id for h in hnsw.retrieve(q, K)} & {h.chunk_id for h in exact.retrieve(q, K)}) / K
               for q in questions]
    self_recall, _ = measure_recall(vectors, graph)
    report.update({
        "queries": len(questions),
        "query_ms_p50": round(_percentile(query_ms, 0.5), 3),
        "query_ms_p95": round(_percentile(query_ms, 0.95), 3),
        "queries_per_s": round(len(questions) / (sum(query_ms) / 1000), 2),
        "search_ms_p50": round(_percentile(exact_ms, 0.5), 4),
        "hnsw_build_s": round(build_s, 3),
        "hnsw_search_ms_p50": round(_percentile(hnsw_ms, 0.5), 4),
        "hnsw_recall_at_10_questions": round(statistics.fmean(overlap), 4),
        "hnsw_recall_at_10_chunks": round(self_recall, 4),
        "unit_norm_max_error": float(np.abs(np.linalg.norm(vectors, axis=1) - 1.0).max()),
    })
    report["_vectors"] = vectors
    return report


def exact_by_size(vectors: np.ndarray, sizes: list[int], n_queries: int = 50) -> dict[str, float]:
    """Exact top-10 p50 ms over ``vectors`` tiled to each size (queries: the first chunk vectors)."""
    out = {}
    queries = vectors[:n_queries]
    for size in sizes:
        tiled = np.ascontiguousarray(np.resize(vectors, (size, vectors.shape[1])), dtype=np.float32)
        times = []
        for q in queries:
            t0 = time.perf_counter()
            scores = tiled @ q
            np.argpartition(-scores, K)[:K]
            times.append((time.perf_counter() - t0) * 1000)
        out[str(size)] = round(_percentile(times, 0.5), 3)
        del tiled
    return out


def run(data: Path, names: list[str], limit: int, n_queries: int, threads: list[int], sizes: list[int]) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    docs, questions, how = _pooled_corpus(data)
    doc_map = {d.id: d for d in docs}
    all_chunks = chunk_documents(docs, ChunkConfig())
    chunks = all_chunks if limit <= 0 else all_chunks[:limit]
    texts = chunk_texts(chunks, doc_map)
    questions = questions[:n_queries]
    report: dict[str, Any] = {
        "corpus": {"documents": len(docs), "chunks": len(all_chunks), "embedded": len(chunks),
                   "queries": len(questions), "built_with": how},
        "cpu_count": os.cpu_count(),
        "cores_available": available_cores(),
        "embedders": {},
    }
    for name in names:
        result = measure(name, texts, chunks, doc_map, questions, threads)
        vectors = result.pop("_vectors")
        if sizes:
            result["exact_ms_p50_by_size"] = exact_by_size(vectors, sizes)
        report["embedders"][name] = result
    return report


def print_table(report: dict[str, Any]) -> None:
    c = report["corpus"]
    print(f"pooled corpus: {c['documents']} documents, {c['chunks']} chunks ({c['embedded']} embedded), "
          f"{c['queries']} queries; {report['cores_available']} cores")
    print(f"{'embedder':<16}{'dim':>5}{'load s':>8}{'texts/s':>10}{'texts/cpu-s':>13}{'query p50 ms':>14}"
          f"{'exact ms':>10}{'hnsw ms':>9}{'hnsw R@10':>11}")
    for name, r in report["embedders"].items():
        rows = [(f"{name} x{t}", v) for t, v in r.get("by_threads", {}).items()] or [(name, r)]
        for label, v in rows:
            print(f"{label:<16}{r['dim']:>5}{r['load_s']:>8.2f}{v['texts_per_s']:>10.1f}{v['texts_per_cpu_s']:>13.1f}"
                  f"{r['query_ms_p50']:>14.2f}{r['search_ms_p50']:>10.3f}{r['hnsw_search_ms_p50']:>9.3f}"
                  f"{r['hnsw_recall_at_10_questions']:>11.3f}")
        if "exact_ms_p50_by_size" in r:
            print(f"  exact p50 ms by size: {r['exact_ms_p50_by_size']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with hotpotqa/, musique/, ...")
    parser.add_argument("--embedders", default=",".join(EMBEDDERS), help="comma-separated: minilm,static")
    parser.add_argument("--limit", type=int, default=512, help="chunks to embed (0 = the whole pool)")
    parser.add_argument("--queries", type=int, default=200, help="questions for the latency figures")
    parser.add_argument("--threads", default=f"1,{available_cores()}", help="MiniLM intra-op threads to measure, comma-separated")
    parser.add_argument("--exact-sizes", default="", help="chunk counts for the exact-search latency curve, e.g. 10000,50000")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    unknown = [n for n in names if n not in EMBEDDERS]
    if unknown:
        parser.error(f"unknown embedder(s) {', '.join(unknown)}; valid: {', '.join(EMBEDDERS)}")
    threads = sorted({int(t) for t in args.threads.split(",") if t.strip()})
    sizes = [int(n) for n in args.exact_sizes.split(",") if n.strip()]
    report = run(args.data, names, args.limit, args.queries, threads, sizes)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
