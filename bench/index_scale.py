"""Benchmark: a local index at 100k / 1M passages against raw bm25s — build, load, search, cold start, multi-hop.

Corpus: the bundled real passages (every context paragraph of the HotpotQA, MuSiQue and 2Wiki samples
plus the enterprise corpus, pooled as ``bench/bm25.py`` pools them) replicated until ``--passages``
documents: copy ``r`` of document ``d`` has id ``d~r`` and the same title and text. So vocabulary
and passage lengths are the real ones while posting lists grow with the corpus. Queries: the
samples' questions.

Every measurement runs in a fresh process (``os.wait4`` gives its peak RSS):

* build: ``hoprag index CORPUS --out DIR -q`` against a raw bm25s script with the same tokens
  (title + newline + text, PyStemmer English, bm25s English stopwords; ``bm25s.tokenize`` + index +
  save), both reading the same JSONL;
* load: ``load_index(DIR)`` against ``bm25s.BM25.load(mmap=True)``, each the best of 3 in one process
  (page cache warm);
* BM25 p50/p95, k=10: ``LoadedIndex.bm25.retrieve`` against bm25s (tokenise + retrieve), interleaved;
* ask cold start: ``hoprag ask DIR QUESTION --json`` wall time, process start to answer (median of 3);
* multi-hop: the offline multi-hop engine over a loaded index, first question vs the next ones
  (p50/p95), the process's RSS after loading and its peak.

With an entity graph in the index (the default build) the cold start and the multi-hop run are also
measured with the graph hop off (``--no-graph``), alternating with the runs that use it, so the two
share the machine's load.

    python bench/index_scale.py --passages 100000 [--work DIR] [--json OUT] [--reuse-index]
    python bench/index_scale.py --passages 100000 --build-only --rounds 2   # the build bar alone

``--build-only`` times only the two builds, alternating ``--rounds`` times on the same corpus, and
prints each round's ratios: wall time, CPU time, and peak RSS with the graph worker counted (the
building process's peak plus the worker's, an upper bound since the two need not peak at once; the
RSS of the whole process tree sampled every 20 ms is printed beside it when psutil is installed), and
the building process's own CPU seconds: with a core free for the graph worker, the wall ratio tends to
that process's CPU ratio; on a busy machine the worker competes for a core and it tends to the two
processes' CPU ratio.

Bars (issue 12, 28): build <= 1.5x raw bm25s time and <= 1.2x its peak RSS, load <= 2 s, BM25 p50 <= raw, ask cold
start <= 3 s, first multi-hop question <= 2x the later p95; multi-hop with the graph hop <= 2x without
it, and its p50 at 1M <= 2x its p50 at 10k (run ``--passages 10000`` too). With the graph hop it also
prints how many walks the edge budget cut short.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
K = 10


def _pool() -> tuple[list[Any], list[str]]:
    spec = importlib.util.spec_from_file_location("bench_bm25_pool", ROOT / "bench" / "bm25.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    docs, questions, _ = module.pooled_corpus(ROOT / "data")
    return docs, questions


def write_corpus(path: Path, passages: int) -> dict[str, int]:
    """Replicate the pooled passages to ``passages`` documents (ids ``ID~COPY``) as JSONL."""
    docs, _ = _pool()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        written = 0
        copy = 0
        while written < passages:
            for doc in docs:
                if written >= passages:
                    break
                row = doc.to_dict()
                row["id"] = f"{doc.id}~{copy}"
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                written += 1
            copy += 1
    return {"pooled": len(docs), "copies": copy, "documents": passages}


# Each measured command runs under this small launcher, started fresh: Linux gives a forked child the
# parent's peak RSS as its own starting ru_maxrss, so a command forked straight from this process (which
# holds the passage pool) would report at least this process's size. The launcher is small when it
# forks the command, and it passes the command's own wait4 figures back through a pipe.
MEASURE = r"""
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(int(os.environ["HOPRAG_BENCH_MEASURE_FD"]),
         ("%d %r %r %d" % (status, usage.ru_utime, usage.ru_stime, usage.ru_maxrss)).encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _child(args: list[str], *, env: dict[str, str] | None = None, sample: bool = False) -> dict[str, Any]:
    """Run a process; its wall seconds, CPU seconds (user + system, its waited-for children included),
    peak RSS (MiB: ``wait4`` gives the largest single process of its tree, measured by :data:`MEASURE` so
    this process's own size does not leak into it) and stdout. ``sample``: also the largest sum of the
    tree's RSS seen every 20 ms (psutil), in ``tree_rss_mib``."""
    import threading

    read_end, write_end = os.pipe()
    child_env = dict(os.environ if env is None else env, HOPRAG_BENCH_MEASURE_FD=str(write_end))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-S", "-c", MEASURE, *args], stdout=subprocess.DEVNULL if sample else subprocess.PIPE,
                            stderr=subprocess.PIPE, env=child_env, pass_fds=(write_end,))
    os.close(write_end)
    tree: dict[str, Any] = {"peak": None}
    if sample:
        threading.Thread(target=_sample_tree, args=(proc.pid, tree), daemon=True).start()
        out = b""
    else:
        out = proc.stdout.read()  # type: ignore[union-attr]
    err = proc.stderr.read()  # type: ignore[union-attr]
    proc.wait()
    seconds = time.perf_counter() - start
    with os.fdopen(read_end, "rb") as pipe:
        measured = pipe.read().decode().split()
    if proc.returncode != 0 or len(measured) != 4:
        raise SystemExit(f"{' '.join(args[:4])} … failed:\n{err.decode(errors='replace')[-2000:]}")
    _, user, system, maxrss = measured
    return {"seconds": seconds, "cpu_s": float(user) + float(system), "peak_rss_mib": int(maxrss) / 1024,
            "stdout": out.decode(), "tree_rss_mib": tree["peak"], "own_cpu_s": tree.get("own_cpu_s")}


