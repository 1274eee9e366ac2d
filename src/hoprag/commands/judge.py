"""Judge commands: ``hoprag judge calibrate`` measures a grader's agreement with human labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

out = Console()


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _row(name: str, agreement: dict[str, Any]) -> str:
    lo, hi = agreement["kappa_ci95"]
    c = agreement["confusion"]
    return (f"{name:20} n={agreement['n']:<4} accuracy={_fmt(agreement['accuracy'])} kappa={_fmt(agreement['kappa'])} "
            f"95% CI [{_fmt(lo)}, {_fmt(hi)}]  human+/judge+ {c['tp']}  human+/judge- {c['fn']}  "
            f"human-/judge+ {c['fp']}  human-/judge- {c['tn']}")


def register(app: typer.Typer) -> None:
    judge_app = typer.Typer(help="Calibrate the graders behind the judge metrics.", no_args_is_help=True)
    app.add_typer(judge_app, name="judge")

    @judge_app.command("calibrate")
    def calibrate_cmd(
        cases_file: Path = typer.Argument(..., help="cases JSONL; adjudicated cases give the examples"),
        judgments_file: Optional[Path] = typer.Argument(
            None, help="optional human labels, one {case_id, item, label, reviewer} per line"),
        llm: str = typer.Option("offline", "--llm", help="the grader to calibrate: offline (deterministic)"),
        out_file: Optional[Path] = typer.Option(None, "--out", help="write the calibration record (JSON) here"),
        resamples: int = typer.Option(1000, "--resamples", min=1, help="bootstrap resamples for the kappa CI"),
        seed: int = typer.Option(42, "--seed", help="bootstrap seed"),
    ) -> None:
        """Grade adjudicated examples and report agreement with the humans (accuracy, kappa, CI)."""
        from hoprag.datasets.schema import load_cases
        from hoprag.errors import InputError
        from hoprag.evaluation.calibration import calibrate, make_grader, read_judgments

        make_grader(llm)  # an unknown grader is refused before any file is read
        if out_file is not None and out_file.is_dir():
            raise InputError("--out is a directory", source=str(out_file), fix="pass a file path, e.g. calibration.json")
        cases = load_cases(cases_file)
        human = read_judgments(judgments_file) if judgments_file is not None else None
        record = calibrate(cases, human, llm=llm, resamples=resamples, seed=seed)
        judge = record["judge"]
        out.print(f"judge {judge['model_id']} (prompt {judge['prompt_version']}), examples {record['examples_digest']}, "
                  f"seed={seed}, resamples={resamples}", soft_wrap=True)
        out.print(_row("overall", record["overall"]), soft_wrap=True)
        for task, agreement in record["tasks"].items():
            out.print(_row(task, agreement), soft_wrap=True)
        if record["skipped_cases"]:
            out.print(f"skipped (not accepted by adjudication): {', '.join(record['skipped_cases'])}")
        if record["contested"]:
            out.print(f"contested (tied human labels, left out): {', '.join(record['contested'])}")
        if out_file is not None:
            out_file.parent.mkdir(parents=True, exist_ok=True)
            out_file.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            out.print(f"wrote {out_file}")
