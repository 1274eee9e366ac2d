"""The main job on the bundled data: import, index, answer twice (single-shot, multi-hop), evaluate, report."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from hoprag.datasets.importers import import_dataset, write_import
from hoprag.datasets.schema import dataset_version, load_cases
from hoprag.errors import InputError
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.index.open import open_index
from hoprag.index.store import IndexConfig, build_index
from hoprag.io.kinds import JSON_DOCUMENT, MARKDOWN_REPORT
from hoprag.io.outputs import write_text
from hoprag.io.traces import read_traces
from hoprag.ingest.loaders import load_documents
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.spec import ENGINE_NAMES, EngineSpec
from hoprag.pipeline.batch import questions_from_cases, run_questions
from hoprag.progress import progress_bar, staged_progress
from hoprag.render import comparison_table

ENGINES = ENGINE_NAMES
# (label, engine, retrieval mode); the hybrid rows run when the demo is asked for dense vectors.
BM25_RUNS = (("single", "single", "bm25"), ("multihop", "multihop", "bm25"))
HYBRID_RUNS = (("single-hybrid", "single", "hybrid"), ("multihop-hybrid", "multihop", "hybrid"))
# (set name, importer format or "native", folder under the data dir, file pattern)
SETS = (
    ("hotpotqa", "hotpotqa", "hotpotqa", "*.json"),
    ("musique", "musique", "musique", "*.jsonl"),
    ("2wiki", "2wiki", "2wikimultihopqa", "*.json"),
    ("enterprise", "native", "enterprise", "cases.jsonl"),
)
REPORT_METRICS = (
    "chain_coverage@2",
    "chain_coverage@5",
    "chain_coverage@10",
    "hop1_recall@5",
    "answer_em",
    "answer_f1",
    "latency_ms_p50",
    "latency_ms_p95",
)


@dataclass(frozen=True)
class DemoReport:
    markdown: Path
    json: Path
    results: dict[str, dict[str, Any]]


def _prepare_set(name: str, fmt: str, folder: Path, pattern: str, work: Path) -> tuple[Path, Path, dict[str, int]]:
    work.mkdir(parents=True, exist_ok=True)
    if fmt == "native":
        cases, corpus = folder / "cases.jsonl", folder / "corpus.jsonl"
        for path in (cases, corpus):
            if not path.exists():
                raise InputError("missing file of the native case set", source=str(path), fix="restore it from the repository")
        shutil.copyfile(cases, work / "cases.jsonl")
        shutil.copyfile(corpus, work / "corpus.jsonl")
        stats = {"cases": len(load_cases(work / "cases.jsonl")), "documents": len(load_documents(work / "corpus.jsonl"))}
        return work / "cases.jsonl", work / "corpus.jsonl", stats
    files = sorted(folder.glob(pattern))
    if not files:
        raise InputError(f"no {pattern} files for {name}", source=str(folder), fix="restore the bundled data folder")
    result = import_dataset(fmt, files)
    write_import(result, work)
    return work / "cases.jsonl", work / "corpus.jsonl", dict(result.stats)


def _gate_set(store: Any, run_id: str, thresholds: Path | None) -> dict[str, Any]:
    """Gate one demo run on absolute bounds (a first run has no baseline to compare with)."""
    if thresholds is None or not thresholds.exists():
        return {"run_id": run_id, "gated": False, "reason": "no thresholds file"}
    from hoprag.gates.gate import evaluate_gate
    from hoprag.gates.thresholds import load_thresholds

    report = evaluate_gate(run_id, store.metrics(run_id), load_thresholds(thresholds), None, None)
    return {
        "run_id": run_id,
        "gated": True,
        "blocked": report.blocked,
        "blocking": sorted({f"{r.stage}/{r.metric}" for r in report.blocking_failures}),
        "warnings": sorted({f"{r.stage}/{r.metric}" for r in report.warnings}),
        "checked": len(report.rows),
    }


def run_demo(
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    quiet: bool = False,
    console: Console | None = None,
    store_url: str | None = None,
    thresholds: Path | None = Path("thresholds.yaml"),
    dense: bool = False,
    embedder: str = "minilm",
    redact: bool = True,
) -> DemoReport:
    """``store_url`` (default: ``HOPRAG_STORE`` or ``.hoprag/hoprag.db``) receives every stage's metrics.

    ``redact``: PII in the written and stored traces is replaced by placeholders (:mod:`hoprag.security.boundary`).
    """
    from hoprag.gates.staged_run import record_demo_stages
    from hoprag.store import RunStore

    data_dir, out_dir = Path(data_dir), Path(out_dir)
    console = console or Console()
    if not data_dir.is_dir():
        raise InputError("data folder not found", source=str(data_dir), fix="run from the repository root or pass --data")
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    started = time.time()
    store = RunStore(store_url)
    for name, fmt, folder, pattern in SETS:
        if not (data_dir / folder).is_dir():
            continue
        work = out_dir / name
        cases_path, corpus_path, stats = _prepare_set(name, fmt, data_dir / folder, pattern, work)
        documents = load_documents(corpus_path)
        with staged_progress(f"{name}: index", quiet=quiet) as progress:
            manifest = build_index(documents, work / "index", IndexConfig(dense=dense, embedder=embedder), progress=progress)
        index = open_index(work / "index")
        cases = load_cases(cases_path)
        questions = questions_from_cases(cases)
        entry: dict[str, Any] = {
            "import": stats,
            "dataset_version": dataset_version(cases_path),
            "index": {"documents": manifest.document_count, "chunks": manifest.chunk_count, "artifact_id": manifest.artifact_id},
            "engines": {},
        }
        runs = BM25_RUNS + (HYBRID_RUNS if dense else ())
        for engine_name, engine_kind, mode in runs:
            engine = make_engine(EngineSpec(engine=engine_kind, mode=mode), index)
            traces_path = work / f"traces-{engine_name}.jsonl"
            with progress_bar(f"{name}: {engine_name}", len(questions), quiet=quiet) as progress:
                summary = run_questions(engine, questions, traces_path, resume=False, progress=progress, redact=redact)
            traces = read_traces(traces_path)
            result = evaluate_chains(cases, traces, ks=(2, 5, 10), dataset_version=entry["dataset_version"])
            write_text(work / f"eval-{engine_name}.json", json.dumps(result.to_json(), indent=2), JSON_DOCUMENT)
            entry["engines"][engine_name] = {
                "run_id": summary.run_id,
                "config_hash": getattr(engine, "config_hash", ""),
                "aggregate": result.aggregate,
                "by_question_type": result.groups["question_type"],
                "stop_reasons": dict(Counter(t.stop_reason for t in traces)),
                "errors": summary.errors,
            }
        run_id = f"demo-{name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime(started))}"
        stage_counts = record_demo_stages(
            store,
            run_id,
            documents,
            list(index.chunks.values()),
            index,
            cases,
            {e: read_traces(work / f"traces-{e}.jsonl") for e in ENGINES},
            embedder=embedder if dense else "hash",  # embedding QA on the index's own model when it has one
            redact=redact,
        )
        entry["gates"] = {"metrics_per_stage": stage_counts, **_gate_set(store, run_id, thresholds)}
        results[name] = entry
        console.print(
            comparison_table(
                {e: entry["engines"][e]["aggregate"] for e in entry["engines"]},
                REPORT_METRICS,
                title=f"{name}: {len(cases)} cases, {manifest.document_count} documents",
                baseline="single",
            )
        )
    store.close()
    elapsed = time.time() - started
    json_path = out_dir / "report.json"
    md_path = out_dir / "report.md"
    payload = {"elapsed_s": round(elapsed, 2), "sets": results}
    write_text(json_path, json.dumps(payload, indent=2, ensure_ascii=False), JSON_DOCUMENT)
    write_text(md_path, render_markdown(results, elapsed), MARKDOWN_REPORT)
    return DemoReport(markdown=md_path, json=json_path, results=results)


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def render_markdown(results: dict[str, dict[str, Any]], elapsed: float) -> str:
    lines = [
        "# hoprag demo report",
        "",
        "Single-shot BM25 vs the offline multi-hop engine on the bundled samples; each set is indexed on its",
        "own pooled corpus (every context paragraph of every question). Latency is wall time on this machine.",
        "",
        "| set | engine | " + " | ".join(REPORT_METRICS) + " |",
        "|---|---|" + "---:|" * len(REPORT_METRICS),
    ]
    for name, entry in results.items():
        for engine in entry["engines"]:
            agg = entry["engines"][engine]["aggregate"]
            lines.append(f"| {name} | {engine} | " + " | ".join(_cell(agg.get(m)) for m in REPORT_METRICS) + " |")
        single = entry["engines"]["single"]["aggregate"].get("chain_coverage@5") or 0.0
        multi = entry["engines"]["multihop"]["aggregate"].get("chain_coverage@5") or 0.0
        lines.append(f"| {name} | **gain** | | **{multi - single:+.3f}** |" + " |" * (len(REPORT_METRICS) - 2))
    lines += ["", "## Chain coverage@5 by question type", "", "| set | type | cases | single | multihop |", "|---|---|---:|---:|---:|"]
    for name, entry in results.items():
        single = entry["engines"]["single"]["by_question_type"]
        multi = entry["engines"]["multihop"]["by_question_type"]
        for qtype in sorted(multi, key=str):
            s, m = single.get(qtype, {}), multi[qtype]
            lines.append(
                f"| {name} | {qtype} | {m.get('cases', '')} | {_cell(s.get('chain_coverage@5'))} | {_cell(m.get('chain_coverage@5'))} |"
            )
    lines += ["", "## Data and runs", "", "| set | cases | documents | chunks | dataset version | multihop stop reasons |", "|---|---:|---:|---:|---|---|"]
    for name, entry in results.items():
        stops = ", ".join(f"{k}: {v}" for k, v in sorted(entry["engines"]["multihop"]["stop_reasons"].items()))
        cases = entry["engines"]["multihop"]["aggregate"].get("cases")
        lines.append(
            f"| {name} | {cases} | {entry['index']['documents']} | {entry['index']['chunks']} | {entry['dataset_version']} | {stops} |"
        )
    lines += [
        "",
        "## Stage gates",
        "",
        "Every stage's metrics went to the run store under the run id below; gated on `thresholds.yaml`",
        "(absolute bounds: a first run has no baseline). Re-gate with `hoprag gate check --run ID --no-baseline`,",
        "or freeze a baseline with `hoprag gate baseline --run ID`.",
        "",
        "| set | run id | metrics per stage | verdict | blocking | warnings |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in results.items():
        gates = entry.get("gates", {})
        counts = ", ".join(f"{k} {v}" for k, v in gates.get("metrics_per_stage", {}).items())
        verdict = "not gated" if not gates.get("gated") else ("BLOCKED" if gates.get("blocked") else "passed")
        lines.append(
            f"| {name} | `{gates.get('run_id', '')}` | {counts} | {verdict} | "
            f"{', '.join(gates.get('blocking', [])) or '–'} | {', '.join(gates.get('warnings', [])) or '–'} |"
        )
    lines += ["", f"Total time: {elapsed:.1f} s.", ""]
    return "\n".join(lines)
