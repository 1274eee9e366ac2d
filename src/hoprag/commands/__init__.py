"""CLI commands by capability; each module defines ``register(app)`` and is loaded by ``hoprag.cli``.

Options that commands of several modules share are defined here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from hoprag.security.acl import Clearance

STORE_HELP = "run store URL (postgresql://… or a SQLite path); default $HOPRAG_STORE or .hoprag/hoprag.db"
# No envvar= here: hoprag.security.clearance reads HOPRAG_CLEARANCE / HOPRAG_ACL_LEVELS itself, so a
# variable set to "" is refused rather than taken for unset, and messages say where a value came from.
CLEARANCE_OPT = typer.Option(
    None,
    "--clearance",
    metavar="LEVEL",
    help="the caller's clearance: public | internal | confidential | restricted (or a level of --acl-levels); "
    "default $HOPRAG_CLEARANCE. Retrieval, answers, citations and the printed trail hold only documents at "
    "or below it. Unset everywhere: unrestricted, for the operator who owns the index files",
)
ACL_LEVELS_OPT = typer.Option(
    None,
    "--acl-levels",
    metavar="A,B,C",
    help="clearance levels, lowest first (default $HOPRAG_ACL_LEVELS, else public,internal,confidential,"
    "restricted); they must name every acl class the index holds; a document without a class counts as the "
    "second level",
)

AS_OF_OPT = typer.Option(
    None,
    "--as-of",
    metavar="DATE",
    help="search the documents valid at DATE (ISO date, or date and time; UTC): versions an update replaced or "
    "deleted count for their valid time, later ones do not. The first search of a new snapshot builds it "
    "once, with the index's options, cached in the index directory (for a PostgreSQL index, under "
    "$XDG_CACHE_HOME/hoprag, else ~/.cache/hoprag)",
)


def index_as_of(index_dir: str, as_of: str | None, say: Any, snapshots: Any = ()) -> tuple[Any, str]:
    """``(index, location)`` a command searches: the index at ``index_dir``, or its snapshot at ``--as-of``
    (:mod:`hoprag.index.snapshots`); without ``--as-of``, cases naming a ``corpus_snapshot`` (``snapshots``)
    replay the index as it stood on that snapshot's date when updates changed it since. ``say`` prints a note."""
    from hoprag.index.open import index_location, open_index
    from hoprag.index.snapshots import open_as_of
    from hoprag.index.valid_time import parse_as_of, show, snapshot_date

    names = sorted({name for name in snapshots if name})

    def building(snapshot: Any, cache: Any) -> None:
        say(f"building the snapshot of {snapshot.count} documents at {show(snapshot.at)} once (cached in {cache})")

    if as_of is not None:
        at = parse_as_of(as_of)
        if names:
            say(f"the cases name corpus snapshot {', '.join(names)}; --as-of {show(at)} decides what is searched")
        return open_as_of(index_dir, at, on_build=building)
    index = open_index(index_dir)
    if not names or not index.manifest.updates:
        return index, index_location(index_dir)  # never updated: every snapshot of it is the index itself
    from hoprag.errors import ConfigError

    if len(names) > 1:
        raise ConfigError(f"the cases name {len(names)} corpus snapshots ({', '.join(names[:3])}), and one run "
                          "searches one. Fix: run the cases of each corpus_snapshot apart, or pass --as-of DATE")
    at = snapshot_date(names[0])
    if at is None:
        say(f"the cases name corpus snapshot {names[0]}, which holds no date: the current index is searched "
            f"(changed by {len(index.manifest.updates)} update(s) since its build); pass --as-of DATE to search another")
        return index, index_location(index_dir)
    replay, location = open_as_of(index_dir, at, axis="recorded", on_build=building)
    if replay is not index:
        index.close()  # a PostgreSQL index's connections; the replay opened its own
    if replay.manifest.artifact_id != index.manifest.artifact_id:
        say(f"the cases name corpus snapshot {names[0]}: searching the documents the index held on {show(at)}, "
            "before the updates since")
    return replay, location


