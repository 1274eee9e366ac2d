"""A gated run: ingest → chunk → embed → index → retrieve → generate → feedback, every stage timed
and checked, every metric written to the run store under one run id.

:func:`run_gated_pipeline` does the work itself; :func:`record_demo_stages` records the stages of
work already done (the demo's), so both land in the same table with the same names. Retrieval
and generation happen inside one engine call per question: the retrieve stage's latency is the
sum of the retrieval steps' latencies, the generate stage's the remainder of the trace latency.
"""

from __future__ import annotations

import functools
import inspect
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hoprag.datasets.schema import Case
from hoprag.evaluation.qrels import qrels_from_cases, run_from_traces
from hoprag.files import read_text
from hoprag.gates.baseline import PROFILE_ARTIFACT, REFERENCE_ARTIFACT, load_baseline
from hoprag.gates.checks.chunks import ChunkOutput
from hoprag.gates.checks.data import IngestOutput, field_profile
from hoprag.gates.checks.embeddings import EmbedOutput, reference_sample, unknown_token_ids
from hoprag.gates.checks.generation import GenerationOutput
from hoprag.gates.checks.indexing import IndexOutput
from hoprag.gates.checks.retrieval import RetrievalOutput
from hoprag.gates.embedding_source import BatchEmbedder, make_embedder
from hoprag.gates.hooks import StageRunner
from hoprag.metrics import Metric
from hoprag.index.contract import Index
from hoprag.jsonl import parse_json, read_jsonl_dicts
from hoprag.records import Chunk, Document, Trace
from hoprag.store import RunStore

__all__ = ["GatedRun", "RUN_STAMP", "StoreSink", "new_gate_run_id", "record_demo_stages", "run_gated_pipeline"]

RUN_STAMP = "run.json"  # written into the index directory: which run built this artifact


class StoreSink:
    """Buffers metrics and writes them to the store on :meth:`flush` (after each stage)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.pending: list[Metric] = []

    def __call__(self, m: Metric) -> None:
        self.pending.append(m)

    def flush(self) -> int:
        written = self.store.add_metrics(self.pending)
        self.pending = []
        return written


@dataclass(frozen=True)
class GatedRun:
    run_id: str
    metrics_by_stage: dict[str, int]
    index_dir: Path | None
    traces: dict[str, Path]

    @property
    def stages(self) -> list[str]:
        return list(self.metrics_by_stage)


def new_gate_run_id() -> str:
    return f"gate-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:6]}"


def _raw_records(paths: Sequence[Path]) -> list[dict[str, Any]] | None:
    rows: list[dict[str, Any]] = []
    for path in paths:
        if path.suffix.lower() == ".jsonl":
            rows.extend(obj for _, obj in read_jsonl_dicts(path, "corpus file"))
        elif path.suffix.lower() == ".json":
            data = parse_json(read_text(path, "corpus file"), source=str(path),
                              fix="make the file one JSON array of document objects")
            if isinstance(data, list):  # any other shape is refused by the corpus loader
                rows.extend(obj for obj in data if isinstance(obj, dict))
        else:
            return None  # a folder of files has no raw records: profile the documents
    return rows


def _context(store: RunStore, baseline: str | None, extra: Mapping[str, Any]) -> dict[str, Any]:
    ctx: dict[str, Any] = dict(extra)
    found = load_baseline(store, baseline, required=False) if baseline else None
    if found is not None:
        ctx["baseline_run"] = found.info.run_id
        if found.reference is not None:
            ctx["reference"] = found.reference
            ctx["reference_run"] = found.info.run_id
        if found.profile:
            ctx["baseline_profile"] = found.profile
    return ctx


def _embed_output(embedder: BatchEmbedder, texts: list[str]) -> EmbedOutput:
    vectors = embedder.embed(texts)
    tokenizer = getattr(embedder, "tokenizer", None)
    if tokenizer is None:
        return EmbedOutput(vectors=vectors, model=getattr(embedder, "name", ""))
    unknown, special = unknown_token_ids(tokenizer)
    ids = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    return EmbedOutput(vectors=vectors, token_ids=ids, unknown_ids=unknown, ignore_ids=special,
                       model=getattr(embedder, "name", ""))


def _answer_stages(runner: StageRunner, sink: StoreSink, engine: str, traces: Sequence[Trace],
                   cases: Sequence[Case], ks: tuple[int, ...]) -> None:
    retrieval_ms = sum(s.latency_ms for t in traces for s in t.steps)
    total_ms = sum(t.latency_ms for t in traces)
    runner.observe("retrieve", RetrievalOutput(run_from_traces(traces), qrels_from_cases(cases), ks, engine),
                   latency_ms=retrieval_ms, label=engine, ks=ks)
    sink.flush()
    runner.observe("generate", GenerationOutput(list(traces), {c.case_id: c for c in cases}),
                   latency_ms=max(total_ms - retrieval_ms, 0.0), label=engine)
    sink.flush()


def _feedback_stage(runner: StageRunner, sink: StoreSink, store: RunStore, run_id: str,
                    feedback_path: Path | None) -> None:
    from hoprag.gates.checks.feedback import read_feedback

    if feedback_path is not None:
        store.add_feedback(read_feedback(feedback_path, run_id=run_id))
    runner.observe("feedback", store.feedback(run_id))
    sink.flush()


F = TypeVar("F", bound=Callable[..., Any])


def _marks_run_status(fn: F) -> F:
    """Run ``fn`` under :meth:`RunStore.track_run`: its run ends ``complete``, or ``failed`` if it raises.

    ``fn`` takes ``store`` and ``run_id`` (a missing ``run_id`` gets a new gate-run id here, so the
    run that ``fn`` creates is the one tracked).
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.arguments["run_id"] = bound.arguments.get("run_id") or new_gate_run_id()
        with bound.arguments["store"].track_run(bound.arguments["run_id"]):
            return fn(*bound.args, **bound.kwargs)

    return wrapper  # type: ignore[return-value]


