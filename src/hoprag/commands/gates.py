"""Stage-gate commands: gate run|baseline|check|diff, trec eval, feedback import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from hoprag.commands import (
    FORMAT_OPT,
    OLD_RUN_ID_OPT,
    PRINTED_JSON_OPT,
    STORE_HELP,
    group,
    renamed,
    run_id_given,
    wants_json,
)

out = Console()
err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    gate = group(app, "gate")
    feedback_app = group(app, "feedback")

    @gate.command("run")
    def gate_run_cmd(
        corpora: list[Path] = typer.Argument(..., help="corpus files (.jsonl/.json) or folders of .md/.txt"),
        cases: Path = typer.Option(..., "--cases", help="cases.jsonl with the questions and their labels"),
        out_dir: Path = typer.Option(..., "--out", help="directory for the index and traces"),
        run_id: Optional[str] = typer.Option(None, "--run-id", help="id to record the run under (default: new)"),
        engines: list[str] = typer.Option(["multihop"], "--engine", help="single and/or multihop (repeatable)"),
        embedder: str = typer.Option("auto", "--embedder", help="auto, static (model2vec), minilm (int8 MiniLM) or hash"),
        baseline: str = typer.Option("default", "--baseline", help="baseline whose reference batch drift is measured against"),
        feedback: Optional[Path] = typer.Option(None, "--feedback", help="feedback JSONL to import for this run"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    ) -> None:
        """Run ingest→chunk→embed→index→retrieve→generate→feedback with every stage gated; record metrics."""
        from hoprag.gates.staged_run import run_gated_pipeline
        from hoprag.store import RunStore

        from hoprag.pipeline.spec import ENGINE_NAMES

        for engine in engines:
            if engine not in ENGINE_NAMES:
                raise typer.BadParameter(f"unknown engine '{engine}'; valid: {', '.join(ENGINE_NAMES)}")
        with RunStore(store) as run_store:
            result = run_gated_pipeline(corpora, cases, out_dir, run_store, run_id=run_id, engines=engines,
                                        embedder=embedder, baseline=baseline, feedback_path=feedback)
            counts = ", ".join(f"{stage}={n}" for stage, n in result.metrics_by_stage.items())
            out.print(f"run {result.run_id}: {sum(result.metrics_by_stage.values())} metrics ({counts}) → "
                      f"{run_store.display_url}")
        print(result.run_id)

    @gate.command("baseline")
    def baseline_cmd(
        run_id: Optional[str] = typer.Option(None, "--run-id", metavar="RUN", help="run id to freeze"),
        name: str = typer.Option("default", "--name", help="baseline name"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        old_run: Optional[str] = OLD_RUN_ID_OPT,
    ) -> None:
        """Freeze a run (its metrics and reference embedding batch) as the baseline."""
        run = run_id_given(run_id, old_run)
        from hoprag.gates.baseline import freeze_baseline
        from hoprag.store import RunStore

        with RunStore(store) as run_store:
            frozen = freeze_baseline(run_store, run, name)
        ref = "none" if frozen.reference is None else f"{frozen.reference.shape[0]}×{frozen.reference.shape[1]}"
        out.print(f"baseline '{name}' = run {run}: {len(frozen.metrics)} metrics, reference batch {ref}")

    @gate.command("check")
    def gate_cmd(
        run_id: Optional[str] = typer.Option(None, "--run-id", metavar="RUN", help="run id to gate"),
        thresholds: Path = typer.Option(Path("thresholds.yaml"), "--thresholds", help="thresholds YAML"),
        baseline: str = typer.Option("default", "--baseline", help="baseline name"),
        no_baseline: bool = typer.Option(False, "--no-baseline", help="gate on absolute bounds only"),
        output_format: str = FORMAT_OPT,
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        old_run: Optional[str] = OLD_RUN_ID_OPT,
        printed_json: bool = PRINTED_JSON_OPT,
    ) -> None:
        """Check a run against thresholds; exit 1 on any blocking failure, 0 when only warnings fire."""
        run = run_id_given(run_id, old_run)
        as_json = wants_json(output_format, printed_json)
        from hoprag.gates.baseline import load_baseline
        from hoprag.gates.gate import evaluate_gate
        from hoprag.gates.render import gate_table
        from hoprag.gates.thresholds import load_thresholds

        from hoprag.store import RunStore

        rules = load_thresholds(thresholds)
        with RunStore(store) as run_store:
            run_store.require_run(run)
            base = None if no_baseline else load_baseline(run_store, baseline)
            report = evaluate_gate(run, run_store.metrics(run), rules, base.metrics if base else None,
                                   base.info.run_id if base else None)
        if as_json:
            from hoprag.json_text import dumps_printed

            print(dumps_printed(report.to_json()))
        else:
            out.print(gate_table(report))
            verdict = "[red]BLOCKED[/]" if report.blocked else "[green]passed[/]"
            out.print(f"{verdict}: {len(report.blocking_failures)} blocking failure(s), {len(report.warnings)} warning(s)")
        if report.blocked:
            # SystemExit, not typer.Exit: hoprag.cli.main runs click with standalone_mode=False,
            # where a typer.Exit code is returned (and dropped) instead of raised
            raise SystemExit(1)

    @gate.command("diff")
    def diff_cmd(
        run_a: str = typer.Argument(...),
        run_b: str = typer.Argument(...),
        output_format: str = FORMAT_OPT,
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        printed_json: bool = PRINTED_JSON_OPT,
    ) -> None:
        """Every metric of two runs side by side, with the change."""
        as_json = wants_json(output_format, printed_json)
        from hoprag.gates.diff import diff_runs
        from hoprag.gates.render import diff_table
        from hoprag.store import RunStore

        with RunStore(store) as run_store:
            rows = diff_runs(run_store, run_a, run_b)
        if as_json:
            from hoprag.json_text import dumps_printed

            print(dumps_printed([{"stage": r.stage, "metric": r.metric, "a": r.a, "b": r.b, "delta": r.delta}
                                 for r in rows]))
            return
        out.print(diff_table(rows, run_a, run_b))

    @group(app, "trec").command("eval")
    def trec_eval_cmd(
        qrels: Path = typer.Argument(..., help="TREC qrels: qid 0 docid rel"),
        run: Path = typer.Argument(..., help="TREC run: qid Q0 docid rank score tag"),
        measures: list[str] = typer.Option(["P@5", "RR", "nDCG@10", "R@100"], "-m", "--measure",
                                           help="ir_measures names: P@k R@k nDCG nDCG@k RR AP Success@k"),
        per_query: bool = typer.Option(False, "--per-query", help="also give every query's value"),
        output_format: str = FORMAT_OPT,
        include_missing: bool = typer.Option(False, "--include-missing", help="score qrels queries absent from the run as 0 (trec_eval -c)"),
        printed_json: bool = PRINTED_JSON_OPT,
    ) -> None:
        """Retrieval measures straight from TREC qrels and run files (values equal trec_eval's)."""
        as_json = wants_json(output_format, printed_json)
        from hoprag.evaluation.measures.documents import retrieval_measures
        from hoprag.trec import read_qrels, read_run

        result = retrieval_measures(read_qrels(qrels), read_run(run), measures, include_missing=include_missing)
        if as_json:
            payload: dict[str, object] = {"queries": result.queries, "aggregate": result.aggregate}
            if per_query:
                payload["per_query"] = result.per_query
            print(json.dumps(payload, indent=2))
            return
        if per_query:
            for name, values in result.per_query.items():
                for qid, value in values.items():
                    print(f"{name}\t{qid}\t{value:.6f}")
        for name, value in result.aggregate.items():
            print(f"{name}\tall\t{value:.6f}")

    @feedback_app.command("import")
    def feedback_import_cmd(
        file: Path = typer.Argument(..., help="feedback JSONL (thumbs, tag, view, click events)"),
        run_id: Optional[str] = typer.Option(None, "--run-id", metavar="RUN", help="run id for events that name none"),
        window: str = typer.Option("1d", "--window", help="thumbs-up rate window: 1h, 1d, 7d, 1w"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        old_run: Optional[str] = OLD_RUN_ID_OPT,
    ) -> None:
        """Store feedback events and record the feedback metrics of every run they name."""
        run = run_id_given(run_id, old_run, required=False)
        from hoprag.gates.feedback_import import import_feedback
        from hoprag.store import RunStore

        with RunStore(store) as run_store:
            summary = import_feedback(run_store, file, run_id=run, window=window)
        for named, (added, metrics) in summary.items():
            out.print(f"run {named}: {added} new event(s), {metrics} feedback metrics recorded")

    renamed(app, "gate-run", gate_run_cmd, "gate run")
    renamed(app, "baseline", baseline_cmd, "gate baseline")
    renamed(app, "diff", diff_cmd, "gate diff")
    renamed(app, "trec-eval", trec_eval_cmd, "trec eval")
