"""Run-store housekeeping: ``hoprag runs list`` and ``hoprag runs rm``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console

from hoprag.commands import FORMAT_OPT, PRINTED_JSON_OPT, STORE_HELP, group, wants_json

if TYPE_CHECKING:
    from rich.table import Table

    from hoprag.store import RemovedRun, RunInfo

out = Console()

STATUS_STYLE = {"complete": "green", "failed": "red", "incomplete": "yellow", "running": "cyan", "unknown": "dim"}


def runs_table(runs: list[RunInfo], metric_counts: dict[str, int], title: str) -> Table:
    """One row per run: id, kind, status, created (UTC), metrics, artifact."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title)
    for name in ("run id", "kind", "status", "created (UTC)", "metrics", "artifact"):
        table.add_column(name, justify="right" if name == "metrics" else "left")
    for run in runs:
        style = STATUS_STYLE.get(run.status, "")
        table.add_row(escape(run.run_id), escape(run.kind), f"[{style}]{run.status}[/]" if style else run.status,
                      run.created_at.strftime("%Y-%m-%d %H:%M:%S"), str(metric_counts.get(run.run_id, 0)),
                      escape(run.artifact_id or "—"))
    return table


def _removed_line(removed: RemovedRun) -> str:
    dropped = f"; baseline {', '.join(repr(b) for b in removed.baselines)} dropped" if removed.baselines else ""
    return (f"removed run {removed.run_id}: {removed.metrics} metrics, {removed.traces} traces, "
            f"{removed.feedback} feedback events, {removed.artifacts} artifacts{dropped}")


def register(app: typer.Typer) -> None:
    runs_app = group(app, "runs")

    @runs_app.command("list")
    def list_cmd(
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        output_format: str = FORMAT_OPT,
        status: Optional[str] = typer.Option(
            None, "--status", metavar="S",
            help="only runs with this status: running | complete | failed | incomplete (its writer died) | unknown"),
        printed_json: bool = PRINTED_JSON_OPT,
    ) -> None:
        """Every run, newest first: id, kind, status, created, number of metrics, artifact id."""
        as_json = wants_json(output_format, printed_json)
        from hoprag.errors import ConfigError
        from hoprag.store import RUN_STATUSES, RunStore

        if status is not None and status not in RUN_STATUSES:
            raise ConfigError(f"--status '{status}' is not a run status; valid: {', '.join(RUN_STATUSES)}")
        with RunStore(store) as run_store:
            runs = run_store.list_runs(limit=None, status=status)
            counts = run_store.metric_counts()
            where = run_store.display_url
        if as_json:
            from hoprag.json_text import dumps_printed

            print(dumps_printed([{**r.to_dict(), "metrics": counts.get(r.run_id, 0)} for r in runs]))
            return
        if not runs:
            out.print(f"no {status + ' ' if status else ''}runs in {where}")
            return
        out.print(runs_table(runs, counts, title=f"{len(runs)} runs in {where}"))
        stale = sum(r.status in ("failed", "incomplete") for r in runs)
        if stale:
            out.print(f"{stale} failed or incomplete: `hoprag runs rm --failed` removes them")

    @runs_app.command("rm")
    def rm_cmd(
        run_ids: Optional[list[str]] = typer.Argument(None, metavar="[RUN_ID]...", help="ids of the runs to remove"),
        failed: bool = typer.Option(False, "--failed", help="remove every failed or incomplete run"),
        force: bool = typer.Option(False, "--force",
                                   help="also remove a run that a baseline points at (dropping the baseline) or "
                                        "one still marked running"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    ) -> None:
        """Remove runs with their metrics, traces, feedback and stored artifacts (one transaction)."""
        from hoprag.errors import ConfigError
        from hoprag.store import FAILED, INCOMPLETE, RunStore

        if not run_ids and not failed:
            raise ConfigError("no run to remove. Fix: name them (`hoprag runs rm RUN_ID ...`; `hoprag runs list` "
                              "shows the ids), or pass --failed to remove every failed or incomplete run")
        with RunStore(store) as run_store:
            ids = list(run_ids or [])
            if failed:
                ids += [r.run_id for r in run_store.list_runs(limit=None) if r.status in (FAILED, INCOMPLETE)]
            if not ids:
                out.print(f"no failed or incomplete runs in {run_store.display_url}")
                return
            removed = run_store.delete_runs(ids, force=force)
        for entry in removed:
            out.print(_removed_line(entry))