def _stage_counts(metrics: Sequence[Metric]) -> dict[str, int]:
    return dict(Counter(m.stage for m in metrics))


@_marks_run_status
def run_gated_pipeline(corpora: Sequence[str | Path], cases_path: str | Path, out_dir: str | Path,
                       store: RunStore, *, run_id: str | None = None, engines: Sequence[str] = ("multihop",),
                       chunk_config: Any = None, embedder: BatchEmbedder | str = "auto",
                       baseline: str | None = "default", required_fields: Sequence[str] = ("text", "source"),
                       feedback_path: str | Path | None = None, ks: tuple[int, ...] = (5, 10),
                       redact: bool = True) -> GatedRun:
    """Run every stage on ``corpora`` and the questions of ``cases_path``; metrics go to ``store``.

    ``redact``: PII in the traces files and the store's trace rows is replaced by placeholders.
    """
    from hoprag.datasets.schema import load_cases
    from hoprag.index.open import open_index
    from hoprag.index.store import IndexConfig, build_index
    from hoprag.ingest.chunking import chunk_documents
    from hoprag.ingest.loaders import load_corpora
    from hoprag.pipeline.factory import make_engine
    from hoprag.pipeline.batch import questions_from_cases, run_questions

    paths = [Path(p) for p in corpora]
    out = Path(out_dir)
    cases = load_cases(cases_path)
    index_config = IndexConfig(chunk=chunk_config) if chunk_config is not None else IndexConfig()
    emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
    run_id = run_id or new_gate_run_id()
    store.create_run(run_id, kind="gate-run", config={
        "corpora": [p.name for p in paths], "cases": Path(cases_path).name, "engines": list(engines),
        "chunk": index_config.chunk.model_dump(), "embedder": getattr(emb, "name", type(emb).__name__)})
    sink = StoreSink(store)
    ctx = _context(store, baseline, {"required_fields": tuple(required_fields), "chunk_config": index_config.chunk})
    runner = StageRunner(run_id, sink, ctx)

    with runner.stage("ingest") as st:
        documents = load_corpora(paths)
        raw = _raw_records(paths)
        st.output = IngestOutput(documents, raw)
    store.put_json(run_id, PROFILE_ARTIFACT, field_profile(raw if raw is not None else [d.to_dict() for d in documents]))
    sink.flush()
    with runner.stage("chunk") as st:
        chunks = chunk_documents(documents, index_config.chunk)
        st.output = ChunkOutput(chunks, documents)
    sink.flush()
    with runner.stage("embed") as st:
        st.output = _embed_output(emb, [c.text for c in chunks])
    store.put_array(run_id, REFERENCE_ARTIFACT, reference_sample(st.output.vectors))
    sink.flush()
    index_dir = out / "index"
    with runner.stage("index") as st:
        manifest = build_index(documents, index_dir, index_config)
        index = open_index(index_dir)
        st.output = IndexOutput(documents, list(index.chunks.values()), manifest.artifact_id, manifest.config_hash)
    _stamp_index(store, run_id, index_dir, manifest.artifact_id)
    sink.flush()
    traces_paths: dict[str, Path] = {}
    questions = questions_from_cases(cases)
    for engine_name in engines:
        path = out / f"traces-{engine_name}.jsonl"
        run_questions(make_engine(engine_name, index), questions, path, run_id=run_id, resume=False, redact=redact)
        from hoprag.io.traces import read_traces

        traces = read_traces(path)
        store.add_traces(run_id, traces, redact=redact)
        traces_paths[engine_name] = path
        _answer_stages(runner, sink, engine_name, traces, cases, ks)
    _feedback_stage(runner, sink, store, run_id, Path(feedback_path) if feedback_path else None)
    return GatedRun(run_id, _stage_counts(runner.emitted), index_dir, traces_paths)


