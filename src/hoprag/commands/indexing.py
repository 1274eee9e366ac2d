"""``hoprag index``: chunk a corpus and build a persisted index (a directory, or PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console

from hoprag.commands import EMBEDDER_NAMES, EXECUTOR_OPT, WORKERS_OPT
from hoprag.validation_messages import check_choice

if TYPE_CHECKING:
    from hoprag.gates.index_delta import IndexChangeGate

out = Console()


def register(app: typer.Typer) -> None:
    @app.command("index")
    def index_cmd(
        ctx: typer.Context,
        corpora: Optional[list[Path]] = typer.Argument(
            None, help="corpus files (.jsonl/.json) or folders of .md/.txt (with --update: the documents to add or replace)"),
        out_dir: Optional[str] = typer.Option(
            None, "--out", metavar="DIR|URL",
            help="where the index goes: a directory, or PostgreSQL as postgresql://USER@HOST/DB?index=NAME"),
        store: Optional[str] = typer.Option(
            None, "--store", metavar="URL",
            help="run store for the gates' run (postgresql://… or a SQLite path; default $HOPRAG_STORE or "
                 ".hoprag/hoprag.db): with --thresholds, or alone to record the checks without a verdict. "
                 "(Without --out and --thresholds, a postgresql:// URL is the last release's spelling of --out.)"),
        thresholds: Optional[Path] = typer.Option(
            None, "--thresholds", metavar="FILE",
            help="gate the documents this build indexes (with --update: the added and replaced ones) on the ingest "
                 "and chunk rules of FILE before the index is written; a blocking failure leaves the index as it "
                 "was and exits 1. The checks are recorded as a run in --store"),
        chunk_size: int = typer.Option(1200, "--chunk-size", min=50, help="maximum characters per chunk (≥ 50)"),
        overlap: int = typer.Option(150, "--overlap", min=0, help="characters of trailing sentences repeated in the next chunk (< --chunk-size)"),
        chunking: str = typer.Option(
            "fixed", "--chunking",
            help="fixed: sentences packed to --chunk-size characters | paragraph: whole paragraphs up to --chunk-tokens, longer ones cut at sentences",
        ),
        chunk_tokens: int = typer.Option(320, "--chunk-tokens", min=16, help="with --chunking paragraph: most tokens (words and punctuation) per chunk (≥ 16)"),
        dense: bool = typer.Option(False, "--dense/--no-dense", help="also embed every chunk for dense and hybrid retrieval"),
        embedder: str = typer.Option("minilm", "--embedder", help="dense model: minilm (int8 MiniLM, 384-d) | static (model2vec, 64-d)"),
        ann: str = typer.Option("auto", "--ann", help="with --dense, how vectors are searched: auto (an HNSW graph from 50,000 chunks, exact below) | exact | hnsw"),
        graph: bool = typer.Option(True, "--graph/--no-graph", help="also build the entity graph the graph hop walks"),
        fold_accents: bool = typer.Option(
            True, "--fold-accents/--no-fold-accents",
            help="BM25 matches words in base letters ('Aschenbrodel' finds 'Aschenbrödel', 'Strasse' 'Straße'); queries follow the index",
        ),
        update: bool = typer.Option(
            False, "--update",
            help="change the index at --out instead of building a new one: add documents whose id it lacks, replace "
                 "those whose id it holds (one given unchanged stays as it is), delete the --delete ids; only those are "
                 "analysed, and the result ranks exactly as a rebuild of the updated corpus (kept documents in order, "
                 "then the new and replaced ones). The index keeps its own build options",
        ),
        delete_file: Optional[Path] = typer.Option(
            None, "--delete", help="with --update: document ids to delete, one per line (or JSON Lines with 'id')"),
        executor: str = EXECUTOR_OPT,
        workers: Optional[int] = WORKERS_OPT,
        quiet: bool = typer.Option(False, "--quiet", "-q"),
    ) -> None:
        """Chunk and index documents (BM25, plus dense vectors with --dense) into a persisted index directory,
        or update one (--update, --delete)."""
        from hoprag.ingest.chunking import CHUNKING_MODES, ChunkConfig
        from hoprag.ingest.loaders import iter_corpora
        from hoprag.index.ann import ANN_MODES
        from hoprag.index.store import IndexConfig, build_index
        from hoprag.progress import staged_progress

        from hoprag.errors import ConfigError

        out_dir, store, run_store = _target(out_dir, store, thresholds)
        if update or delete_file is not None:
            _update(ctx, corpora or [], out_dir, store, delete_file, executor, workers, quiet, run_store, thresholds)
            return
        if not corpora:
            raise ConfigError("no corpus was given. Fix: `hoprag index CORPUS --out DIR` (a .jsonl/.json file or a folder)")
        if overlap >= chunk_size:
            raise ConfigError(f"--overlap ({overlap}) must be smaller than --chunk-size ({chunk_size}); lower --overlap")
        if out_dir is None and store is None:
            raise ConfigError("give where the index goes: --out DIR (a local index) or --out postgresql://…?index=NAME "
                              "(PostgreSQL)")
        if store is not None:
            from hoprag.index.pg_schema import parse_target

            parse_target(store)  # a bad URL or index name is refused before the corpus is read
        from hoprag.executors import parse_executor

        pool = parse_executor(executor, workers=workers)
        if (pool.name != "local" or (pool.workers or 1) > 1) and (not dense or store is not None):
            raise ConfigError("--executor and --workers spread the dense embedding of an --out build over workers; "
                              "add --dense (and --out DIR), or drop them")
        if ann != "auto" and not dense:
            raise ConfigError(f"--ann {ann} chooses how dense vectors are searched, and this build has none; add --dense, or drop --ann")
        documents = iter_corpora(corpora)  # streamed: read once, by the build, one record at a time
        config = IndexConfig(
            chunk=ChunkConfig(
                mode=check_choice(chunking, CHUNKING_MODES, "chunking"),
                max_chars=chunk_size,
                overlap_chars=overlap,
                max_tokens=chunk_tokens,
            ),
            dense=dense,
            embedder=check_choice(embedder, EMBEDDER_NAMES, "embedder"),
            ann=check_choice(ann, ANN_MODES, "ann mode"),
            graph=graph,
            fold_accents=fold_accents,
        )
        from hoprag.gates.index_delta import index_change_gate

        with index_change_gate(run_store, thresholds, kind="index-build", chunk_config=config.chunk,
                               config={"action": "build"}, target=str(store or out_dir)) as gate:
            if gate is not None:  # the gate reads every document before the build: held in memory once
                documents = list(documents)
                gate.check(documents)
            with staged_progress("index", quiet=quiet) as progress:
                if store is not None:
                    from hoprag.index.pg_build import build_pg_index
                    from hoprag.index.pg_schema import display_url

                    manifest, where = build_pg_index(documents, store, config, progress=progress), display_url(store)
                else:
                    manifest, where = build_index(documents, out_dir, config, progress=progress, executor=pool), str(out_dir)
            if gate is not None:
                gate.record(None, manifest.artifact_id, {"documents": manifest.document_count,
                                                         "chunks": manifest.chunk_count,
                                                         "corpus_hash": manifest.corpus_hash})
        vectors = f", {manifest.dense.dim}-d {manifest.dense.embedder} vectors" if manifest.dense else ""
        graph_ann = getattr(manifest.dense, "ann", None)
        if graph_ann is not None:
            vectors += (f" searched through an HNSW graph (recall@10 {graph_ann.recall_at_10:.3f} vs exact on "
                        f"{graph_ann.recall_queries} chunk vectors, {graph_ann.build_s:.1f} s)")
        info = manifest.graph
        if info is not None:
            vectors += (f", entity graph of {info.entities} entities / {info.mentions} mentions / {info.chunk_links} "
                        f"chunk links ({info.bytes / 1024:.0f} KiB, {info.build_seconds:.2f} s)")
        out.print(
            f"indexed {manifest.document_count} documents as {manifest.chunk_count} chunks{vectors} → {where} "
            f"(artifact {manifest.artifact_id}, config {manifest.config_hash})"
        )
        _gate_lines(gate)


#: build options an update keeps from the index, and where its config records each
_KEPT = {"chunk_size": ("chunk", "max_chars"), "overlap": ("chunk", "overlap_chars"), "chunking": ("chunk", "mode"),
         "chunk_tokens": ("chunk", "max_tokens"), "dense": (None, "dense"), "embedder": (None, "embedder"),
         "ann": (None, "ann"), "graph": (None, "graph"), "fold_accents": (None, "fold_accents")}


def _update(ctx: typer.Context, corpora: list[Path], out_dir: Optional[Path], store: Optional[str],
            delete_file: Optional[Path], executor: str, workers: Optional[int], quiet: bool,
            run_store: Optional[str], thresholds: Optional[Path]) -> None:
    """``--update``: one call into :func:`hoprag.index.update.update_index` (a directory) or
    :func:`hoprag.index.pg_update.update_pg_index` (``--out postgresql://…``)."""
    from hoprag.errors import ConfigError
    from hoprag.executors import parse_executor
    from hoprag.index.manifest import read_manifest
    from hoprag.index.update import update_index
    from hoprag.index.update_plan import read_delete_ids
    from hoprag.ingest.loaders import iter_corpora
    from hoprag.progress import staged_progress

    if out_dir is None and store is None:
        raise ConfigError("--update changes the index at --out, and none was given. "
                          "Fix: `hoprag index CORPUS --out DIR --update` (or --out postgresql://…?index=NAME)")
    if not ctx.params.get("update"):
        raise ConfigError("--delete removes documents from an existing index, and this command builds a new one. "
                          "Fix: add --update (`hoprag index --out DIR --update --delete ids.txt`)")
    if not corpora and delete_file is None:
        raise ConfigError("--update was given nothing to change. Fix: give documents to add or replace (CORPUS) "
                          "or ids to delete (--delete FILE)")
    if store is not None:
        from hoprag.index.pg_schema import display_url
        from hoprag.index.pg_update import read_pg_manifest, update_pg_index

        config, where = read_pg_manifest(store).config, display_url(store)
    else:
        config, where = read_manifest(out_dir).config, str(out_dir)
    for name, (group, field) in _KEPT.items():
        if store is not None and name == "graph":  # a PostgreSQL index keeps no entity graph: --graph changes nothing
            continue
        source = ctx.get_parameter_source(name)
        if source is None or source.name != "COMMANDLINE":  # typer's own click: compare by name
            continue
        kept = getattr(getattr(config, group) if group else config, field)
        given = ctx.params[name]
        if given != kept:
            flag = "--" + name.replace("_", "-")
            typed = (flag if given else f"--no-{flag[2:]}") if isinstance(given, bool) else f"{flag} {given}"
            built = (f"with {flag}" if kept else f"with --no-{flag[2:]}") if isinstance(kept, bool) else f"with {flag} {kept}"
            raise ConfigError(f"{typed}: the index was built {built}, and an update keeps the options the index was "
                              f"built with. Fix: drop {typed}, or rebuild without --update")
    pool = parse_executor(executor, workers=workers)
    if (pool.name != "local" or (pool.workers or 1) > 1) and (not config.dense or store is not None):
        raise ConfigError("--executor and --workers spread the dense embedding of a local index over workers, and "
                          "this index has no dense vectors or is in PostgreSQL. Fix: drop them")
    deletes = read_delete_ids(delete_file) if delete_file is not None else []
    documents = iter_corpora(corpora) if corpora else iter(())
    from hoprag.gates.index_delta import index_change_gate

    with index_change_gate(run_store, thresholds, kind="index-update", chunk_config=config.chunk,
                           config={"action": "update"}, target=where) as gate:
        with staged_progress("update", quiet=quiet) as progress:
            delete_source, check = str(delete_file) if delete_file else "--delete", gate.check if gate is not None else None
            if store is not None:
                result = update_pg_index(store, documents, deletes, progress=progress, delete_source=delete_source,
                                         check=check)
            else:
                result = update_index(out_dir, documents, deletes, progress=progress, executor=pool,
                                      delete_source=delete_source, check=check)
        plan, manifest = result.plan, result.manifest
        if gate is not None and result.changed:
            gate.record(manifest.updates[-1].previous_artifact_id, manifest.artifact_id,
                        {"update": manifest.updates[-1].model_dump(), "corpus_hash": manifest.corpus_hash})
    counts = (f"{plan.added} added, {len(plan.replaced)} replaced, {len(plan.deleted)} deleted, "
              f"{plan.unchanged} unchanged")
    if not result.changed:
        out.print(f"nothing to update ({counts}) → {where} unchanged (artifact {manifest.artifact_id})")
        return
    how = manifest.updates[-1]
    method = "" if how.method == "delta" else " by a rebuild (the index predates analysis/)"
    out.print(f"updated{method}: {counts} → {where} now {manifest.document_count} documents as "
              f"{manifest.chunk_count} chunks in {how.seconds:.2f} s (artifact {manifest.artifact_id}, "
              f"corpus {manifest.corpus_hash[:12]})")
    _gate_lines(gate)


def _gate_lines(gate: IndexChangeGate | None) -> None:
    """What the gates said of a change that went through (nothing without --thresholds or --store)."""
    from rich.markup import escape

    for line in gate.summary() if gate is not None else ():
        out.print(escape(line).replace("warning:", "[yellow]warning:[/]", 1))


def _target(out: str | None, store: str | None,
            thresholds: Path | None) -> tuple[Path | None, str | None, str | None]:
    """(a local index directory, a PostgreSQL URL, the run store) from ``--out`` (either one) and
    ``--store`` — the run store, except the last release's ``--store postgresql://…`` for the index
    itself, without --out or --thresholds (said once)."""
    from hoprag.index.pg_schema import is_pg_url

    if store is None or out is not None or thresholds is not None or not is_pg_url(store):
        if out is not None and is_pg_url(out):
            return None, out, store
        return (Path(out) if out is not None else None), None, store
    from rich.console import Console

    Console(stderr=True).print("[yellow]note:[/] `hoprag index --store postgresql://…` is now `--out "
                               "postgresql://…` (--store is the run store everywhere); the old flag works until "
                               "the next release")
    return None, store, None
