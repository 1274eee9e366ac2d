"""Chain coverage@k of single-shot vs multi-hop on any benchmark file(s), pooled corpus per call.

    python bench/chain_coverage.py hotpotqa path/to/hotpot_train.json [--k 5] [--chunking paragraph]
    python bench/chain_coverage.py 2wiki dev.json --corpus 2wiki_corpus.json   # more distractors pooled

Use it on samples the engine was not developed on, to check that the gain holds. ``--corpus`` pools
extra passage corpora (HippoRAG's ``[{"title", "text"}]`` lists) into the searched corpus, so a
sample of ~100 questions is searched among thousands of passages, as larger evaluations are.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from hoprag.datasets.importers import import_dataset
from hoprag.evaluation.runner import evaluate
from hoprag.evaluation.support import passage_recall
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.ingest.chunking import CHUNKING_MODES, ChunkConfig
from hoprag.pipeline.factory import make_engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("format", choices=["hotpotqa", "musique", "2wiki", "beir"])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--corpus", type=Path, action="append", default=[], help="extra passage corpus to pool (repeatable)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--chunking", choices=CHUNKING_MODES, default=ChunkConfig().mode)
    parser.add_argument("--chunk-tokens", type=int, default=ChunkConfig().max_tokens)
    args = parser.parse_args()
    result = import_dataset(args.format, args.files, args.corpus)
    config = IndexConfig(chunk=ChunkConfig(mode=args.chunking, max_tokens=args.chunk_tokens))
    with tempfile.TemporaryDirectory() as tmp:
        build_index(result.documents, Path(tmp) / "index", config)
        index = load_index(Path(tmp) / "index")
        scores = {}
        for name in ("single", "multihop"):
            engine = make_engine(name, index)
            traces = [engine.answer(c.query, case_id=c.case_id) for c in result.cases]
            evaluation = evaluate(result.cases, traces, ks=(args.k,))
            by_id = {t.case_id: t for t in traces}
            recall = {c.case_id: passage_recall(c, by_id[c.case_id], args.k) for c in result.cases}
            rows = [{**row, "passage_recall": recall[row["case_id"]]} for row in evaluation.cases]
            scores[name] = {
                "all": evaluation.aggregate[f"chain_coverage@{args.k}"],
                "recall": sum(recall.values()) / max(len(recall), 1),
                "recall_by_hops": _by_hops(rows, "passage_recall"),
                "by_type": {t: a[f"chain_coverage@{args.k}"] for t, a in evaluation.aggregate_by("question_type").items()},
                "by_hops": _by_hops(evaluation.cases, f"chain_coverage@{args.k}"),
            }
    summary = {
        "files": [f.name for f in args.files],
        "questions": len(result.cases),
        "documents": len(result.documents),
        "single": scores["single"]["all"],
        "multihop": scores["multihop"]["all"],
        "gain": scores["multihop"]["all"] - scores["single"]["all"],
        "chunking": args.chunking,
        "by_type": {t: (scores["single"]["by_type"].get(t), v) for t, v in scores["multihop"]["by_type"].items()},
        "by_hops": {h: (scores["single"]["by_hops"][h], v) for h, v in scores["multihop"]["by_hops"].items()},
        f"passage_recall@{args.k}": {name: scores[name]["recall"] for name in scores},
        "recall_by_hops": {h: (scores["single"]["recall_by_hops"][h], v) for h, v in scores["multihop"]["recall_by_hops"].items()},
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
    recall = summary[f"passage_recall@{args.k}"]
    print(f"  {'passage_recall@' + str(args.k):>20}: single {recall['single']:.3f} · multihop {recall['multihop']:.3f}")
    for hops, (s, m) in sorted(summary["by_hops"].items()):
        rs, rm = summary["recall_by_hops"][hops]
        print(f"  {hops:>20}: single {s[0]:.3f} · multihop {m[0]:.3f} ({m[1]} questions); "
              f"passage_recall single {rs[0]:.3f} · multihop {rm[0]:.3f}")


def _by_hops(rows: list[dict], measure: str) -> dict[str, tuple[float, int]]:
    """Mean ``measure`` by hop count, for question types that name it (MuSiQue's ``2hop``, ``3hop1``…)."""
    groups: dict[str, list[float]] = {}
    for row in rows:
        qtype = str(row.get("question_type") or "")
        if qtype[:1].isdigit() and "hop" in qtype:
            groups.setdefault(f"{qtype[0]}-hop", []).append(row.get(measure) or 0.0)
    return {h: (sum(v) / len(v), len(v)) for h, v in groups.items()}


if __name__ == "__main__":
    main()
