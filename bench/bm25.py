"""Benchmark: hoprag BM25Retriever vs raw bm25s vs rank_bm25 on the pooled demo corpus.

Corpus: every context paragraph of the bundled HotpotQA, MuSiQue and 2WikiMultihopQA samples plus
the enterprise corpus; queries: every question of those files. All three systems index the same
chunk texts (title + newline + chunk) with the same tokens (accents folded, PyStemmer English,
bm25s English stopwords: raw bm25s is handed the folded texts and queries, folding counted in its
time) and answer the same queries, k=10, one query at a time. ``hoprag-unfolded`` is the same
retriever with ``fold_accents=False`` (an index built before folding): what the fold costs.

    python bench/bm25.py [--data DIR] [--repeat N] [--json] [--quick]

Targets: hoprag per-query time <= 1.1x raw bm25s (tokenise + retrieve), >= 10x faster than
rank_bm25 (get_scores + argsort).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import glob
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer

from hoprag.index.bm25 import BM25Retriever, index_text
from hoprag.index.tokenize import Tokenizer
from hoprag.ingest.chunking import ChunkConfig, chunk_documents
from hoprag.ingest.loaders import load_documents
from hoprag.ingest.text import fold_accents
from hoprag.records import Document

K = 10
DEFAULT_DATA = Path(__file__).resolve().parents[1] / "data"


# --- corpus and queries -------------------------------------------------------------------------


def _join(sentences: list[str]) -> str:
    """Sentences back into a paragraph: HotpotQA sentences carry their leading space, 2Wiki's do not."""
    out = ""
    for s in sentences:
        out += s if (not out or s[:1].isspace()) else " " + s
    return out.strip()


def _simple_pool(data: Path) -> tuple[list[Document], list[str]]:
    docs: dict[str, Document] = {}
    questions: list[str] = []

    def add(title: str, text: str, source: str) -> None:
        key = f"{source}:{title}:{hashlib.sha1(text.encode()).hexdigest()[:8]}"
        docs.setdefault(key, Document(id=key, title=title, text=text, source=source))

    for path in sorted(glob.glob(str(data / "hotpotqa" / "*.json"))) + sorted(
        glob.glob(str(data / "2wikimultihopqa" / "*.json"))
    ):
        source = "hotpotqa" if "hotpot" in path else "2wiki"
        for record in json.loads(Path(path).read_text(encoding="utf-8")):
            questions.append(record["question"])
            for title, sentences in record.get("context") or []:
                add(title, _join(sentences), source)
    for path in sorted(glob.glob(str(data / "musique" / "*.jsonl"))):
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                questions.append(record["question"])
                for p in record.get("paragraphs") or []:
                    add(p["title"], p["paragraph_text"], "musique")
    return list(docs.values()), questions


def _importer_pool(data: Path) -> tuple[list[Document], list[str]] | None:
    try:
        from hoprag.datasets.importers import import_dataset
    except ImportError:
        return None
    docs: dict[str, Document] = {}
    questions: list[str] = []
    for fmt, pattern in (("hotpotqa", "hotpotqa/*.json"), ("musique", "musique/*.jsonl"), ("2wiki", "2wikimultihopqa/*.json")):
        files = [Path(p) for p in sorted(glob.glob(str(data / pattern)))]
        if not files:
            continue
        result = import_dataset(fmt, files)
        questions.extend(c.query for c in result.cases)
        for d in result.documents:
            docs.setdefault(d.id, d)
    return list(docs.values()), questions


def pooled_corpus(data: Path) -> tuple[list[Document], list[str], str]:
    pooled = _importer_pool(data)
    how = "hoprag.datasets.importers"
    if pooled is None:
        pooled, how = _simple_pool(data), "simple sentence join"
    docs, questions = pooled
    enterprise = data / "enterprise" / "corpus.jsonl"
    if enterprise.exists():
        seen = {d.id for d in docs}
        docs = docs + [d for d in load_documents(enterprise) if d.id not in seen]
        cases = data / "enterprise" / "cases.jsonl"
        if cases.exists():
            for line in cases.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    questions.append(json.loads(line)["query"])
    return docs, questions, how


# --- measurement --------------------------------------------------------------------------------