#: numpy's and Python's random generators take seeds from 0 to 2**32-1 (numpy refuses others with a traceback)
SEED_MAX = 2**32 - 1


def seed_option(default: int, help: str) -> Any:
    """The ``--seed`` option of every command: a whole number from 0 to :data:`SEED_MAX`, held there by
    the option itself (``tests/cli/test_cli_seeds.py`` fails a command whose ``--seed`` is not)."""
    return typer.Option(default, "--seed", min=0, max=SEED_MAX, metavar="SEED", help=f"{help} (0 to {SEED_MAX:,})")


EXECUTOR_OPT = typer.Option(
    "local",
    "--executor",
    metavar="local|ray[:ADDRESS]",
    help="where the work runs: local (this process) | ray (a Ray instance started on this machine) | "
    "ray:HOST:PORT or ray:auto (a running cluster, `ray start --head`; needs pip install 'hoprag\\[ray]')",
)
WORKERS_OPT = typer.Option(
    None, "--workers", min=1, max=4096, metavar="N",
    help="parallel workers (default: local 1, one at a time; ray one per CPU of the cluster)",
)
SCORING_WORKERS_OPT = typer.Option(
    None, "--workers", min=1, max=4096, metavar="N",
    help="scoring workers (default: local one process per CPU, at most one per 500 cases; 1 scores in this "
    "process; ray one per CPU of the cluster)",
)


def caller_clearance(clearance: str | None, acl_levels: str | None, index: Any) -> Clearance | None:
    """The clearance ``--clearance``/``--acl-levels`` (else the environment) ask for over the opened
    ``index`` (``None``: unrestricted); :func:`hoprag.security.clearance.caller_clearance` decides."""
    from hoprag.security import clearance as resolver  # looked up per call: one resolver, tests can watch it

    return resolver.caller_clearance(clearance, acl_levels, index=index)


#: dense models ``--embedder`` names (hoprag.index.embedders builds them)
EMBEDDER_NAMES = ("minilm", "static")


#: command groups: name -> what the group holds (its --help line)
GROUPS = {
    "cases": "Curate evidence-chain cases: audit labels, split, leakage, synthesise, pool for labelling, "
             "import judgments.",
    "trec": "TREC files: export qrels and a run from cases and traces; score them (values equal trec_eval's).",
    "gate": "Stage gates: run a gated pipeline, freeze a baseline, check a run against thresholds, diff two runs.",
    "traces": "Traces of other pipelines and for sharing: import OpenTelemetry spans, redact PII.",
    "feedback": "Human / online feedback events.",
    "judge": "Calibrate the graders behind the judge metrics.",
    "runs": "List and remove the runs in the run store.",
}


def group(app: typer.Typer, name: str) -> typer.Typer:
    """The sub-command group ``name`` of ``app``, created on first use (several modules add to one group)."""
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    sub = typer.Typer(help=GROUPS[name], no_args_is_help=True)
    app.add_typer(sub, name=name)
    return sub


def renamed(app: typer.Typer, old: str, callback: Any, new: str) -> None:
    """Keep the old top-level name ``old`` of the command now spelt ``hoprag NEW`` for one release: hidden
    from --help, same options, and every use says the new spelling."""
    import functools

    @functools.wraps(callback)
    def old_name(*args: Any, **kwargs: Any) -> Any:
        from rich.console import Console

        Console(stderr=True).print(f"[yellow]note:[/] `hoprag {old}` is now `hoprag {new}`; the old name works "
                                   "until the next release")
        return callback(*args, **kwargs)

    old_name.__hoprag_renamed_to__ = new  # type: ignore[attr-defined]  # read by hoprag.cli_io
    words = old.split()
    if len(words) == 1:
        app.command(old, hidden=True)(old_name)
        return
    holder = next((g.typer_instance for g in app.registered_groups if g.name == words[0]), None)
    if holder is None:
        holder = typer.Typer(no_args_is_help=True, help=f"Renamed: see `hoprag {new.split()[0]} --help`.")
        app.add_typer(holder, name=words[0], hidden=True)
    holder.command(words[1], hidden=True)(old_name)