def _sample_tree(launcher: int, tree: dict[str, Any]) -> None:
    """The largest RSS sum of the command :data:`MEASURE` (pid ``launcher``) started and its descendants,
    sampled until it ends (``None`` without psutil)."""
    try:
        import psutil
    except ImportError:
        return
    try:
        parent = psutil.Process(launcher)
        while not parent.children() and parent.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.001)
        root = parent.children()[0]
        peak = 0
        while root.status() != psutil.STATUS_ZOMBIE:
            total = 0
            for process in [root, *root.children(recursive=True)]:
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    pass
            peak = max(peak, total)
            tree["peak"] = peak / 2**20
            times = root.cpu_times()  # its own CPU, without the worker's (the last sample before it ends)
            tree["own_cpu_s"] = times.user + times.system
            time.sleep(0.02)
    except psutil.Error:
        pass


RAW_BUILD = """
import json, sys, bm25s, Stemmer
texts = []
with open(sys.argv[1], encoding="utf-8") as handle:
    for line in handle:
        d = json.loads(line)
        texts.append(f"{d['title']}\\n{d['text']}" if d.get("title") else d["text"])
model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
model.index(bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False),
            show_progress=False)
model.save(sys.argv[2], show_progress=False)
"""

PROBE = """
import json, statistics, sys, time, resource
import bm25s, Stemmer
from hoprag.index.store import load_index

index_dir, raw_dir, questions_file, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
questions = json.loads(open(questions_file, encoding="utf-8").read())

def best(fn, n=3):
    times = []
    for _ in range(n):
        t0 = time.perf_counter(); obj = fn(); times.append(time.perf_counter() - t0)
    return obj, min(times)

index, load_s = best(lambda: load_index(index_dir))
raw, raw_load_s = best(lambda: bm25s.BM25.load(raw_dir, mmap=True)) if raw_dir else (None, None)
rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
stemmer = Stemmer.Stemmer("english")

def ours(q):
    return index.bm25.retrieve(q, k)

def theirs(q):
    return raw.retrieve(bm25s.tokenize(q, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False),
                        k=k, show_progress=False)

systems = (("hoprag", ours), ("bm25s", theirs)) if raw is not None else (("hoprag", ours),)
for q in questions[:20]:
    for _, fn in systems:
        fn(q)
times = {name: [] for name, _ in systems}
for _ in range(3):
    for q in questions:
        for name, fn in systems:
            t0 = time.perf_counter(); fn(q); times[name].append((time.perf_counter() - t0) * 1000)
def summary(ms):
    ordered = sorted(ms)
    return {"p50_ms": statistics.median(ms), "p95_ms": ordered[int(0.95 * (len(ordered) - 1))]}
print(json.dumps({"load_s": load_s, "bm25s_load_s": raw_load_s, "rss_after_load_mib": rss_loaded,
                  "bm25": {name: summary(ms) for name, ms in times.items()}}))
"""

