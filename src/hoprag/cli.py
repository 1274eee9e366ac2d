"""The ``hoprag`` command line. Each command is a thin call into one public function."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from hoprag.cli_engine import engine_options
from hoprag.commands import (
    ACL_LEVELS_OPT,
    AS_OF_OPT,
    CLEARANCE_OPT,
    EMBEDDER_NAMES,
    EXECUTOR_OPT,
    FORMAT_OPT,
    PRINTED_JSON_OPT,
    WORKERS_OPT,
    caller_clearance,
    wants_json,
)
from hoprag.validation_messages import check_choice

# numpy's OpenBLAS starts a thread per core when numpy is imported, and each spins for 2**28 cycles
# before it sleeps: about 0.07 s of CPU in every command, most of which never call BLAS (a 1 % index
# update at 100k: 0.07 of its 0.95 s). From 2**4 they sleep at once and wake when a call comes. Set
# here, before anything imports numpy; a value the user set is kept.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Build and prove multi-hop retrieval-augmented generation.",
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

@app.callback()
def _root(
    debug: bool = typer.Option(
        False, "--debug", help="show the Python traceback of an unexpected error (or set HOPRAG_DEBUG=1)"
    ),
) -> None:
    """Build and prove multi-hop retrieval-augmented generation."""
    # --debug is read by main() before the command line reaches typer; declared here for --help


def check_question(text: str, what: str = "question") -> str:
    """A question (or query) must hold words; refuse empty or whitespace-only text with the fix.

    The limits themselves are the engines' own (:mod:`hoprag.pipeline.question_check`), checked here
    too so that a refused question is said before the index is opened.
    """
    from hoprag.errors import ConfigError
    from hoprag.pipeline.question_check import check_question as check_text

    cleaned = " ".join(text.split())
    if not cleaned:
        raise ConfigError(f"the {what} is empty. Fix: give it as a quoted argument, e.g. \"Who founded Kestrel Dynamics?\"")
    return check_text(cleaned, what)


@app.command("import")
def import_cmd(
    fmt: str = typer.Argument(..., metavar="{hotpotqa|musique|2wiki|beir}", help="source format"),
    files: list[Path] = typer.Argument(..., help="dataset files (a BEIR folder for beir)"),
    out_dir: Path = typer.Option(..., "--out", help="directory for cases.jsonl and corpus.jsonl"),
    corpus: list[Path] = typer.Option([], "--corpus", help="extra passage corpus ([{title,text}] or {title: [sentences]})"),
    aliases: Optional[Path] = typer.Option(
        None, "--aliases", help="2wiki: the dataset's id_aliases.json (answer_id aliases become gold answers)"
    ),
) -> None:
    """Import a benchmark into evidence-chain cases and a deduplicated corpus."""
    from hoprag.datasets.importers import import_dataset, write_import

    result = import_dataset(fmt, list(files), list(corpus), aliases=aliases)
    write_import(result, out_dir)
    for warning in result.warnings[:20]:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if len(result.warnings) > 20:
        err.print(f"[yellow]… and {len(result.warnings) - 20} more warnings (see cases.jsonl 'warnings')[/]")
    counts = ", ".join(f"{k}={v}" for k, v in result.stats.items())
    out.print(f"imported {fmt}: {counts} → {out_dir}/cases.jsonl, {out_dir}/corpus.jsonl")


@app.command("search")
def search_cmd(
    index_dir: str = typer.Argument(..., help="index directory, or a postgresql://…?index=NAME URL"),
    query: str = typer.Argument(...),
    k: int = typer.Option(10, "-k", "--k", min=1, max=10_000, help="number of hits"),
    mode: str = typer.Option("bm25", "--mode", help="retrieval: bm25 | dense | hybrid (dense needs `hoprag index --dense`)"),
    fusion: str = typer.Option("rrf", "--fusion", help="hybrid fusion: rrf (reciprocal rank) | weighted (min-max scores)"),
    output_format: str = FORMAT_OPT,
    printed_json: bool = PRINTED_JSON_OPT,
    clearance: Optional[str] = CLEARANCE_OPT,
    acl_levels: Optional[str] = ACL_LEVELS_OPT,
    as_of: Optional[str] = AS_OF_OPT,
) -> None:
    """Ranked hits for a query (with --clearance: only documents the caller may see, still k of them)."""
    as_json = wants_json(output_format, printed_json)
    from hoprag.commands import index_as_of
    from hoprag.index.hybrid import FUSIONS  # where they are defined: the pipeline's spec (its LLM settings
    from hoprag.index.store import MODES     # and engine) is no part of a search
    from hoprag.render import hits_table

    query = check_question(query, "query")
    index, _ = index_as_of(index_dir, as_of, lambda note: err.print(f"[dim]{escape(note)}[/]"))
    retriever = index.retriever(check_choice(mode, MODES, "mode"), fusion=check_choice(fusion, FUSIONS, "fusion"))
    hits = retriever.retrieve(query, k, clearance=caller_clearance(clearance, acl_levels, index))
    if as_json:
        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
        return
    out.print(hits_table(hits, index.chunks, title=escape(f"{len(hits)} hits for {query!r}")))


# The engine flags of ask and run (and ablate, serve) are one option group: hoprag.cli_engine.


@app.command("ask")
@engine_options()
def ask_cmd(
    index_dir: str = typer.Argument(..., help="index directory, or a postgresql://…?index=NAME URL"),
    question: str = typer.Argument(...),
    output_format: str = typer.Option(
        "table", "--format", metavar="table|json",
        help="print the answer and its trail as a table, or the whole Trace as JSON (printed, not stored: PII is "
        "not redacted)"),
    printed_json: bool = PRINTED_JSON_OPT,
    clearance: Optional[str] = CLEARANCE_OPT,
    acl_levels: Optional[str] = ACL_LEVELS_OPT,
    as_of: Optional[str] = AS_OF_OPT,
    spec=None,  # the EngineSpec hoprag.cli_engine.engine_options makes of the engine flags
) -> None:
    """Answer one question, then show the evidence trail hop by hop."""
    as_json = wants_json(output_format, printed_json)
    from hoprag.commands import index_as_of
    from hoprag.pipeline.factory import make_engine
    from hoprag.render import trace_report

    from hoprag import telemetry  # spans only when OTEL_EXPORTER_OTLP_ENDPOINT is set
    from hoprag.pipeline.events import fan_out, progress_line

    def progress(event) -> None:
        line = progress_line(event)
        if line is not None:
            err.print(f"[dim]{escape(line)}[/]")

    question = check_question(question)
    index, _ = index_as_of(index_dir, as_of, lambda note: err.print(f"[dim]{escape(note)}[/]"))
    runner = make_engine(spec, index, clearance=caller_clearance(clearance, acl_levels, index))
    # the engine's events: progress lines on stderr, and the question's spans when tracing is on
    listen = fan_out(None if as_json else progress, telemetry.listener(spec.llm))
    trace = runner.answer(question, case_id="ask", on_event=listen)
    if as_json:
        print(json.dumps(trace.to_dict(), ensure_ascii=False, indent=2))
        return
    for renderable in trace_report(trace):
        out.print(renderable)


@app.command("run")
@engine_options()
def run_cmd(
    index_dir: str = typer.Argument(..., help="index directory, or a postgresql://…?index=NAME URL"),
    cases_file: Path = typer.Argument(..., help="cases.jsonl (only the questions reach the engine)"),
    out_file: Path = typer.Option(..., "--out", help="traces JSONL, appended as the run goes"),
    resume: bool = typer.Option(
        True, "--resume/--no-resume",
        help="skip cases already in --out (refused if it was written by another engine, config or index), "
        "answering again those whose trace is an error trace; --no-resume replaces it",
    ),
    keep_errors: bool = typer.Option(
        False, "--keep-errors",
        help="on resume, keep the error traces already in --out as done instead of answering those questions again",
    ),
    redact: bool = typer.Option(
        True, "--redact/--no-redact",
        help="replace emails, phones, cards, IBANs and national ids in the written traces by <EMAIL_1>-style "
        "placeholders (ids and offsets kept); --no-redact keeps the raw text (credentials are masked either way)",
    ),
    clearance: Optional[str] = CLEARANCE_OPT,
    acl_levels: Optional[str] = ACL_LEVELS_OPT,
    as_of: Optional[str] = AS_OF_OPT,
    executor: str = EXECUTOR_OPT,
    workers: Optional[int] = WORKERS_OPT,
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    spec=None,  # the EngineSpec hoprag.cli_engine.engine_options makes of the engine flags
) -> None:
    """Answer every case's question and write one Trace per case.

    Exits 3 when a question's engine call failed (an error trace): run it again to answer those again.
    """
    from hoprag.commands import index_as_of
    from hoprag.datasets.schema import load_cases
    from hoprag.executors import parse_executor
    from hoprag.pipeline.factory import make_engine
    from hoprag.pipeline.batch import questions_from_cases, run_questions
    from hoprag.progress import progress_bar

    pool = parse_executor(executor, workers=workers)
    cases = load_cases(cases_file)
    questions = questions_from_cases(cases)
    # --as-of, else the corpus_snapshot the cases name (hoprag.index.snapshots); location: for Ray workers
    index, location = index_as_of(index_dir, as_of, lambda note: err.print(f"[yellow]note:[/] {escape(note)}"),
                                  [c.corpus_snapshot for c in cases])
    cleared = caller_clearance(clearance, acl_levels, index)
    runner = make_engine(spec, index, clearance=cleared)
    from hoprag.telemetry import traced_engine, traced_setup  # spans per question only when tracing is on

    runner = traced_engine(runner, model=spec.llm)
    setup = None
    if pool.name == "ray":  # each Ray worker builds the same engine over the same index (engine_recipe)
        from hoprag.pipeline.engine_recipe import EngineRecipe

        recipe = EngineRecipe.over(location, spec=spec, clearance=cleared, config_hash=getattr(runner, "config_hash", ""),
                                   artifact_id=index.manifest.artifact_id)
        setup = traced_setup(recipe, model=spec.llm)
    with progress_bar(f"run {spec.engine}", len(questions), quiet=quiet) as progress:
        summary = run_questions(runner, questions, out_file, resume=resume, progress=progress, redact=redact,
                                index_artifact_id=index.manifest.artifact_id, executor=pool, setup=setup,
                                retry_errors=not keep_errors)
    from hoprag.render import fallback_counts

    out.print(
        f"run {summary.run_id}: wrote {summary.written} traces ({summary.resumed} already done, "
        + (f"{summary.retried} answered again after an error, " if summary.retried else "")
        + f"{summary.errors} errors, {fallback_counts(summary.fallbacks, traces=summary.fallback_traces)})"
        f" → {summary.out}"
    )
    for reason in summary.circuits:
        err.print(f"[yellow]warning:[/] {escape(reason)}")
    for note in summary.notes:
        err.print(f"[yellow]repaired:[/] {escape(note)}")
    if summary.errors:
        from hoprag.pipeline.batch import QuestionsFailedError

        raise QuestionsFailedError(summary, strict_llm=spec.llm_settings.strict)


@app.command("demo")
def demo_cmd(
    data_dir: Path = typer.Option(Path("data"), "--data", help="bundled data folder"),
    out_dir: Path = typer.Option(Path("demo-output"), "--out", help="where the report goes"),
    store: Optional[str] = typer.Option(None, "--store", help="run store URL (default: HOPRAG_STORE or .hoprag/hoprag.db)"),
    thresholds: Path = typer.Option(Path("thresholds.yaml"), "--thresholds", help="gate thresholds"),
    dense: bool = typer.Option(False, "--dense", help="also embed the corpora and run hybrid rows (needs hoprag\\[dense])"),
    embedder: str = typer.Option("minilm", "--embedder", help="minilm | static"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Import the bundled samples, index them, answer every question twice, evaluate, gate, report."""
    from hoprag.demo import run_demo

    report = run_demo(
        data_dir, out_dir, quiet=quiet, console=out, store_url=store, thresholds=thresholds,
        dense=dense, embedder=check_choice(embedder, EMBEDDER_NAMES, "embedder"),
    )
    out.print(f"report: {report.markdown}  ·  {report.json}")


def _register_command_modules() -> None:
    """Commands of each capability live in ``hoprag.commands.<area>`` and register themselves."""
    import importlib
    import pkgutil

    import hoprag.commands as commands

    for module in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"hoprag.commands.{module.name}").register(app)


_register_command_modules()


def _install_guards() -> None:
    """Every command's outputs are checked against its inputs before it runs (:mod:`hoprag.cli_io`)."""
    from hoprag.cli_io import install

    install(app)


_install_guards()


def main(argv: list[str] | None = None) -> None:
    """The app inside the one error boundary (:mod:`hoprag.cli_boundary`), for a caller whose process
    goes on (tests, scripts); the ``hoprag`` program is :func:`program`."""
    from hoprag.cli_boundary import run_app

    run_app(app, argv)


def program() -> None:
    """The ``hoprag`` program (console script and ``python -m hoprag.cli``): :func:`main`, then the
    objects the command leaves are frozen out of the cyclic collector's reach, as the process ends
    next: the interpreter's last full collection at exit walked every one of them (a loaded index's
    tables and records: 50 ms after a 1 % update of a 100k index, 8 % of it) only to find what exit
    frees anyway."""
    try:
        main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    program()