def measure_build(build: Callable[[], Any]) -> tuple[Any, float, float]:
    """Build once for time, once under tracemalloc for peak Python+numpy memory (MiB)."""
    gc.collect()
    start = time.perf_counter()
    obj = build()
    seconds = time.perf_counter() - start
    del obj
    gc.collect()
    tracemalloc.start()
    obj = build()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return obj, seconds, peak / 2**20


def time_queries(search: Callable[[str], Any], queries: list[str], repeat: int) -> list[float]:
    for q in queries[:20]:  # warm caches
        search(q)
    per_query: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            for q in queries:
                t0 = time.perf_counter()
                search(q)
                per_query.append((time.perf_counter() - t0) * 1000)
    finally:
        gc.enable()
    return per_query


def fold_cost(docs: list[Document], texts: list[str], rounds: int) -> dict[str, float]:
    """What folding adds to a build: folded and unfolded builds alternated ``rounds`` times, the
    fastest of each kept (the machine is shared), and the fold alone against tokenising alone."""
    builds: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for fold in (True, False):
            chunks = chunk_documents(docs, ChunkConfig())
            gc.collect()
            start = time.perf_counter()
            BM25Retriever(chunks, docs, tokenizer=Tokenizer(fold_accents=fold))
            builds[fold].append(time.perf_counter() - start)
    tokenizer = Tokenizer(fold_accents=False)
    fold_s, tokenize_s = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for t in texts:
            fold_accents(t)
        fold_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        for t in texts:
            tokenizer.query(t)
        tokenize_s.append(time.perf_counter() - start)
    folded, unfolded = min(builds[True]), min(builds[False])
    return {"build_s_folded": folded, "build_s_unfolded": unfolded, "build_ratio": folded / unfolded,
            "fold_only_s": min(fold_s), "tokenize_only_s": min(tokenize_s),
            "fold_share_of_tokenize": min(fold_s) / min(tokenize_s),
            "non_ascii_texts": sum(not t.isascii() for t in texts) / max(len(texts), 1)}


def summarise(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "mean_ms": statistics.fmean(ms),
        "p50_ms": statistics.median(ms),
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))],
    }