MULTIHOP = """
import json, statistics, sys, time, resource
t_start = time.perf_counter()
from hoprag.index.store import load_index
from hoprag.pipeline.factory import make_engine

index_dir, questions_file, n, graph = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
questions = json.loads(open(questions_file, encoding="utf-8").read())[: n + 1]
t0 = time.perf_counter()
index = load_index(index_dir)
load_s = time.perf_counter() - t0
engine = make_engine("multihop", index, graph=False if graph == "off" else None)
rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
times, walks = [], []
for q in questions:
    t0 = time.perf_counter(); trace = engine.answer(q); times.append((time.perf_counter() - t0) * 1000)
    walks += [s.bridge["walk"] for s in trace.steps if s.bridge.get("graph") == "ppr" and "walk" in s.bridge]
later = sorted(times[1:])
print(json.dumps({"load_s": load_s, "first_ms": times[0], "later_p50_ms": statistics.median(later),
                  "later_p95_ms": later[int(0.95 * (len(later) - 1))], "questions": len(times),
                  "graph_walks": len(walks), "graph_walks_truncated": sum(w["truncated"] for w in walks),
                  "graph_walk_edges_p50": statistics.median([w["edges"] for w in walks]) if walks else None,
                  "rss_after_load_mib": rss_loaded,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(passages: int, work: Path, multihop_questions: int, index_args: list[str], *, raw: bool = True,
            reuse: bool = False) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"corpus-{passages}.jsonl"
    composed = write_corpus(corpus, passages) if not corpus.exists() else _count(corpus, passages)
    _, questions = _pool()
    qfile = work / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    python = sys.executable
    hoprag = str(Path(python).with_name("hoprag"))
    index_dir, raw_dir = work / f"index-{passages}", work / f"bm25s-{passages}"

    raw_build = _child([python, "-c", RAW_BUILD, str(corpus), str(raw_dir)]) if raw else None
    reused = reuse and (index_dir / "manifest.json").is_file()
    ours = {"seconds": None, "cpu_s": None, "peak_rss_mib": None} if reused else \
        _child([hoprag, "index", str(corpus), "--out", str(index_dir), "-q", *index_args])
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    worker_peak = (manifest.get("build") or {}).get("graph_worker_peak_rss_mb")
    if worker_peak and ours["peak_rss_mib"] is not None:
        # wait4 gives the larger of the two processes' peaks; they ran at once, so count their sum
        ours["peak_rss_mib"] = manifest["build"]["peak_rss_mb"] + worker_peak
    probe = json.loads(_child([python, "-c", PROBE, str(index_dir), str(raw_dir if raw else ""), str(qfile), str(K)])["stdout"])
    graphed = manifest.get("graph") is not None
    asks, asks_plain, plain = [], [], None
    for i in range(3):  # with the graph hop, then without it when the index has a graph: alternating
        asks.append(_child([hoprag, "ask", str(index_dir), questions[i], "--json"])["seconds"])
        if graphed:
            asks_plain.append(_child([hoprag, "ask", str(index_dir), questions[i], "--json", "--no-graph"])["seconds"])
    multihop = json.loads(_child([python, "-c", MULTIHOP, str(index_dir), str(qfile), str(multihop_questions), "on"])["stdout"])
    if graphed:
        plain = json.loads(_child([python, "-c", MULTIHOP, str(index_dir), str(qfile), str(multihop_questions), "off"])["stdout"])
    index_bytes = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    report = {
        "passages": passages,
        "index_args": index_args,
        "corpus": {**composed, "chunks": manifest["chunk_count"], "jsonl_mib": corpus.stat().st_size / 2**20},
        "build": {
            "hoprag_s": ours["seconds"], "hoprag_cpu_s": ours["cpu_s"], "hoprag_peak_rss_mib": ours["peak_rss_mib"],
            "graph_worker_peak_rss_mib": worker_peak,
            "bm25s_s": raw_build["seconds"] if raw_build else None,
            "bm25s_cpu_s": raw_build["cpu_s"] if raw_build else None,
            "bm25s_peak_rss_mib": raw_build["peak_rss_mib"] if raw_build else None,
            "manifest": manifest.get("build"), "graph": manifest.get("graph"), "index_mib": index_bytes / 2**20,
        },
        "load": {"hoprag_s": probe["load_s"], "bm25s_s": probe["bm25s_load_s"], "rss_after_load_mib": probe["rss_after_load_mib"]},
        "bm25_k10": probe["bm25"],
        "ask_cold_start_s": {"median": statistics.median(asks), "all": asks},
        "multihop": multihop,
        "reused_index": reused,
    }
    if graphed:
        report["ask_cold_start_no_graph_s"] = {"median": statistics.median(asks_plain), "all": asks_plain}
        report["multihop_no_graph"] = plain
    b = report["build"]
    report["ratios"] = {
        "build_time": b["hoprag_s"] / b["bm25s_s"] if raw and not reused else None,
        "build_cpu": b["hoprag_cpu_s"] / b["bm25s_cpu_s"] if raw and not reused else None,
        "build_peak_rss": b["hoprag_peak_rss_mib"] / b["bm25s_peak_rss_mib"] if raw and not reused else None,
        "bm25_p50": probe["bm25"]["hoprag"]["p50_ms"] / probe["bm25"]["bm25s"]["p50_ms"] if raw else None,
        "first_question_over_later_p95": multihop["first_ms"] / multihop["later_p95_ms"],
        "run_peak_over_loaded_rss": multihop["peak_rss_mib"] / multihop["rss_after_load_mib"],
    }
    return report


def measure_builds(passages: int, work: Path, index_args: list[str], *, rounds: int = 1) -> dict[str, Any]:
    """Only the build: ``hoprag index`` and the raw bm25s script on the same corpus, ``rounds`` times
    alternating (so both share the machine's load), each round's wall / CPU / peak-RSS ratio printed."""
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"corpus-{passages}.jsonl"
    if not corpus.exists():
        write_corpus(corpus, passages)
    python = sys.executable
    hoprag = str(Path(python).with_name("hoprag"))
    index_dir, raw_dir = work / f"index-{passages}", work / f"bm25s-{passages}"
    results = []
    for round_ in range(1, rounds + 1):
        ours = _child([hoprag, "index", str(corpus), "--out", str(index_dir), "-q", *index_args], sample=True)
        raw = _child([python, "-c", RAW_BUILD, str(corpus), str(raw_dir)], sample=True)
        manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
        build = manifest.get("build") or {}
        rss = _build_rss(ours, build)
        row = {"round": round_, "hoprag_s": ours["seconds"], "hoprag_cpu_s": ours["cpu_s"], "hoprag_peak_rss_mib": rss,
               "graph_worker_peak_rss_mib": build.get("graph_worker_peak_rss_mb"),
               "graph_s": (manifest.get("graph") or {}).get("build_seconds"),
               "bm25s_s": raw["seconds"], "bm25s_cpu_s": raw["cpu_s"], "bm25s_peak_rss_mib": raw["peak_rss_mib"],
               "hoprag_tree_rss_sampled_mib": ours["tree_rss_mib"], "bm25s_rss_sampled_mib": raw["tree_rss_mib"],
               "hoprag_main_cpu_s": ours["own_cpu_s"],
               "chunks": manifest["chunk_count"]}
        row["ratios"] = {"build_time": row["hoprag_s"] / row["bm25s_s"], "build_cpu": row["hoprag_cpu_s"] / row["bm25s_cpu_s"],
                         "build_peak_rss": rss / row["bm25s_peak_rss_mib"]}
        results.append(row)
        print(f"{passages:,} passages {' '.join(index_args)} ({row['chunks']:,} chunks), round {round_}: "
              f"hoprag {row['hoprag_s']:.1f} s / {rss:.0f} MiB"
              + (f" (worker {row['graph_worker_peak_rss_mib']:.0f})" if row["graph_worker_peak_rss_mib"] else "")
              + f", bm25s {row['bm25s_s']:.1f} s / {row['bm25s_peak_rss_mib']:.0f} MiB -> "
              f"{row['ratios']['build_time']:.2f}x time (bar 1.5x), {row['ratios']['build_peak_rss']:.2f}x RSS (bar 1.2x), "
              f"CPU {row['hoprag_cpu_s']:.1f} / {row['bm25s_cpu_s']:.1f} s = {row['ratios']['build_cpu']:.2f}x"
              + (f" (the building process alone {ours['own_cpu_s']:.1f} s = {ours['own_cpu_s'] / row['bm25s_cpu_s']:.2f}x)"
                 if ours.get("own_cpu_s") else "")
              + (f"; RSS of the whole tree sampled every 20 ms: {ours['tree_rss_mib']:.0f} MiB" if ours["tree_rss_mib"] else ""),
              flush=True)
    return {"passages": passages, "index_args": index_args, "rounds": results}


def _build_rss(ours: dict[str, Any], build: dict[str, Any]) -> float:
    """The build's peak RSS, graph worker included: ``wait4`` gives the tree's largest single process, so
    with a worker the two peaks are added (an upper bound: the peaks need not coincide)."""
    worker = build.get("graph_worker_peak_rss_mb")
    return float(build["peak_rss_mb"]) + float(worker) if worker else float(ours["peak_rss_mib"])


def print_report(r: dict[str, Any]) -> None:
    b, x = r["build"], r["ratios"]
    fmt = lambda v, spec: format(v, spec) if v is not None else "—"  # noqa: E731
    print(f"{r['passages']:,} passages {' '.join(r['index_args'])} ({r['corpus']['chunks']:,} chunks)")
    print(f"build   hoprag {fmt(b['hoprag_s'], '.1f')} s / {fmt(b['hoprag_peak_rss_mib'], '.0f')} MiB, bm25s {fmt(b['bm25s_s'], '.1f')} s / "
          f"{fmt(b['bm25s_peak_rss_mib'], '.0f')} MiB -> {fmt(x['build_time'], '.2f')}x time, "
          f"{fmt(x['build_peak_rss'], '.2f')}x RSS (bar 1.5x)"
          + (f"; RSS counts the graph worker's {b['graph_worker_peak_rss_mib']:.0f} MiB" if b.get("graph_worker_peak_rss_mib") else ""))
    print(f"        CPU s hoprag {fmt(b['hoprag_cpu_s'], '.1f')}, bm25s {fmt(b['bm25s_cpu_s'], '.1f')} -> {fmt(x['build_cpu'], '.2f')}x"
          + (f"; entity graph {b['graph']['build_seconds']:.1f} s of the build" if b.get("graph") else "; no entity graph"))
    print(f"load    hoprag {r['load']['hoprag_s']:.3f} s, bm25s {fmt(r['load']['bm25s_s'], '.3f')} s (bar 2 s)")
    h, s = r["bm25_k10"]["hoprag"], r["bm25_k10"].get("bm25s", {})
    print(f"bm25    hoprag p50 {h['p50_ms']:.2f} ms p95 {h['p95_ms']:.2f}, bm25s p50 {fmt(s.get('p50_ms'), '.2f')} ms "
          f"p95 {fmt(s.get('p95_ms'), '.2f')} -> {fmt(x['bm25_p50'], '.2f')}x (bar <= 1)")
    plain = r.get("ask_cold_start_no_graph_s")
    print(f"ask     cold start {r['ask_cold_start_s']['median']:.2f} s (bar 3 s)"
          + (f"; --no-graph {plain['median']:.2f} s" if plain else ""))
    m = r["multihop"]
    if m.get("graph_walks"):
        print(f"graph   {m['graph_walks']} walks proposing, {m['graph_walks_truncated']} cut short by the edge budget, "
              f"edges read p50 {m['graph_walk_edges_p50']:.0f}")
    print(f"multi   first {m['first_ms']:.0f} ms, later p50 {m['later_p50_ms']:.0f} / p95 {m['later_p95_ms']:.0f} ms -> "
          f"{x['first_question_over_later_p95']:.2f}x (bar 2x); RSS loaded {m['rss_after_load_mib']:.0f} MiB, "
          f"peak {m['peak_rss_mib']:.0f} MiB ({x['run_peak_over_loaded_rss']:.2f}x)")
    n = r.get("multihop_no_graph")
    if n:
        print(f"        without the graph hop: first {n['first_ms']:.0f} ms, later p50 {n['later_p50_ms']:.0f} / "
              f"p95 {n['later_p95_ms']:.0f} ms; with / without p50 {m['later_p50_ms'] / n['later_p50_ms']:.2f}x, "
              f"p95 {m['later_p95_ms'] / n['later_p95_ms']:.2f}x")
    print(f"        load average {r['load_average']}")


def _count(corpus: Path, passages: int) -> dict[str, int]:
    """A corpus already composed for this size (the composition is deterministic)."""
    return {"documents": passages}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000, help="documents in the composed corpus")
    parser.add_argument("--work", type=Path, default=Path("work/index-scale"), help="where corpora and indexes go")
    parser.add_argument("--questions", type=int, default=60, help="multi-hop questions after the first")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    parser.add_argument("--no-raw", action="store_true", help="skip the raw bm25s build (hoprag figures only)")
    parser.add_argument("--index-arg", action="append", default=[], help="extra `hoprag index` argument (repeatable), e.g. --index-arg=--no-graph")
    parser.add_argument("--reuse-index", action="store_true", help="measure an index already built in --work (no build timed)")
    parser.add_argument("--build-only", action="store_true",
                        help="time only the two builds (hoprag, then raw bm25s, on the same corpus) and print their ratios")
    parser.add_argument("--rounds", type=int, default=1, help="with --build-only: build both this many times, alternating")
    args = parser.parse_args(argv)
    start_load = os.getloadavg()
    if args.build_only and (args.rounds < 1 or args.no_raw or args.reuse_index):
        parser.error("--build-only compares the two builds: give --rounds 1 or more, without --no-raw or --reuse-index")
    if args.build_only:
        builds = measure_builds(args.passages, args.work, args.index_arg, rounds=args.rounds)
        builds["load_average"] = {"start": [round(v, 2) for v in start_load], "end": [round(v, 2) for v in os.getloadavg()]}
        print(f"        load average {builds['load_average']}")
        if args.json:
            args.json.write_text(json.dumps(builds, indent=2) + "\n", encoding="utf-8")
        return 0
    report = measure(args.passages, args.work, args.questions, args.index_arg, raw=not args.no_raw and not args.reuse_index,
                     reuse=args.reuse_index)
    report["load_average"] = {"start": [round(v, 2) for v in start_load], "end": [round(v, 2) for v in os.getloadavg()]}
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
