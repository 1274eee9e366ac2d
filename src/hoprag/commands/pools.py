"""Judgment pools: ``hoprag cases pool`` builds a blind pool for labelling, ``hoprag cases judgments`` reads the labels back."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from hoprag.commands import ACL_LEVELS_OPT, CLEARANCE_OPT, caller_clearance, group, renamed, seed_option

out = Console()
err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    cases = group(app, "cases")

    @cases.command("pool")
    def pool_cmd(
        index_dir: str = typer.Argument(..., help="index directory, or a postgresql://…?index=NAME URL"),
        cases_file: Path = typer.Argument(..., help="cases.jsonl (only ids and questions are used)"),
        out_dir: Path = typer.Option(..., "--out", help="directory for the pool files"),
        depth: int = typer.Option(10, "--depth", min=1, max=1_000, help="documents taken from each system's ranking"),
        seed: int = seed_option(0, "seed of the shuffle labellers see"),
        clearance: Optional[str] = CLEARANCE_OPT,
        acl_levels: Optional[str] = ACL_LEVELS_OPT,
    ) -> None:
        """Pool BM25, dense (if indexed) and multi-hop candidates per case, shuffled, for blind labelling."""
        from hoprag.datasets.schema import load_cases
        from hoprag.evaluation.pools import ANNOTATION_FILE, POOL_FILE, PROVENANCE_FILE, build_pool, write_pool
        from hoprag.index.open import open_index

        index = open_index(index_dir)
        cleared = caller_clearance(clearance, acl_levels, index)
        cases = load_cases(cases_file)
        pool = build_pool(index, cases, depth=depth, seed=seed, clearance=cleared)
        where = write_pool(pool, out_dir)
        sizes = list(pool.sizes().values()) or [0]
        out.print(f"pooled {len(pool.candidates)} (case, document) pairs for {len(cases)} cases from "
                  f"{', '.join(pool.manifest['systems'])} at depth {depth} (per case {min(sizes)}–{max(sizes)})")
        for note in pool.manifest["notes"]:
            err.print(f"[yellow]note:[/] {escape(note)}")
        out.print(f"for labellers: {escape(str(where / ANNOTATION_FILE))} and {escape(str(where / POOL_FILE))}; "
                  f"keep {escape(str(where / PROVENANCE_FILE))} (which system found what) from them")

    @cases.command("judgments")
    def pool_import_cmd(
        pool_dir: Path = typer.Argument(..., help="pool directory written by `hoprag cases pool`"),
        judgments_file: Path = typer.Argument(..., help="judgments JSONL: {case_id, doc_id, grade, labeller, time}"),
        out_file: Path = typer.Option(..., "--out", help="TREC qrels to write (judgments kept in OUT.judgments.jsonl)"),
        conflict: str = typer.Option("majority", "--conflict",
                                     help="grade of a pair labellers disagree on: majority (tie: higher) | max"),
        cases_out: Optional[Path] = typer.Option(
            None, "--cases-out", help="also write a cases JSONL where each relevant judged document is a fact "
            "(span = the quoted passage or the whole document; labeller and time kept in metadata)"),
        cases_file: Optional[Path] = typer.Option(
            None, "--cases", help="with --cases-out: the cases the pool was built from, kept whole with the facts added"),
    ) -> None:
        """Turn judgments on a pool into TREC qrels (and case facts), reporting pairs whose labellers disagree."""
        from hoprag.errors import ConfigError
        from hoprag.evaluation.pools import import_judgments

        if cases_file is not None and cases_out is None:
            raise ConfigError("--cases is only read with --cases-out; add --cases-out FILE or drop --cases")
        cases = None
        if cases_file is not None:
            from hoprag.datasets.schema import load_cases

            cases = load_cases(cases_file)
        result = import_judgments(pool_dir, judgments_file, out_file, rule=conflict, cases_out=cases_out, cases=cases)
        out.print(f"{result.judgments} judgments on {result.judged_pairs} of {result.pool_pairs} pooled pairs → "
                  f"{escape(str(result.qrels_path))} (with labeller and time: {escape(str(result.judgments_path))})")
        if result.cases_path is not None:
            out.print(f"{result.cases_written} case(s) with their relevant judged documents as facts → "
                      f"{escape(str(result.cases_path))} (check them: hoprag cases audit {escape(str(result.cases_path))} CORPUS)")
        if result.unjudged:
            err.print(f"[yellow]warning:[/] {len(result.unjudged)} pooled pair(s) have no judgment, e.g. "
                      + ", ".join(f"{c}/{d}" for c, d in result.unjudged[:5]))
        for item in result.conflicts:
            grades = ", ".join(f"{j['labeller']}={j['grade']}" for j in item["judgments"])
            err.print(f"[yellow]conflict:[/] case {escape(item['case_id'])}, document {escape(item['doc_id'])}: "
                      f"{escape(grades)} → {item['grade']} ({item['rule']})")

    renamed(app, "pool", pool_cmd, "cases pool")
    renamed(app, "pool-import", pool_import_cmd, "cases judgments")