def run(data: Path, repeat: int, max_queries: int | None = None) -> dict[str, Any]:
    docs, queries, how = pooled_corpus(data)
    queries = queries[:max_queries] if max_queries else queries
    chunks = chunk_documents(docs, ChunkConfig())
    titles = {d.id: d.title for d in docs}
    texts = [index_text(c, titles[c.doc_id]) for c in chunks]
    stemmer = Stemmer.Stemmer("english")
    tokenizer = Tokenizer()

    hoprag, hoprag_s, hoprag_mb = measure_build(lambda: BM25Retriever(chunk_documents(docs, ChunkConfig()), docs))
    unfolded, unfolded_s, unfolded_mb = measure_build(
        lambda: BM25Retriever(chunk_documents(docs, ChunkConfig()), docs, tokenizer=Tokenizer(fold_accents=False)))

    def build_raw() -> bm25s.BM25:
        model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        folded = [fold_accents(t) for t in texts]
        model.index(bm25s.tokenize(folded, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
        return model

    raw, raw_s, raw_mb = measure_build(build_raw)

    from rank_bm25 import BM25Okapi

    okapi, okapi_s, okapi_mb = measure_build(lambda: BM25Okapi([tokenizer.query(t) for t in texts]))

    def search_hoprag(q: str) -> Any:
        return hoprag.retrieve(q, k=K)

    def search_unfolded(q: str) -> Any:
        return unfolded.retrieve(q, k=K)

    def search_raw(q: str) -> Any:
        tokens = bm25s.tokenize(fold_accents(q), stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
        return raw.retrieve(tokens, k=K, show_progress=False)

    def search_okapi(q: str) -> Any:
        scores = okapi.get_scores(tokenizer.query(q))
        return np.argsort(-scores)[:K]

    # sanity: hoprag and raw bm25s agree on the top-10 scores for every query
    worst = 0.0
    for q in queries:
        ours = [h.score for h in search_hoprag(q)]
        _, scores = search_raw(q)
        theirs = [s for s in scores[0].tolist() if s > 0][: len(ours)]
        if ours:
            worst = max(worst, float(np.max(np.abs(np.array(ours) - np.array(theirs)))))

    results = {}
    # interleave systems per round so drift in machine load hits all three alike
    timings: dict[str, list[float]] = {"hoprag": [], "hoprag-unfolded": [], "bm25s": [], "rank_bm25": []}
    for _ in range(repeat):
        timings["hoprag"] += time_queries(search_hoprag, queries, 1)
        timings["hoprag-unfolded"] += time_queries(search_unfolded, queries, 1)
        timings["bm25s"] += time_queries(search_raw, queries, 1)
        timings["rank_bm25"] += time_queries(search_okapi, queries, 1)
    builds = {"hoprag": (hoprag_s, hoprag_mb), "hoprag-unfolded": (unfolded_s, unfolded_mb), "bm25s": (raw_s, raw_mb),
              "rank_bm25": (okapi_s, okapi_mb)}
    for name, ms in timings.items():
        results[name] = {**summarise(ms), "build_s": builds[name][0], "build_peak_mib": builds[name][1]}
    return {
        "corpus": {"documents": len(docs), "chunks": len(chunks), "queries": len(queries), "built_with": how},
        "k": K,
        "repeat": repeat,
        "max_abs_score_diff_vs_bm25s": worst,
        "systems": results,
        "ratios": {
            "hoprag_over_bm25s_mean": results["hoprag"]["mean_ms"] / results["bm25s"]["mean_ms"],
            "hoprag_over_bm25s_p50": results["hoprag"]["p50_ms"] / results["bm25s"]["p50_ms"],
            "rank_bm25_over_hoprag_mean": results["rank_bm25"]["mean_ms"] / results["hoprag"]["mean_ms"],
            "rank_bm25_over_hoprag_p50": results["rank_bm25"]["p50_ms"] / results["hoprag"]["p50_ms"],
            "fold_over_unfolded_mean": results["hoprag"]["mean_ms"] / results["hoprag-unfolded"]["mean_ms"],
            "fold_over_unfolded_p50": results["hoprag"]["p50_ms"] / results["hoprag-unfolded"]["p50_ms"],
        },
        "fold_cost": fold_cost(docs, texts, repeat),
        "versions": {"bm25s": bm25s.__version__, "python": sys.version.split()[0]},
    }


def print_table(report: dict[str, Any]) -> None:
    c = report["corpus"]
    print(f"corpus: {c['documents']} documents, {c['chunks']} chunks, {c['queries']} queries "
          f"(x{report['repeat']}), k={report['k']}; documents via {c['built_with']}")
    print(f"{'system':<16}{'mean ms':>10}{'p50 ms':>10}{'p95 ms':>10}{'build s':>10}{'build MiB':>11}")
    for name, r in report["systems"].items():
        print(f"{name:<16}{r['mean_ms']:>10.4f}{r['p50_ms']:>10.4f}{r['p95_ms']:>10.4f}"
              f"{r['build_s']:>10.3f}{r['build_peak_mib']:>11.1f}")
    r = report["ratios"]
    print(f"hoprag / bm25s:    mean {r['hoprag_over_bm25s_mean']:.3f}x, p50 {r['hoprag_over_bm25s_p50']:.3f}x"
          "  (target <= 1.1x)")
    print(f"rank_bm25 / hoprag: mean {r['rank_bm25_over_hoprag_mean']:.1f}x, p50 {r['rank_bm25_over_hoprag_p50']:.1f}x"
          "  (target >= 10x)")
    f = report["fold_cost"]
    print(f"folded / unfolded:  query mean {r['fold_over_unfolded_mean']:.3f}x, p50 {r['fold_over_unfolded_p50']:.3f}x; "
          f"build {f['build_ratio']:.3f}x (fastest of {report['repeat']}: {f['build_s_folded']:.3f} s vs {f['build_s_unfolded']:.3f} s); "
          f"folding alone {f['fold_only_s'] * 1000:.1f} ms = {f['fold_share_of_tokenize']:.1%} of tokenising alone "
          f"({f['non_ascii_texts']:.0%} of texts not ASCII)")
    print(f"max |score difference| hoprag vs bm25s over all queries: {report['max_abs_score_diff_vs_bm25s']:.2e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with hotpotqa/, musique/, ...")
    parser.add_argument("--repeat", type=int, default=5, help="passes over the query set")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quick", action="store_true", help="20 queries, one pass: only checks the bench starts")
    args = parser.parse_args(argv)
    report = run(args.data, 1 if args.quick else args.repeat, 20 if args.quick else None)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
