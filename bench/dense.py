"""Benchmark: dense embedding throughput (texts/s) of the packaged embedders on the pooled demo corpus.

Corpus and queries are those of ``bench/bm25.py``: every context paragraph of the bundled HotpotQA,
MuSiQue and 2WikiMultihopQA samples plus the enterprise corpus, chunked with the default
ChunkConfig, each chunk embedded as ``title + "\\n" + text`` (what the index stores). For each
embedder (``minilm``: int8 ONNX all-MiniLM-L6-v2; ``static``: model2vec static model) it reports

* model load time (s),
* corpus throughput: chunks embedded per second, in the embedder's batches (``--limit`` chunks,
  taken in corpus order; ``--limit 0`` embeds the whole pool),
* query latency: one question at a time, as an engine issues them (p50 / p95 ms),
* exact search latency over the embedded chunks (matrix-vector product + top-10, p50 ms).

    python bench/dense.py [--data DIR] [--embedders minilm,static] [--limit N] [--queries N] [--json]
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

from hoprag.index.dense import DenseRetriever, chunk_texts
from hoprag.index.embedders import EMBEDDERS, make_embedder
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


def measure(name: str, texts: list[str], chunks: list[Any], docs: dict[str, Any], questions: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    embedder = make_embedder(name, shared=False)
    load_s = time.perf_counter() - started
    embedder.embed(texts[:4])  # warm-up: first-call allocations, not throughput

    started = time.perf_counter()
    vectors = embedder.embed(texts)
    corpus_s = time.perf_counter() - started

    query_ms = []
    for q in questions:
        t0 = time.perf_counter()
        embedder.embed([q])
        query_ms.append((time.perf_counter() - t0) * 1000)

    retriever = DenseRetriever(chunks, docs, embedder, vectors)
    for q in questions:  # embed outside the timed loop, so only the search is timed
        retriever.query_vector(q)
    search_ms = []
    for q in questions:
        t0 = time.perf_counter()
        retriever.retrieve(q, K)
        search_ms.append((time.perf_counter() - t0) * 1000)

    return {
        "dim": embedder.dim,
        "load_s": round(load_s, 3),
        "corpus_texts": len(texts),
        "corpus_chars_mean": round(statistics.fmean(len(t) for t in texts), 1),
        "corpus_s": round(corpus_s, 3),
        "texts_per_s": round(len(texts) / corpus_s, 2),
        "queries": len(questions),
        "query_ms_p50": round(_percentile(query_ms, 0.5), 3),
        "query_ms_p95": round(_percentile(query_ms, 0.95), 3),
        "queries_per_s": round(len(questions) / (sum(query_ms) / 1000), 2),
        "search_ms_p50": round(_percentile(search_ms, 0.5), 4),
        "unit_norm_max_error": float(np.abs(np.linalg.norm(vectors, axis=1) - 1.0).max()),
    }


def run(data: Path, names: list[str], limit: int, n_queries: int) -> dict[str, Any]:
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
        "embedders": {},
    }
    for name in names:
        report["embedders"][name] = measure(name, texts, chunks, doc_map, questions)
    return report


def print_table(report: dict[str, Any]) -> None:
    c = report["corpus"]
    print(f"pooled corpus: {c['documents']} documents, {c['chunks']} chunks ({c['embedded']} embedded), "
          f"{c['queries']} queries; {report['cpu_count']} CPUs")
    print(f"{'embedder':<9}{'dim':>5}{'load s':>8}{'texts/s':>10}{'query p50 ms':>14}{'query p95 ms':>14}"
          f"{'search p50 ms':>15}")
    for name, r in report["embedders"].items():
        print(f"{name:<9}{r['dim']:>5}{r['load_s']:>8.2f}{r['texts_per_s']:>10.1f}{r['query_ms_p50']:>14.2f}"
              f"{r['query_ms_p95']:>14.2f}{r['search_ms_p50']:>15.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with hotpotqa/, musique/, ...")
    parser.add_argument("--embedders", default=",".join(EMBEDDERS), help="comma-separated: minilm,static")
    parser.add_argument("--limit", type=int, default=512, help="chunks to embed (0 = the whole pool)")
    parser.add_argument("--queries", type=int, default=200, help="questions for the latency figures")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    unknown = [n for n in names if n not in EMBEDDERS]
    if unknown:
        parser.error(f"unknown embedder(s) {', '.join(unknown)}; valid: {', '.join(EMBEDDERS)}")
    report = run(args.data, names, args.limit, args.queries)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
