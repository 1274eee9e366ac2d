"""Evidence-chain evaluation commands: eval (and chain-eval, its former name), ablate, compare,
release, export-trec. Each parses arguments, calls one public function and prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from hoprag.cli_engine import engine_options
from hoprag.commands import (
    ACL_LEVELS_OPT,
    CLEARANCE_OPT,
    EXECUTOR_OPT,
    SCORING_WORKERS_OPT,
    WORKERS_OPT,
    CUTOFF_OPT,
    OLD_CUTOFF_LIST_OPT,
    OLD_CUTOFF_OPT,
    caller_clearance,
    cutoff_given,
    group,
    renamed,
    seed_option,
)
from hoprag.gc_pause import collector_paused
from hoprag.json_text import dumps_indented

out = Console()
err = Console(stderr=True)

# ablate's engine flags (hoprag.cli_engine): its rows fix the engines and roles; --cutoff is its score cut-off
ABLATE_FLAGS = ("mode", "fusion", "planner_llm", "base_url", "api_key", "llm_timeout", "llm_retries", "n_ctx",
                "llm_budget", "strict_llm")
ABLATE_PLANNER_OPT = typer.Option(
    None, "--planner-llm", help="LLM planner for the iterative rows (default: the offline planner), vs the fixed template"
)


def scoring_executor(executor: str, workers: Optional[int]) -> Any:
    """Where ``eval`` and ``compare`` score: ``local`` is forked processes (scoring is CPU-bound, so
    threads would take turns), Ray as it is given."""
    from hoprag.executors import parse_executor
    from hoprag.forks import ProcessExecutor

    pool = parse_executor(executor, workers=workers)
    return ProcessExecutor(workers=workers) if pool.name == "local" else pool


def csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def write_json(path: Optional[Path], payload: Any) -> None:
    if path is not None:
        from hoprag.io.kinds import JSON_DOCUMENT
        from hoprag.io.outputs import write_text

        write_text(path, dumps_indented(payload), JSON_DOCUMENT)  # json.dumps(indent=2)'s text, faster
        out.print(f"wrote {path}")


def checked_cases(path: Path) -> list:
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.graph import check_cases

    return check_cases(load_cases(path), source=str(path))


def report_trace_problems(report: Any, *, strict: bool, excluded: int = 0) -> None:
    """Warn about traces not scored as given (``eval``, ``chain-eval``); ``--strict`` makes
    duplicates and unknown case ids exit 1."""
    if excluded:
        err.print(f"[yellow]warning:[/] {excluded} trace line(s) excluded (--lenient); --json lists them under 'exclusions'")
    for warning in report.trace_warnings():
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if strict and report.has_trace_problems:
        err.print("[red]error:[/] --strict: duplicate traces or traces for unknown case ids (see the warnings above)")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    @app.command("eval")
    @collector_paused()  # reads, scores, writes and exits: see hoprag.gc_pause
    def eval_cmd(
        cases_file: Path = typer.Argument(..., help="cases.jsonl"),
        traces_file: Path = typer.Argument(..., help="traces.jsonl from any pipeline"),
        ks: list[int] = typer.Option([2, 5, 10], "--cutoff", min=1, help="cut-offs of the @k measures, e.g. --cutoff 2 5 10"),
        old_ks: Optional[list[int]] = OLD_CUTOFF_LIST_OPT,
        measures: list[str] = typer.Option(
            [], "-m", "--measure", help="also score these registered measures, e.g. the document-level ones "
            "hoprag trec eval gives: -m P@5 -m R@5 -m nDCG@10 -m RR -m AP -m Success@5"),
        json_out: Optional[Path] = typer.Option(None, "--json", help="write {aggregate, cases, ...} JSON here"),
        html_out: Optional[Path] = typer.Option(None, "--html", help="write a self-contained HTML report here"),
        oracle: Optional[Path] = typer.Option(None, "--oracle", help="traces of an oracle-hop run (conditional hop recall)"),
        corpus: Optional[Path] = typer.Option(
            None, "--corpus", help="corpus the cases cite: verify every label against it (cases with broken labels are "
            "excluded from scoring and listed) and detect missing corpus facts"
        ),
        span_match: str = typer.Option("exact", "--span-match", help="with --corpus: exact | whitespace span comparison"),
        lenient: bool = typer.Option(
            False, "--lenient", help="exclude (and count) unreadable trace lines and a cut-off last line instead of failing"
        ),
        strict: bool = typer.Option(False, "--strict", help="exit 1 on duplicate traces or traces for unknown case ids"),
        judge_calibration: Optional[Path] = typer.Option(
            None, "--judge-calibration", help="the judge's calibration record (hoprag judge calibrate --out): its kappa, "
            "CI, n, file hash and date go into every judged metric's meta (without one the meta says uncalibrated)"),
        executor: str = EXECUTOR_OPT,
        workers: Optional[int] = SCORING_WORKERS_OPT,
        otel_out: Optional[Path] = typer.Option(
            None, "--otel-out", help="write each scored case's results as OpenTelemetry gen_ai.evaluation.result "
            "events (OTLP JSON logs, one request per line), on the trace and span the trace came from"),
        otel_endpoint: Optional[str] = typer.Option(
            None, "--otel-endpoint", metavar="URL", help="send the same events to this OTLP/HTTP receiver "
            "(e.g. http://127.0.0.1:4318; /v1/logs is added), after every file is written"),
        otel_timeout: float = typer.Option(10.0, "--otel-timeout", min=0.1, max=3600, metavar="SECONDS",
                                           help="the most --otel-endpoint may take, connecting and sending"),
    ) -> None:
        """Score traces against evidence-chain cases: chain coverage, hop recall, path precision,
        answers and attribution, earliest failure, latency and stopping."""
        from hoprag.datasets.schema import dataset_version
        from hoprag.evaluation.attribution import TokenContainmentJudge
        from hoprag.evaluation.calibration_record import judged_metric_meta, load_calibration
        from hoprag.evaluation.chain_eval import evaluate_chains
        from hoprag.evaluation.chain_scoring import named_measure
        from hoprag.evaluation.label_match import check_traces_meet_labels
        from hoprag.io.traces import read_traces, read_traces_file
        from hoprag.otel_scores import check_endpoint
        from hoprag.render import comparison_table

        pool = scoring_executor(executor, workers)  # a missing ray extra stops before any file is read
        logs_url = None if otel_endpoint is None else check_endpoint(otel_endpoint)  # a bad URL stops here, too
        for name in measures:  # an unknown -m name stops before any file is read, too
            named_measure(name)
        judge = TokenContainmentJudge()
        record = load_calibration(judge_calibration) if judge_calibration is not None else None
        metric_meta = judged_metric_meta(judge, record, source=str(judge_calibration))
        cases, labels, corpus_ids = cases_and_labels(cases_file, corpus, span_match)
        read = read_traces_file(traces_file, lenient=lenient)
        traces, excluded = read.traces, list(read.exclusions)
        if unmatched := check_traces_meet_labels(cases, traces, str(traces_file), corpus_ids=corpus_ids):
            err.print(f"[yellow]warning:[/] {escape(str(traces_file))}: {escape(unmatched)}")
        oracle_traces = read_traces(oracle) if oracle is not None else None
        report = evaluate_chains(
            cases, traces, ks=tuple(cutoff_given(ks, old_ks)), oracle_traces=oracle_traces, dataset_version=dataset_version(cases_file),
            corpus_ids=corpus_ids, label_report=labels,
            exclusions=excluded, judge=judge, executor=pool, cases_checked=corpus is None,  # checked as read
            extra_measures=tuple(measures),
        )
        payload = {**report.to_json(), "metric_meta": metric_meta}
        names = [n for n in payload["aggregate"] if not n.startswith(("n_", "na_"))]
        out.print(comparison_table({traces_file.name: payload["aggregate"]}, names, title=f"evaluation of {traces_file}"))
        failures = payload.get("failures") or {}
        if failures:
            out.print("earliest failures: " + ", ".join(f"{k}={v}" for k, v in failures.items() if v))
        if payload.get("not_assessable"):
            from hoprag.evaluation.failures import not_assessable_note

            out.print(not_assessable_note(payload["not_assessable"]))
        print_slices(payload.get("groups") or {}, payload["config"]["ks"])
        print_label_summary(labels, cases_file, corpus)
        print_judge_meta(metric_meta)
        write_json(json_out, payload)
        if html_out is not None:
            from hoprag.report.html import write_html

            write_html(html_out, payload, title=f"evaluation of {traces_file.name}", cases=cases, traces=report.traces)
            out.print(f"wrote {html_out}")
        emit_scores(payload, report.traces, otel_out, logs_url, otel_timeout, written=[json_out, html_out])
        report_trace_problems(report, strict=strict, excluded=len(excluded))

    @app.command("ablate")
    @engine_options(ABLATE_FLAGS, options={"planner_llm": ABLATE_PLANNER_OPT})
    def ablate_cmd(
        index_dir: str = typer.Argument(..., help="index directory, or a postgresql://…?index=NAME URL"),
        cases_file: Path = typer.Argument(...),
        out_dir: Path = typer.Option(..., "--out"),
        k: int = CUTOFF_OPT,
        old_k: Optional[int] = OLD_CUTOFF_OPT,
        oracle_mode: str = typer.Option("augment", "--oracle-mode", help="augment or replace hop 1 with the gold chunks"),
        clearance: Optional[str] = CLEARANCE_OPT,
        acl_levels: Optional[str] = ACL_LEVELS_OPT,
        executor: str = EXECUTOR_OPT,
        workers: Optional[int] = WORKERS_OPT,
        spec=None,  # the EngineSpec hoprag.cli_engine.engine_options makes of the engine flags
    ) -> None:
        """Single vs iterative, planner vs fixed template, ordering on/off, oracle-hop, oracle-evidence, minimal evidence.

        --cutoff is the cut-off of the scores; the engines' hits per call is the engine config's k."""
        k = cutoff_given(k, old_k)
        from hoprag.evaluation.ablations import AblationRecipe, ablation_planner, check_ablation_spec, run_ablations
        from hoprag.executors import parse_executor
        from hoprag.index.open import index_location, open_index

        pool = parse_executor(executor, workers=workers)
        planner = ablation_planner(check_ablation_spec(spec))
        index = open_index(index_dir)
        cleared = caller_clearance(clearance, acl_levels, index)
        # a Ray worker builds the same engines over the same index (AblationRecipe)
        setup = AblationRecipe(index_location(index_dir), spec=spec, clearance=cleared) if pool.name == "ray" else None
        run_ablations(index, checked_cases(cases_file), out_dir, k=k, oracle_mode=oracle_mode, planner=planner,
                      clearance=cleared, executor=pool, setup=setup, spec=spec)
        out.print((out_dir / "ablations.md").read_text(encoding="utf-8"))

    @app.command("compare")
    @collector_paused()
    def compare_cmd(
        run_a: Path = typer.Argument(..., help="baseline traces"),
        run_b: Path = typer.Argument(..., help="candidate traces"),
        cases_file: Optional[Path] = typer.Option(
            None, "--cases", help="cases.jsonl (default: the cases.jsonl beside RUN_A, as `hoprag import` and the demo lay out)"
        ),
        cluster: str = typer.Option("path", "--cluster", help="path, template, source_family or case"),
        seed: int = seed_option(0, "bootstrap seed"),
        resamples: int = typer.Option(2000, "--resamples", min=100, max=1_000_000),
        k: int = CUTOFF_OPT,
        old_k: Optional[int] = OLD_CUTOFF_OPT,
        json_out: Optional[Path] = typer.Option(None, "--json"),
        workers: Optional[int] = typer.Option(
            None, "--workers", min=1, max=4096, metavar="N",
            help="scoring processes (default: one per CPU, at most one per 500 cases; 1 scores in this process)"),
    ) -> None:
        """Paired case-level differences (B - A) with cluster-bootstrap intervals."""
        from hoprag.errors import InputError
        from hoprag.evaluation.compare import compare_runs
        from hoprag.io.traces import read_traces

        if cases_file is None:
            cases_file = run_a.parent / "cases.jsonl"
            if not cases_file.exists():
                raise InputError(
                    "no cases.jsonl beside the baseline traces", source=str(run_a), fix="pass --cases CASES.jsonl"
                )
        pool = scoring_executor("local", workers)
        k = cutoff_given(k, old_k)
        result = compare_runs(checked_cases(cases_file), read_traces(run_a), read_traces(run_b), k=k, cluster_by=cluster,
                              resamples=resamples, seed=seed, executor=pool)
        out.print(f"B - A, clusters={cluster}, seed={seed}, resamples={resamples}, budget={result.budget_ms}")
        for row in result.rows:
            out.print(f"{row['metric']:28} A={_f(row['mean_a'])} B={_f(row['mean_b'])} diff={_f(row['diff'])} "
                      f"95% CI [{_f(row['ci_low'])}, {_f(row['ci_high'])}] p={_f(row['p_value'])} n={row['n']} "
                      f"clusters={row['n_clusters']} excluded={row['excluded']}")
        write_json(json_out, result.to_json())

    @app.command("release")
    def release_cmd(
        cases_file: Path = typer.Argument(...),
        traces_file: Path = typer.Argument(...),
        policy_file: Path = typer.Option(..., "--policy"),
        json_out: Optional[Path] = typer.Option(None, "--json"),
        allow_uncalibrated: bool = typer.Option(
            False, "--allow-uncalibrated", help="gate judge metrics even when the policy names no judge calibration"),
    ) -> None:
        """Apply a frozen release policy; exit 0 pass, 1 fail (with the reasons)."""
        from hoprag.evaluation.chain_eval import evaluate_chains
        from hoprag.evaluation.calibration_record import uncalibrated_meta
        from hoprag.evaluation.release import (
            JUDGE_METRICS, decide, judge_calibration, judge_metrics, load_policy, refuse_oracle)
        from hoprag.io.traces import read_traces

        policy = load_policy(policy_file)
        calibration = judge_calibration(policy, allow_uncalibrated=allow_uncalibrated)
        if calibration is None and judge_metrics(policy):
            err.print(f"[yellow]warning:[/] --allow-uncalibrated: {', '.join(judge_metrics(policy))} gated by an "
                      "uncalibrated judge")
        cases = checked_cases(cases_file)
        traces = read_traces(traces_file)
        refuse_oracle(traces)
        report = evaluate_chains(cases, traces, ks=tuple(sorted({2, 5, 10, policy.k})))
        judge = report.config["judge"]
        judge_meta = calibration or uncalibrated_meta(judge["model_id"], judge["prompt_version"])
        decision = decide(cases, report, policy, judge_meta=judge_meta)
        write_json(json_out, {**decision.to_json(), "judge_calibration": calibration,
                              "metric_meta": {m: judge_meta for m in JUDGE_METRICS}})
        out.print(f"policy {policy.digest}: {'PASS' if decision.passed else 'FAIL'} ({len(decision.checks)} checks)")
        if calibration is not None:
            out.print(f"judge {calibration['judge_model_id']} calibrated: kappa={calibration['calibration_kappa']} "
                      f"95% CI {calibration['calibration_kappa_ci95']} n={calibration['calibration_n']} "
                      f"({calibration['calibration_digest']})", soft_wrap=True)
        for reason in decision.reasons:
            out.print(f"  [red]✗[/] {reason}")
        if not decision.passed:
            raise typer.Exit(1)

    @group(app, "trec").command("export")
    def export_trec_cmd(
        cases_file: Path = typer.Argument(...),
        traces_file: Path = typer.Argument(...),
        qrels: Path = typer.Option(..., "--qrels"),
        run: Path = typer.Option(..., "--run"),
        source: str = typer.Option("evidence", "--source", help="evidence (final context) or hits (every step)"),
        tag: str = typer.Option("hoprag", "--tag"),
    ) -> None:
        """Write TREC qrels and a run file (document level) for trec_eval / ir_measures: what eval -m and the retrieve gate score."""
        from hoprag.errors import ConfigError
        from hoprag.evaluation.qrels import RUN_SOURCES, qrels_from_cases, run_from_traces
        from hoprag.io.traces import read_traces
        from hoprag.trec import write_qrels, write_run

        if source not in RUN_SOURCES:
            raise ConfigError(f"unknown --source {source!r}; valid: {', '.join(RUN_SOURCES)}. Fix: pass one of them")
        from hoprag.evaluation.label_match import check_traces_meet_labels

        cases = checked_cases(cases_file)
        traces = list(read_traces(traces_file))
        if unmatched := check_traces_meet_labels(cases, traces, str(traces_file)):  # never a run matching no qrels
            err.print(f"[yellow]warning:[/] {escape(str(traces_file))}: {escape(unmatched)}")
        n_q = write_qrels(qrels, qrels_from_cases(cases))
        n_r = write_run(run, run_from_traces(traces, source), tag=tag)
        out.print(f"wrote {n_q} qrels lines → {qrels}, {n_r} run lines → {run}")

    renamed(app, "chain-eval", eval_cmd, "eval")
    renamed(app, "export-trec", export_trec_cmd, "trec export")


def cases_and_labels(cases_file: Path, corpus: Optional[Path], span_match: str = "exact") -> tuple[list, Any, Any]:
    """The cases to score, their label report and the corpus ids (``eval`` / ``chain-eval --corpus``).

    Without a corpus the cases load strictly (a broken reference stops with its fix); with one,
    every label is verified against it and broken ones are reported, not raised."""
    if corpus is None:
        return checked_cases(cases_file), None, None
    from hoprag.datasets.labels import read_cases_checked, verify_labels
    from hoprag.ingest.loaders import load_documents

    cases, problems = read_cases_checked(cases_file)
    documents = load_documents(corpus)
    labels = verify_labels(cases, documents, span_match=span_match, problems=problems)
    return cases, labels, {d.id for d in documents}


def print_slices(groups: dict[str, dict[str, Any]], ks: list[int]) -> None:
    """Chain coverage (and answer F1 where scored) by hop count and by answer kind, where a set has more
    than one; --json holds every measure of every slice under 'groups'."""
    k = 5 if 5 in ks else ks[0]
    for key, label in (("chain_hops", "by chain hops"), ("answer_kind", "by answer kind")):
        slices = groups.get(key) or {}
        if len(slices) < 2:
            continue
        out.print(f"{label}:")
        for name, agg in slices.items():
            f1 = agg.get("answer_f1")
            out.print(f"  {name:14} n={agg.get('cases'):<5} chain_coverage@{k} {_f(agg.get(f'chain_coverage@{k}'))}"
                      + (f"  answer_f1 {_f(f1)}" if f1 is not None else ""))


def emit_scores(payload: dict[str, Any], traces: Any, otel_out: Optional[Path], logs_url: Optional[str],
                timeout: float, written: list[Optional[Path]]) -> None:
    """``--otel-out`` / ``--otel-endpoint`` (:mod:`hoprag.otel_scores`): the file first, the endpoint last."""
    if otel_out is None and logs_url is None:
        return
    from hoprag.otel_scores import ScoreEvents, send_otlp, write_otlp_file

    events = ScoreEvents.of(payload, traces)
    if otel_out is not None:
        write_otlp_file(otel_out, events.requests)
        out.print(f"wrote {events.summary()} → {otel_out}", soft_wrap=True)
    if logs_url is not None:
        files = ", ".join(str(p) for p in (*written, otel_out) if p is not None)
        send_otlp(logs_url, events.requests, timeout=timeout, written=f"the results are in {files}" if files else "")
        out.print(f"sent {events.summary()} → {logs_url}", soft_wrap=True)


def print_judge_meta(metric_meta: dict[str, dict[str, Any]]) -> None:
    """One line on the judge behind the judged metrics: its calibration, or that it has none."""
    if not metric_meta:
        return
    names = ", ".join(metric_meta)
    meta = next(iter(metric_meta.values()))
    if meta["calibration"] == "uncalibrated":
        out.print(f"{names}: judge {meta['judge_model_id']} (prompt {meta['judge_prompt_version']}) is uncalibrated; "
                  "pass --judge-calibration FILE to record its agreement with humans", soft_wrap=True)
        return
    out.print(f"{names}: judge {meta['judge_model_id']} (prompt {meta['judge_prompt_version']}) calibrated: "
              f"kappa={meta['calibration_kappa']} 95% CI {meta['calibration_kappa_ci95']} n={meta['calibration_n']} "
              f"({meta['calibration_file_sha256']}, {meta['calibration_date']})", soft_wrap=True)


def print_label_summary(labels: Any, cases_file: Path, corpus: Optional[Path]) -> None:
    """Warn (stderr) about cases excluded for label errors and facts whose source is missing."""
    if labels is None:
        return
    excluded = labels.excluded_cases
    if excluded:
        err.print(f"[yellow]warning:[/] {len(excluded)} case(s) with label errors excluded from scoring: "
                  f"{escape(', '.join(excluded[:10]))}{' …' if len(excluded) > 10 else ''}; "
                  f"every problem: hoprag cases audit {escape(str(cases_file))} {escape(str(corpus))}", soft_wrap=True)
    missing = [m for m in labels.missing_source_facts() if m["case_id"] not in set(excluded)]
    if missing:
        cases = sorted({m["case_id"] for m in missing})
        err.print(f"[yellow]warning:[/] {len(missing)} fact(s) in {len(cases)} case(s) cite sources absent from the corpus "
                  f"({escape(', '.join(cases[:10]))}{' …' if len(cases) > 10 else ''}); they are scored as missing corpus facts",
                  soft_wrap=True)


def _f(value: Any) -> str:
    return "–" if value is None else f"{value:.4f}"