def old_spelling(argv: list[str]) -> list[str]:
    """Command lines of the last release whose first word is now a group: ``hoprag gate --run ID`` is
    ``hoprag gate check --run ID``, said on stderr, then run under the new spelling. And one shorthand:
    ``hoprag mcp INDEX [--mcp http]`` is ``hoprag serve INDEX --mcp stdio|http``, the MCP server."""
    if len(argv) > 1 and argv[0] == "gate" and argv[1].startswith("-") and argv[1] not in ("--help", "-h"):
        from rich.console import Console

        Console(stderr=True).print("[yellow]note:[/] `hoprag gate --run …` is now `hoprag gate check --run …`; "
                                   "the old spelling works until the next release")
        return ["gate", "check", *argv[1:]]
    if argv and argv[0] == "mcp":  # the MCP server's own name, as MCP clients' configs spell it
        rest = argv[1:]
        return ["serve", *rest] if any(a == "--mcp" or a.startswith("--mcp=") for a in rest) else ["serve", *rest, "--mcp", "stdio"]
    return argv


# --json names a file to write wherever it appears (eval, compare, release, cases audit, ...); commands
# that print choose how with --format. The last release's printing --json runs for one release.
FORMAT_OPT = typer.Option("table", "--format", metavar="table|json", help="print a table, or JSON")
PRINTED_JSON_OPT = typer.Option(False, "--json", hidden=True, help="the last release's spelling of --format json")


def wants_json(output_format: str, printed_json: bool) -> bool:
    """Whether the command prints JSON: ``--format json``, or the last release's ``--json`` (said once)."""
    from hoprag.validation_messages import check_choice

    if printed_json:
        from rich.console import Console

        Console(stderr=True).print("[yellow]note:[/] `--json` (print as JSON) is now `--format json`; --json names "
                                   "a file to write wherever else it appears. The old flag works until the next release")
        return True
    return check_choice(output_format, ("table", "json"), "--format") == "json"


# A run id is --run-id everywhere (--run is a TREC run file in `trec export`); the last release's --run
# for a run id runs for one release.
OLD_RUN_ID_OPT = typer.Option(None, "--run", hidden=True, help="the last release's spelling of --run-id")


def run_id_given(run_id: str | None, old_run: str | None, *, required: bool = True) -> str | None:
    """The run id of ``--run-id`` (or the last release's ``--run``, said once); refused when required and missing."""
    if old_run is not None:
        from rich.console import Console

        Console(stderr=True).print("[yellow]note:[/] `--run` (a run id) is now `--run-id`; the old flag works until the "
                                   "next release")
        run_id = run_id if run_id is not None else old_run
    if run_id is None and required:
        from hoprag.errors import ConfigError

        raise ConfigError("no run id given. Fix: pass --run-id RUN (`hoprag runs list` shows them)")
    return run_id


# --k is hits per retrieval call (search, ask, run); the cut-off of a score (@k) is --cutoff (eval, compare,
# ablate). The last release's --k for a cut-off runs for one release.
CUTOFF_OPT = typer.Option(10, "--cutoff", min=1, max=1_000, metavar="K", help="cut-off of the @k scores")
OLD_CUTOFF_OPT = typer.Option(None, "--k", min=1, max=1_000, hidden=True, help="the last release's --cutoff")
OLD_CUTOFF_LIST_OPT = typer.Option(None, "--k", min=1, hidden=True, help="the last release's --cutoff")


def cutoff_given(cutoff: Any, old: Any) -> Any:
    """The cut-off(s) of ``--cutoff``, or of the last release's ``--k`` (said once)."""
    if old is None or old == []:
        return cutoff
    from rich.console import Console

    Console(stderr=True).print("[yellow]note:[/] a score's cut-off is now `--cutoff` (`--k` is hits per retrieval "
                               "call); the old flag works until the next release")
    return old
