"""Benchmark: what a hybrid first hop buys and costs — multi-hop chain coverage@5 with BM25, hybrid
MiniLM and hybrid static retrieval, beside the index build time each needs, on the bundled samples.

For every sample (the dev and train samples of HotpotQA, MuSiQue and 2WikiMultihopQA in
``data/`` and ``data/train/``, or any ``FORMAT:FILE`` given), the sample's own context paragraphs are pooled
into one corpus and indexed three ways: BM25 only, BM25 + MiniLM vectors, BM25 + static vectors
(the same chunks; the dense builds include the BM25 build). The offline multi-hop engine then
answers every question with ``--mode bm25`` or ``--mode hybrid`` (RRF), and chain coverage@5 is
scored as ``hoprag eval`` does; single-shot BM25 is given for reference. Build times are wall
clock and process CPU seconds on this machine (the CPU seconds are what predicts another machine).

    python bench/hybrid_coverage.py [--samples FORMAT:FILE ...] [--k 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from hoprag.datasets.importers import import_dataset
from hoprag.evaluation.runner import evaluate
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.pipeline.factory import make_engine

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "data" / "train"  # the training-split samples (DATA_LICENSES.md)
SAMPLES = [
    ("hotpotqa", "hotpotqa/hotpot_dev_distractor_migres_part1.json"),
    ("hotpotqa", "hotpotqa/hotpot_train_hipporag100.json"),
    ("musique", "musique/musique_ans_dev_migres_part1.jsonl"),
    ("musique", "musique/musique_ans_train_hipporag100.jsonl"),
    ("2wiki", "2wikimultihopqa/2wiki_dev_migres_part1.json"),
    ("2wiki", "2wikimultihopqa/2wiki_train_migres_part1.json"),
]
#: (label, index config, engine, retrieval mode)
SYSTEMS = [
    ("single bm25", "bm25", "single", "bm25"),
    ("multihop bm25", "bm25", "multihop", "bm25"),
    ("multihop hybrid minilm", "minilm", "multihop", "hybrid"),
    ("multihop hybrid static", "static", "multihop", "hybrid"),
]


def _config(name: str) -> IndexConfig:
    return IndexConfig() if name == "bm25" else IndexConfig(dense=True, embedder=name)  # type: ignore[arg-type]


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measure(fmt: str, path: Path, k: int, tmp: Path) -> dict[str, Any]:
    data = import_dataset(fmt, [path])
    builds: dict[str, dict[str, float]] = {}
    indexes: dict[str, Any] = {}
    for name in ("bm25", "minilm", "static"):
        out = tmp / f"{path.stem}-{name}"
        cpu, wall = time.process_time(), time.perf_counter()
        manifest = build_index(data.documents, out, _config(name))
        builds[name] = {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2),
                        "chunks": manifest.chunk_count}
        indexes[name] = load_index(out)
    coverage: dict[str, float] = {}
    for label, index_name, engine_name, mode in SYSTEMS:
        engine = make_engine(engine_name, indexes[index_name], mode=mode)
        traces = [engine.answer(c.query, case_id=c.case_id) for c in data.cases]
        coverage[label] = round(evaluate(data.cases, traces, ks=(k,)).aggregate[f"chain_coverage@{k}"], 3)
    return {"sample": path.name, "questions": len(data.cases), "passages": len(data.documents),
            "build": builds, f"chain_coverage@{k}": coverage}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", nargs="*", help="FORMAT:FILE pairs (default: the six bundled samples)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    samples = [(s.split(":", 1)[0], Path(s.split(":", 1)[1])) for s in args.samples] if args.samples else \
        [(fmt, ROOT / "data" / rel if (ROOT / "data" / rel).exists() else SHARED / rel) for fmt, rel in SAMPLES]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, path in samples:
            rows.append(measure(fmt, path, args.k, Path(tmp)))
            if not args.json:
                r = rows[-1]
                cov = r[f"chain_coverage@{args.k}"]
                print(f"{r['sample']}: {r['questions']} q, {r['passages']} passages, "
                      + " · ".join(f"{label} {v:.3f}" for label, v in cov.items())
                      + " | build s (wall/cpu): "
                      + " · ".join(f"{n} {b['wall_s']:.1f}/{b['cpu_s']:.1f}" for n, b in r["build"].items()), flush=True)
    report = {"commit": _commit(), "cpu_count": os.cpu_count(), "k": args.k, "samples": rows}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"commit {report['commit']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