def _stamp_index(store: RunStore, run_id: str, index_dir: Path, artifact_id: str) -> None:
    """Put the run id on the artifact (``index/run.json``) and the artifact id on the run."""
    (index_dir / RUN_STAMP).write_text(json.dumps({"run_id": run_id, "artifact_id": artifact_id}) + "\n",
                                       encoding="utf-8")
    store.set_artifact_id(run_id, artifact_id)


@_marks_run_status
def record_demo_stages(store: RunStore, run_id: str, documents: Sequence[Document], chunks: Sequence[Chunk],
                       index: Index, cases: Sequence[Case], traces_by_engine: Mapping[str, Sequence[Trace]], *,
                       chunk_config: Any = None, embedder: BatchEmbedder | str = "hash",
                       baseline: str | None = "default", ks: tuple[int, ...] = (5, 10),
                       redact: bool = True) -> dict[str, int]:
    """Record every stage of work already done (the demo's) under ``run_id``; returns metrics per stage.

    ``index`` is the index the work used; a local one (its directory) gets the run stamp.
    Stage latencies of ingest/chunk/index are the checks' own (the work was timed elsewhere).
    """
    emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
    manifest = index.manifest
    store.create_run(run_id, kind="demo", exist_ok=True,
                     artifact_id=manifest.artifact_id,
                     config={"engines": list(traces_by_engine), "embedder": getattr(emb, "name", "")})
    sink = StoreSink(store)
    config = chunk_config or manifest.config.chunk
    runner = StageRunner(run_id, sink, _context(store, baseline, {"chunk_config": config}))
    runner.observe("ingest", IngestOutput(list(documents)))
    store.put_json(run_id, PROFILE_ARTIFACT, field_profile(d.to_dict() for d in documents))
    runner.observe("chunk", ChunkOutput(list(chunks), list(documents)))
    sink.flush()
    with runner.stage("embed") as st:
        st.output = _embed_output(emb, [c.text for c in chunks])
    store.put_array(run_id, REFERENCE_ARTIFACT, reference_sample(st.output.vectors))
    runner.observe("index", IndexOutput(list(documents), list(index.chunks.values()) or list(chunks),
                                        manifest.artifact_id, manifest.config_hash))
    if index.stats().store == "local":  # the run stamp is a file in the index directory: only a local index has one
        _stamp_index(store, run_id, Path(index.location), manifest.artifact_id)
    sink.flush()
    for engine_name, traces in traces_by_engine.items():
        store.add_traces(run_id, traces, redact=redact)
        _answer_stages(runner, sink, engine_name, list(traces), cases, ks)
    _feedback_stage(runner, sink, store, run_id, None)
    return _stage_counts(runner.emitted)
