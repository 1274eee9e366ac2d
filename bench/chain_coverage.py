"""Chain coverage@k of single-shot vs multi-hop on any benchmark file(s), pooled corpus per call.

    python bench/chain_coverage.py hotpotqa path/to/hotpot_train.json [--k 5]

Use it on samples the engine was not developed on, to check that the gain holds.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from hoprag.datasets.importers import import_dataset
from hoprag.evaluation.runner import evaluate
from hoprag.index.store import build_index, load_index
from hoprag.pipeline.factory import make_engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("format", choices=["hotpotqa", "musique", "2wiki", "beir"])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = import_dataset(args.format, args.files)
    with tempfile.TemporaryDirectory() as tmp:
        build_index(result.documents, Path(tmp) / "index")
        index = load_index(Path(tmp) / "index")
        scores = {}
        for name in ("single", "multihop"):
            engine = make_engine(name, index)
            traces = [engine.answer(c.query, case_id=c.case_id) for c in result.cases]
            evaluation = evaluate(result.cases, traces, ks=(args.k,))
            scores[name] = {
                "all": evaluation.aggregate[f"chain_coverage@{args.k}"],
                "by_type": {t: a[f"chain_coverage@{args.k}"] for t, a in evaluation.aggregate_by("question_type").items()},
            }
    summary = {
        "files": [f.name for f in args.files],
        "questions": len(result.cases),
        "documents": len(result.documents),
        "single": scores["single"]["all"],
        "multihop": scores["multihop"]["all"],
        "gain": scores["multihop"]["all"] - scores["single"]["all"],
        "by_type": {t: (scores["single"]["by_type"].get(t), v) for t, v in scores["multihop"]["by_type"].items()},
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(
        f"{', '.join(summary['files'])}: {summary['questions']} questions, {summary['documents']} passages; "
        f"chain_coverage@{args.k} single {summary['single']:.3f} · multihop {summary['multihop']:.3f} · gain {summary['gain']:+.3f}"
    )
    for qtype, (s, m) in sorted(summary["by_type"].items()):
        print(f"  {qtype:>20}: single {s:.3f} · multihop {m:.3f}")


if __name__ == "__main__":
    main()
