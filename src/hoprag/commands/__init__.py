"""CLI commands by capability; each module defines ``register(app)`` and is loaded by ``hoprag.cli``.

Options that commands of several modules share are defined here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from hoprag.acl import Clearance

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


def check_choice(value: str, valid: tuple[str, ...], what: str) -> str:
    """``value`` when it is one of ``valid``, else a :class:`~hoprag.errors.ConfigError` listing them."""
    if value not in valid:
        from hoprag.errors import ConfigError

        raise ConfigError(f"unknown {what} '{value}'; valid: {', '.join(valid)}")
    return value
