"""Evidence-chain evaluation commands: audit, split, leakage, ablate, compare, release, synth,
export-trec (and chain-eval, the former name of eval). Each parses arguments, calls one public function and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from hoprag.cli_llm import (
    API_KEY_OPT,
    BASE_URL_OPT,
    LLM_BUDGET_OPT,
    LLM_RETRIES_OPT,
    LLM_TIMEOUT_OPT,
    N_CTX_OPT,
    STRICT_LLM_OPT,
    llm_settings,
)
from hoprag.commands import ACL_LEVELS_OPT, CLEARANCE_OPT, caller_clearance

out = Console()
err = Console(stderr=True)


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _write_json(path: Optional[Path], payload: Any) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
        out.print(f"wrote {path}")


def _cases(path: Path) -> list:
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.graph import check_cases

    return check_cases(load_cases(path), source=str(path))


def report_trace_problems(report: Any, *, strict: bool, excluded: int = 0) -> None:
    """Warn about traces not scored as given (``eval``, ``chain-eval``); ``--strict`` makes
    duplicates and unknown case ids exit 1."""
    from rich.markup import escape

    if excluded:
        err.print(f"[yellow]warning:[/] {excluded} trace line(s) excluded (--lenient); --json lists them under 'exclusions'")
    for warning in report.trace_warnings():
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if strict and report.has_trace_problems:
        err.print("[red]error:[/] --strict: duplicate traces or traces for unknown case ids (see the warnings above)")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    @app.command("chain-eval", hidden=True)
    def chain_eval_cmd(
        cases_file: Path = typer.Argument(..., help="cases.jsonl"),
        traces_file: Path = typer.Argument(..., help="traces.jsonl from any pipeline"),
        ks: list[int] = typer.Option([2, 5, 10], "--k", min=1, help="cut-offs"),
        oracle: Optional[Path] = typer.Option(None, "--oracle", help="oracle-hop traces (conditional recall)"),
        corpus: Optional[Path] = typer.Option(None, "--corpus", help="corpus the cases cite (see `hoprag eval --help`)"),
        span_match: str = typer.Option("exact", "--span-match", help="with --corpus: exact | whitespace"),
        lenient: bool = typer.Option(False, "--lenient", help="exclude (and count) unreadable trace lines"),
        strict: bool = typer.Option(False, "--strict", help="exit 1 on duplicate or unknown trace ids"),
        json_out: Optional[Path] = typer.Option(None, "--json"),
        html_out: Optional[Path] = typer.Option(None, "--html", help="self-contained HTML report"),
    ) -> None:
        """The former name of `hoprag eval`, kept so existing scripts run: one command scores traces."""
        from hoprag.cli import eval_cmd

        err.print("note: `hoprag chain-eval` is `hoprag eval` now (same options); use that")
        eval_cmd(cases_file=cases_file, traces_file=traces_file, ks=ks, json_out=json_out, html_out=html_out,
                 oracle=oracle, corpus=corpus, span_match=span_match, lenient=lenient, strict=strict)

    @app.command("audit")
    def audit_cmd(
        cases_file: Path = typer.Argument(..., help="cases.jsonl"),
        corpus: Path = typer.Argument(..., help="corpus the cases are answered from"),
        record: Optional[Path] = typer.Option(
            None, "--out", help="append the shortcuts found to this JSONL record (default: shortcuts.jsonl beside CASES)"
        ),
        json_out: Optional[Path] = typer.Option(None, "--json"),
        span_match: str = typer.Option(
            "exact", "--span-match", help="exact | whitespace: how a span's text is compared with its document's text"
        ),
        fail: bool = typer.Option(False, "--fail-on-findings", help="exit 1 when a shortcut or a label problem is found"),
    ) -> None:
        """Label verification and shortcut audit: every span against its source, missing sources, undefined
        facts; single-document answers, title / URL / metadata leaks, query leaks."""
        from hoprag.datasets.audit import audit, write_shortcut_record
        from hoprag.datasets.labels import read_cases_checked, verify_labels
        from hoprag.ingest.loaders import load_documents

        cases, load_problems = read_cases_checked(cases_file)
        documents = load_documents(corpus)
        labels = verify_labels(cases, documents, span_match=span_match, problems=load_problems)
        report = audit(cases, documents, labels=labels)
        payload = report.to_json()
        _print_labels(labels)
        if not report.findings:
            out.print(f"no shortcuts found in {report.cases} cases over {report.documents} documents")
        for f in report.findings:
            out.print(f"[yellow]{f.case_id}[/] {f.kind} doc={f.doc_id} field={f.field} {escape(repr(f.evidence))} → {f.suggestion}")
        for note in report.notes[:10]:
            err.print(f"note: {note['case_id']}: {note['note']}")
        # The record of shortcuts is kept: corpus updates can introduce new ones later.
        record = record or cases_file.parent / "shortcuts.jsonl"
        snapshot = next((c.corpus_snapshot for c in cases if c.corpus_snapshot), None)
        write_shortcut_record(record, report, snapshot=snapshot)
        out.print(f"recorded {len(report.findings)} shortcuts → {record}")
        _write_json(json_out, payload)
        out.print(f"flagged {len(report.flagged_cases)} of {report.cases} cases: {escape(str(payload['counts']))}")
        if fail and (report.findings or labels.problems):
            raise typer.Exit(1)

    @app.command("split")
    def split_cmd(
        cases_file: Path = typer.Argument(...),
        by: str = typer.Option("source_family,entity,template", "--by", help="keys: source_family,entity,template,seed,question_type"),
        ratios: str = typer.Option("0.7,0.15,0.15", "--ratios"),
        seed: int = typer.Option(7, "--seed"),
        out_dir: Path = typer.Option(..., "--out", help="directory for train/dev/test.jsonl and split.json"),
        seal: str = typer.Option("test", "--seal", help="partitions to seal with a content hash"),
        evidence_threshold: float = typer.Option(
            0.8, "--evidence-threshold", min=0.01, max=1.0, help="also keep together cases whose evidence Jaccard reaches this"
        ),
        paraphrase_threshold: float = typer.Option(
            0.6, "--paraphrase-threshold", min=0.01, max=1.0, help="also keep together paraphrased questions (content-word Jaccard)"
        ),
    ) -> None:
        """Grouped split: every case sharing a key value, near-identical evidence or a paraphrased question
        stays in one partition; the test set is sealed."""
        from hoprag.datasets.splits import grouped_split, write_split
        from hoprag.errors import ConfigError

        try:
            parts = [float(r) for r in _csv(ratios)]
        except ValueError:
            raise ConfigError(f"--ratios must be numbers like 0.7,0.15,0.15, got {ratios!r}") from None
        result = grouped_split(_cases(cases_file), _csv(by), parts, seed=seed, evidence_threshold=evidence_threshold,
                               paraphrase_threshold=paraphrase_threshold)
        manifest = write_split(result, out_dir, sealed=_csv(seal))
        sizes = ", ".join(f"{n}={e['cases']}" for n, e in manifest["partitions"].items())
        out.print(f"{manifest['groups']} groups (largest {manifest['largest_group']}): {sizes} → {out_dir}")
        links = manifest["links"]
        if links.get("evidence") or links.get("paraphrase"):
            out.print(f"kept together beyond the keys: {links['evidence']} case pairs with near-identical evidence, "
                      f"{links['paraphrase']} paraphrased question pairs")
        empty = [n for n, e in manifest["partitions"].items() if not e["cases"]]
        if empty:
            err.print(f"[yellow]warning:[/] partitions {empty} are empty: the keys join cases into "
                      f"{manifest['groups']} group(s); drop a key (e.g. entity) or add cases")
        for name, entry in manifest["partitions"].items():
            if entry.get("sealed"):
                out.print(f"sealed {name}: {entry['sha256']}")

    @app.command("leakage")
    def leakage_cmd(
        files: list[Path] = typer.Argument(..., help="TRAIN DEV TEST (any number of partitions)"),
        threshold: float = typer.Option(0.7, "--threshold", min=0.0, max=1.0, help="near-duplicate Jaccard threshold (0–1)"),
        json_out: Optional[Path] = typer.Option(None, "--json"),
        evidence_threshold: float = typer.Option(
            0.8, "--evidence-threshold", min=0.01, max=1.0,
            help="required-fact / source Jaccard at which two cases' evidence counts as near-identical",
        ),
        paraphrase_threshold: float = typer.Option(
            0.6, "--paraphrase-threshold", min=0.01, max=1.0,
            help="content-word Jaccard at which two questions about the same subject count as paraphrases",
        ),
        strict: bool = typer.Option(False, "--strict", help="exit 1 on any leak, case-level or shared value"),
    ) -> None:
        """Leaks by case (shared seed, template, family or bridge entity, near-identical evidence, paraphrased
        or near-duplicate questions) and shared values, for every pair of partitions."""
        from hoprag.datasets.leakage import leakage_report, sealed_status

        names = _partition_names(files)
        report = leakage_report({n: _cases(p) for n, p in zip(names, files)}, threshold=threshold,
                                evidence_threshold=evidence_threshold, paraphrase_threshold=paraphrase_threshold)
        report["sealed"] = sealed_status(files)
        for pair, entry in report["pairs"].items():
            out.print(f"{pair}: {entry['leaks']} leaks, {entry['case_leaks']} case pairs — " + ", ".join(
                f"{k}={len(v)}" for k, v in entry.items() if isinstance(v, list) and k != "case_pairs"))
            strong = [p for p in entry["case_pairs"] if p["strong"]]
            weak = [p for p in entry["case_pairs"] if not p["strong"]]
            for found in strong + weak[:10]:
                out.print(f"  {escape(found['summary'])}", soft_wrap=True)
            if len(weak) > 10:
                out.print(f"  … and {len(weak) - 10} more case pairs sharing a key (--json lists every pair)")
        if report["sealed"] is not None:
            out.print(f"sealed hashes: {report['sealed']}")
        _write_json(json_out, report)
        bad_seal = report["sealed"] is not None and not all(report["sealed"].values())
        if strict and (report["total_leaks"] or report["case_leaks"] or bad_seal):
            raise typer.Exit(1)

    @app.command("ablate")
    def ablate_cmd(
        ctx: typer.Context,
        index_dir: Path = typer.Argument(...),
        cases_file: Path = typer.Argument(...),
        out_dir: Path = typer.Option(..., "--out"),
        k: int = typer.Option(10, "--k", min=1, max=1_000),
        oracle_mode: str = typer.Option("augment", "--oracle-mode", help="augment or replace hop 1 with the gold chunks"),
        planner_llm: Optional[str] = typer.Option(
            None, "--planner-llm", help="LLM planner for the iterative rows (default: the offline planner), vs the fixed template"
        ),
        base_url: Optional[str] = BASE_URL_OPT,
        api_key: Optional[str] = API_KEY_OPT,
        llm_timeout: float = LLM_TIMEOUT_OPT,
        llm_retries: int = LLM_RETRIES_OPT,
        n_ctx: Optional[int] = N_CTX_OPT,
        llm_budget: float = LLM_BUDGET_OPT,
        strict_llm: bool = STRICT_LLM_OPT,
        clearance: Optional[str] = CLEARANCE_OPT,
        acl_levels: Optional[str] = ACL_LEVELS_OPT,
    ) -> None:
        """Single vs iterative, planner vs fixed template, ordering on/off, oracle-hop, oracle-evidence, minimal evidence."""
        from hoprag.evaluation.ablations import run_ablations
        from hoprag.index.store import load_index

        settings = llm_settings(ctx, [planner_llm], base_url=base_url, api_key=api_key, llm_timeout=llm_timeout,
                                llm_retries=llm_retries, n_ctx=n_ctx, llm_budget=llm_budget, strict_llm=strict_llm)
        backend = settings.make(planner_llm)
        planner = None
        if backend is not None:
            from hoprag.pipeline.llm_roles import LLMPlanner

            planner = LLMPlanner(backend, guard=settings.guard())
        run_ablations(load_index(index_dir), _cases(cases_file), out_dir, k=k, oracle_mode=oracle_mode, planner=planner,
                      clearance=caller_clearance(clearance, acl_levels))
        out.print((out_dir / "ablations.md").read_text(encoding="utf-8"))

    @app.command("compare")
    def compare_cmd(
        run_a: Path = typer.Argument(..., help="baseline traces"),
        run_b: Path = typer.Argument(..., help="candidate traces"),
        cases_file: Optional[Path] = typer.Option(
            None, "--cases", help="cases.jsonl (default: the cases.jsonl beside RUN_A, as `hoprag import` and the demo lay out)"
        ),
        cluster: str = typer.Option("path", "--cluster", help="path, template, source_family or case"),
        seed: int = typer.Option(0, "--seed"),
        resamples: int = typer.Option(2000, "--resamples", min=100, max=1_000_000),
        k: int = typer.Option(10, "--k", min=1, max=1_000),
        json_out: Optional[Path] = typer.Option(None, "--json"),
    ) -> None:
        """Paired case-level differences (B - A) with cluster-bootstrap intervals."""
        from hoprag.errors import InputError
        from hoprag.evaluation.compare import compare_runs
        from hoprag.evaluation.runner import read_traces

        if cases_file is None:
            cases_file = run_a.parent / "cases.jsonl"
            if not cases_file.exists():
                raise InputError(
                    "no cases.jsonl beside the baseline traces", source=str(run_a), fix="pass --cases CASES.jsonl"
                )
        result = compare_runs(_cases(cases_file), read_traces(run_a), read_traces(run_b), k=k, cluster_by=cluster,
                              resamples=resamples, seed=seed)
        out.print(f"B - A, clusters={cluster}, seed={seed}, resamples={resamples}, budget={result.budget_ms}")
        for row in result.rows:
            out.print(f"{row['metric']:28} A={_f(row['mean_a'])} B={_f(row['mean_b'])} diff={_f(row['diff'])} "
                      f"95% CI [{_f(row['ci_low'])}, {_f(row['ci_high'])}] p={_f(row['p_value'])} n={row['n']} "
                      f"clusters={row['n_clusters']} excluded={row['excluded']}")
        _write_json(json_out, result.to_json())

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
        from hoprag.evaluation.release import decide, judge_calibration, judge_metrics, load_policy, refuse_oracle
        from hoprag.evaluation.runner import read_traces

        policy = load_policy(policy_file)
        calibration = judge_calibration(policy, allow_uncalibrated=allow_uncalibrated)
        if calibration is None and judge_metrics(policy):
            err.print(f"[yellow]warning:[/] --allow-uncalibrated: {', '.join(judge_metrics(policy))} gated by an "
                      "uncalibrated judge")
        cases = _cases(cases_file)
        traces = read_traces(traces_file)
        refuse_oracle(traces)
        report = evaluate_chains(cases, traces, ks=tuple(sorted({2, 5, 10, policy.k})))
        decision = decide(cases, report, policy)
        _write_json(json_out, {**decision.to_json(), "judge_calibration": calibration})
        out.print(f"policy {policy.digest}: {'PASS' if decision.passed else 'FAIL'} ({len(decision.checks)} checks)")
        if calibration is not None:
            out.print(f"judge {calibration['judge_model_id']} calibrated: kappa={calibration['calibration_kappa']} "
                      f"95% CI {calibration['calibration_kappa_ci95']} n={calibration['calibration_n']} "
                      f"({calibration['calibration_digest']})", soft_wrap=True)
        for reason in decision.reasons:
            out.print(f"  [red]✗[/] {reason}")
        if not decision.passed:
            raise typer.Exit(1)

    @app.command("synth")
    def synth_cmd(
        corpus: Path = typer.Argument(...),
        out_file: Path = typer.Option(..., "--out"),
        max_cases: int = typer.Option(50, "--max", min=1),
        seed: int = typer.Option(7, "--seed"),
        keep_flagged: bool = typer.Option(False, "--keep-flagged", help="keep proposals the audit flags (with warnings)"),
    ) -> None:
        """Propose audited 2-hop cases from entity links between documents (marked generated)."""
        from hoprag.datasets.schema import write_cases
        from hoprag.datasets.synth import synthesize
        from hoprag.ingest.loaders import load_documents

        result = synthesize(load_documents(corpus), max_cases=max_cases, seed=seed, keep_flagged=keep_flagged)
        write_cases(out_file, result.cases)
        out.print(f"proposed {result.proposed}, dropped by the shortcut audit {result.dropped_by_audit}, "
                  f"wrote {len(result.cases)} generated cases → {out_file}")

    @app.command("export-trec")
    def export_trec_cmd(
        cases_file: Path = typer.Argument(...),
        traces_file: Path = typer.Argument(...),
        qrels: Path = typer.Option(..., "--qrels"),
        run: Path = typer.Option(..., "--run"),
        source: str = typer.Option("evidence", "--source", help="evidence (final context) or hits (every step)"),
        tag: str = typer.Option("hoprag", "--tag"),
    ) -> None:
        """Write TREC qrels and a run file (document level) for trec_eval / ir_measures."""
        from hoprag.evaluation.runner import read_traces
        from hoprag.errors import ConfigError
        from hoprag.evaluation.trec import RUN_SOURCES, write_qrels, write_run

        if source not in RUN_SOURCES:
            raise ConfigError(f"unknown --source {source!r}; valid: {', '.join(RUN_SOURCES)}")
        n_q = write_qrels(qrels, _cases(cases_file))
        n_r = write_run(run, read_traces(traces_file), tag=tag, source=source)
        out.print(f"wrote {n_q} qrels lines → {qrels}, {n_r} run lines → {run}")


def cases_and_labels(cases_file: Path, corpus: Optional[Path], span_match: str = "exact") -> tuple[list, Any, Any]:
    """The cases to score, their label report and the corpus ids (``eval`` / ``chain-eval --corpus``).

    Without a corpus the cases load strictly (a broken reference stops with its fix); with one,
    every label is verified against it and broken ones are reported, not raised."""
    if corpus is None:
        return _cases(cases_file), None, None
    from hoprag.datasets.labels import read_cases_checked, verify_labels
    from hoprag.ingest.loaders import load_documents

    cases, problems = read_cases_checked(cases_file)
    documents = load_documents(corpus)
    labels = verify_labels(cases, documents, span_match=span_match, problems=problems)
    return cases, labels, {d.id for d in documents}


def print_label_summary(labels: Any, cases_file: Path, corpus: Optional[Path]) -> None:
    """Warn (stderr) about cases excluded for label errors and facts whose source is missing."""
    if labels is None:
        return
    excluded = labels.excluded_cases
    if excluded:
        err.print(f"[yellow]warning:[/] {len(excluded)} case(s) with label errors excluded from scoring: "
                  f"{escape(', '.join(excluded[:10]))}{' …' if len(excluded) > 10 else ''}; "
                  f"every problem: hoprag audit {escape(str(cases_file))} {escape(str(corpus))}", soft_wrap=True)
    missing = [m for m in labels.missing_source_facts() if m["case_id"] not in set(excluded)]
    if missing:
        cases = sorted({m["case_id"] for m in missing})
        err.print(f"[yellow]warning:[/] {len(missing)} fact(s) in {len(cases)} case(s) cite sources absent from the corpus "
                  f"({escape(', '.join(cases[:10]))}{' …' if len(cases) > 10 else ''}); they are scored as missing corpus facts",
                  soft_wrap=True)


def _partition_names(files: list[Path]) -> list[str]:
    """File stems; the path where two stems agree, numbered where two paths do."""
    stems = [p.stem for p in files]
    names: list[str] = []
    for stem, path in zip(stems, files):
        name = stem if stems.count(stem) == 1 else str(path)
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base}#{n}"
        names.append(name)
    return names


def _print_labels(labels: Any) -> None:
    """Every label problem, grouped by case, then the cases excluded from scoring."""
    if not labels.problems:
        out.print(f"labels: {labels.spans_checked} spans in {labels.cases} cases match their sources; no label problems")
        return
    out.print(f"label problems: {len(labels.errors)} errors, {len(labels.warnings)} warnings in "
              f"{len(labels.flagged_cases)} of {labels.cases} cases ({labels.spans_checked} spans checked)")
    for case_id, problems in labels.by_case().items():
        out.print(f"[yellow]{escape(case_id)}[/]", soft_wrap=True)
        for problem in problems:
            out.print(f"  {problem.severity}: {escape(problem.describe(with_case=False))}", soft_wrap=True)
    if labels.excluded_cases:
        out.print("excluded from scoring (label errors): " + escape(", ".join(labels.excluded_cases)), soft_wrap=True)


def _f(value: Any) -> str:
    return "–" if value is None else f"{value:.4f}"
