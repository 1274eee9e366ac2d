"""Commands over the cases themselves: audit (labels and shortcuts), split, leakage, synth."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from hoprag.commands import group, renamed, seed_option
from hoprag.commands.evaluation import checked_cases, csv_list, write_json

out = Console()
err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    cases = group(app, "cases")

    @cases.command("audit")
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
        write_json(json_out, payload)
        out.print(f"flagged {len(report.flagged_cases)} of {report.cases} cases: {escape(str(payload['counts']))}")
        if fail and (report.findings or labels.problems):
            raise typer.Exit(1)

    @cases.command("split")
    def split_cmd(
        cases_file: Path = typer.Argument(...),
        by: str = typer.Option("source_family,entity,template", "--by", help="keys: source_family,entity,template,seed,question_type"),
        ratios: str = typer.Option("0.7,0.15,0.15", "--ratios"),
        seed: int = seed_option(7, "seed of the partition shuffle"),
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
            parts = [float(r) for r in csv_list(ratios)]
        except ValueError:
            raise ConfigError(f"--ratios must be numbers like 0.7,0.15,0.15, got {ratios!r}") from None
        result = grouped_split(checked_cases(cases_file), csv_list(by), parts, seed=seed, evidence_threshold=evidence_threshold,
                               paraphrase_threshold=paraphrase_threshold)
        manifest = write_split(result, out_dir, sealed=csv_list(seal))
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

    @cases.command("leakage")
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
        report = leakage_report({n: checked_cases(p) for n, p in zip(names, files)}, threshold=threshold,
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
        write_json(json_out, report)
        bad_seal = report["sealed"] is not None and not all(report["sealed"].values())
        if strict and (report["total_leaks"] or report["case_leaks"] or bad_seal):
            raise typer.Exit(1)

    @cases.command("synth")
    def synth_cmd(
        corpus: Path = typer.Argument(...),
        out_file: Path = typer.Option(..., "--out"),
        max_cases: int = typer.Option(50, "--max", min=1),
        seed: int = seed_option(7, "seed of the proposal order"),
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

    renamed(app, "audit", audit_cmd, "cases audit")
    renamed(app, "split", split_cmd, "cases split")
    renamed(app, "leakage", leakage_cmd, "cases leakage")
    renamed(app, "synth", synth_cmd, "cases synth")


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
