"""Judge commands: ``hoprag judge calibrate`` measures a grader's agreement with human labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from hoprag.cli_llm import API_KEY_OPT, BASE_URL_OPT, LLM_RETRIES_OPT, LLM_TIMEOUT_OPT, llm_settings
from hoprag.commands import group, seed_option

out = Console()
err = Console(stderr=True)


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _row(name: str, agreement: dict[str, Any]) -> str:
    lo, hi = agreement["kappa_ci95"]
    c = agreement["confusion"]
    return (f"{name:20} n={agreement['n']:<4} accuracy={_fmt(agreement['accuracy'])} kappa={_fmt(agreement['kappa'])} "
            f"95% CI \\[{_fmt(lo)}, {_fmt(hi)}]  human+/judge+ {c['tp']}  human+/judge- {c['fn']}  "
            f"human-/judge+ {c['fp']}  human-/judge- {c['tn']}")


def register(app: typer.Typer) -> None:
    judge_app = group(app, "judge")

    @judge_app.command("calibrate")
    def calibrate_cmd(
        ctx: typer.Context,
        cases_file: Path = typer.Argument(..., help="cases JSONL; adjudicated cases give the examples"),
        judgments_file: Optional[Path] = typer.Argument(
            None, help="optional human labels, one {case_id, item, label, reviewer} per line"),
        llm: str = typer.Option("offline", "--llm", help="the grader to calibrate: offline (deterministic) | "
                                "openai:MODEL (a model on an OpenAI-compatible server, see --base-url)"),
        base_url: Optional[str] = BASE_URL_OPT,
        api_key: Optional[str] = API_KEY_OPT,
        llm_timeout: float = LLM_TIMEOUT_OPT,
        llm_retries: int = LLM_RETRIES_OPT,
        llm_budget: float = typer.Option(
            30.0, "--llm-budget", min=0.0, metavar="SECONDS",
            help="wall-clock seconds the model may take on one example, retries included (0 = no budget)"),
        out_file: Optional[Path] = typer.Option(None, "--out", help="write the calibration record (JSON) here"),
        resamples: int = typer.Option(1000, "--resamples", min=1, help="bootstrap resamples for the kappa CI"),
        seed: int = seed_option(42, "bootstrap seed (and the model's request seed)"),
    ) -> None:
        """Grade adjudicated examples and report agreement with the humans (accuracy, kappa, CI)."""
        from hoprag.datasets.schema import load_cases
        from hoprag.errors import InputError
        from hoprag.evaluation.calibration import calibrate, check_grader_spec, make_grader, read_judgments

        check_grader_spec(llm)  # an unknown grader is refused before any file is read
        settings = llm_settings(ctx, [llm], base_url=base_url, api_key=api_key, llm_timeout=llm_timeout,
                                llm_retries=llm_retries, llm_budget=llm_budget)
        if out_file is not None and out_file.is_dir():
            raise InputError("--out is a directory", source=str(out_file), fix="pass a file path, e.g. calibration.json")
        cases = load_cases(cases_file)
        human = read_judgments(judgments_file) if judgments_file is not None else None
        grader = make_grader(llm, settings, seed=seed)
        try:
            record = calibrate(cases, human, grader=grader, resamples=resamples, seed=seed)
        finally:
            close = getattr(grader, "close", None)
            if close is not None:
                close()
        judge = record["judge"]
        pinned = "".join(f", {key}={judge[key]}" for key in ("base_url_host", "temperature", "seed") if key in judge)
        out.print(f"judge {escape(str(judge['model_id']))} (prompt {judge['prompt_version']}{escape(pinned)}), "
                  f"examples {record['examples_digest']}, seed={seed}, resamples={resamples}", soft_wrap=True)
        out.print(_row("overall", record["overall"]), soft_wrap=True)
        for task, agreement in record["tasks"].items():
            out.print(_row(task, agreement), soft_wrap=True)
        failures = record["grader_failures"]
        out.print(f"grader failures: {failures['count']} of {record['examples']} examples (no verdict; left out of "
                  "the figures above)")
        for item in failures["items"][:5]:
            err.print(f"[yellow]grader failure:[/] {escape(item['case_id'])}/{escape(item['item'])}: "
                      f"{escape(item['reason'])}" + (f" (reply {item['reply']!r:.80})" if item.get("reply") else ""),
                      soft_wrap=True)
        if record["skipped_cases"]:
            out.print(f"skipped (not accepted by adjudication): {', '.join(record['skipped_cases'])}")
        if record["contested"]:
            out.print(f"contested (tied human labels, left out): {', '.join(record['contested'])}")
        if out_file is not None:
            from hoprag.io.kinds import JSON_DOCUMENT
            from hoprag.io.outputs import write_text

            write_text(out_file, json.dumps(record, indent=2, ensure_ascii=False) + "\n", JSON_DOCUMENT)
            out.print(f"wrote {out_file}")
