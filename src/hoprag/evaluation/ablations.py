"""Ablations that change one stage at a time, with oracle rows kept apart from system rows.

System rows (the deployed question-only input):

- ``single``: one BM25 call, top-k as context (:class:`SingleShotEngine`);
- ``iterative``: the offline multi-hop engine (:class:`MultiHopEngine`), chain-aware ordering on;
- ``fixed-template``: the same engine with the planner replaced by the question as one sub-query
  (planner vs fixed templates; the planner is the offline one, or an LLM planner when given);
- ``iterative-hop-order``: the same engine with chain ordering off (context in the order found,
  hop by hop) — the closest existing "reranker on vs off";
- ``graph``: the ``iterative`` engine with the graph hop on (personalised PageRank over the index's
  entity graph between hops, :mod:`hoprag.pipeline.graph_hop`); every other iterative row runs
  without it, so this row is the graph's gain. Left out when the index has no entity graph.

Oracle rows (diagnostics; they read gold labels and are never release candidates):

- ``oracle-hop``: hop 1 is seeded with the chunks of the gold layer-1 facts
  (``MultiHopEngine.answer(question, seed_chunks=...)``), followed by default by the chunks the
  free run kept at hop 1 (so the oracle adds the correct prior fact without taking the system's own
  state away); every later hop runs unchanged. Its hop-k recall is the *conditional* recall of the
  iterative run;
- ``oracle-evidence``: the chunks of every fact of the primary chain go straight to the answerer;
- ``minimal-evidence``: the iterative run's context filtered to the items relevant to a valid
  chain (full context vs minimal sufficient evidence).

An ablation that cannot run here goes in ``UNAVAILABLE`` with the reason, and the table says so
instead of inventing a number (none at present).

A gold fact's chunks are the indexed chunks of its source document that overlap one of its spans
(all of the document's chunks when the fact has no spans). A case whose layer-1 facts have no chunk
in the index gets no oracle-hop trace and is counted in ``oracle_unseeded``.

With a ``clearance`` (:mod:`hoprag.security.acl`) every row runs for a caller at that level: the engines
retrieve only what it may see, and the oracle rows are built from the visible chunks only (a gold
fact above the clearance counts as not indexed), so no row holds a document above it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoprag.security.acl import Clearance, visible_corpus
from hoprag.datasets.schema import Case
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.graph import chain_fact_ids, item_relevant
from hoprag.evaluation.matching import Located
from hoprag.evaluation.oracle_check import oracle_check
from hoprag.evaluation.paths import layer_sets
from hoprag.index.contract import Index
from hoprag.pipeline.engine import MultiHopConfig, SingleShotConfig, SingleShotEngine
from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.multihop import MultiHopEngine
from hoprag.pipeline.spec import EngineSpec
from hoprag.pipeline.plan import QuestionPlanner
from hoprag.errors import ConfigError
from hoprag.executors import LocalExecutor
from hoprag.io.traces import write_traces
from hoprag.security.boundary import trace_for_storage
from hoprag.records import Chunk, Evidence, Hit, HopStep, Trace

TABLE_METRICS = ("chain_coverage@5", "chain_coverage@10", "path_precision@10", "hop1_recall@10", "hop2_recall@10",
                 "answer_em", "answer_f1", "pass_rate", "latency_ms_p95")
UNAVAILABLE: dict[str, str] = {}

if TYPE_CHECKING:
    from hoprag.executors import Executor


class HopOrderReranker:
    """Reranking off: the buffer in the order evidence was found (hop 1 first), capped at ``limit``."""

    name = "hop-order"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def rerank(self, question: str, evidence: Sequence[Evidence], steps: Sequence[HopStep] = ()) -> list[Evidence]:
        return [
            replace(item, hit=replace(item.hit, rank=position, retriever=f"hop-order:{item.hit.retriever}"))
            for position, item in enumerate(list(evidence)[: self.limit], start=1)
        ]


class HopOrderEngine(MultiHopEngine):
    """The multi-hop engine with chain-aware ordering off: context in the order evidence was found."""

    name = "multihop-hop-order"

    def __init__(self, retriever, chunks, documents, config: MultiHopConfig | None = None, **roles) -> None:
        config = config or MultiHopConfig()
        super().__init__(retriever, chunks, documents, config, reranker=HopOrderReranker(config.context_k), **roles)


def fact_chunks(case: Case, fact_id: str, chunks_by_doc: Mapping[str, list[Chunk]]) -> list[str]:
    """Ids of the indexed chunks holding a gold fact (see the module doc)."""
    fact = case.facts[fact_id]
    out = []
    for chunk in chunks_by_doc.get(fact.source_id, ()):
        if item_relevant(case, Located(chunk.doc_id, chunk.start, chunk.end), [fact_id]):
            out.append(chunk.id)
    return out


def oracle_seed(case: Case, chunks_by_doc: Mapping[str, list[Chunk]]) -> list[str]:
    """Chunks of the layer-1 facts of the first valid chain whose layer-1 facts are all indexed."""
    for facts in layer_sets(case, 1):
        seeds: list[str] = []
        for fact_id in sorted(facts):
            found = fact_chunks(case, fact_id, chunks_by_doc)
            if not found:
                seeds = []
                break
            seeds.extend(c for c in found if c not in seeds)
        if seeds:
            return seeds
    return []


def _evidence_trace(case: Case, chunk_ids: Sequence[str], chunks: Mapping[str, Chunk], documents: Mapping[str, Any],
                    run_id: str, engine: str) -> Trace:
    hits = []
    for rank, chunk_id in enumerate(chunk_ids, start=1):
        chunk = chunks[chunk_id]
        doc = documents.get(chunk.doc_id)
        hits.append(Hit(chunk_id, chunk.doc_id, 1.0, rank, "oracle", chunk.start, chunk.end, doc.title if doc else ""))
    step = HopStep(step_id="s1", hop=1, sub_query=case.query, issued_query="", hits=tuple(hits),
                   selected=tuple(chunk_ids), filters={"oracle": True})
    evidence = tuple(Evidence(h, chunks[h.chunk_id].text, h.title, 1, "s1", case.query) for h in hits)
    answer = extract_answer(case.query, evidence)
    return Trace(run_id=run_id, case_id=case.case_id, question=case.query, steps=(step,), evidence=evidence,
                 answer=answer, stop_reason="oracle", engine=engine)


def _minimal(case: Case, trace: Trace) -> Trace:
    facts = chain_fact_ids(case)
    kept = tuple(e for e in trace.evidence if item_relevant(case, e, facts))
    answer = extract_answer(case.query, kept)
    return replace(trace, evidence=kept, answer=answer, engine="minimal-evidence", stop_reason="oracle")


@dataclass(frozen=True)
class AblationResult:
    rows: list[dict[str, Any]]
    oracle_check: dict[str, Any]
    out_dir: Path

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "oracle_check": self.oracle_check, "unavailable": UNAVAILABLE}


def run_ablations(
    index: Index,
    cases: Sequence[Case],
    out_dir: str | Path,
    *,
    k: int = 10,
    oracle_mode: str = "augment",
    planner: Any = None,
    clearance: str | Clearance | None = None,
    redact: bool = True,
    executor: Executor | None = None,
    setup: Callable[[], AblationEngines] | None = None,
    spec: EngineSpec | None = None,
) -> AblationResult:
    """Run every ablation over ``cases`` with ``index`` (any store); write traces and a table to ``out_dir``.

    ``oracle_mode`` ``"augment"`` (default) seeds hop 1 with the gold layer-1 chunks followed by the
    chunks the free run itself kept at hop 1 (the prior state made correct, nothing else taken away);
    ``"replace"`` seeds with the gold chunks only. ``planner`` (default: the offline planner) is
    the planner of every iterative row; the ``fixed-template`` row swaps it for the question as one
    sub-query, changing that one stage. Trace files are written redacted of PII unless
    ``redact=False``. ``clearance`` runs every row for a caller at that level
    (see the module doc); ``None`` is unrestricted. ``executor`` (:mod:`hoprag.executors`;
    default: this process, one case at a time) runs the cases; each worker gets its engines from
    ``setup()`` (default: built here over ``index``), which for Ray must be picklable, such as
    :class:`AblationRecipe`. ``spec`` (:class:`~hoprag.pipeline.spec.EngineSpec`) sets the rows'
    retrieval, ``k`` and multi-hop knobs (default: the defaults).
    """
    if oracle_mode not in ("augment", "replace"):
        raise ConfigError(f"--oracle-mode must be 'augment' or 'replace', got {oracle_mode!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces: dict[str, list[Trace]] = {name: [] for name in ROWS}
    unseeded = []
    work = executor or LocalExecutor()
    given = setup or _Given(ablation_engines(index, planner=planner, clearance=clearance, spec=spec))
    # every case's rows come back in the cases' order, whichever worker ran them
    for case, rows in zip(cases, work.map(partial(ablate_case, oracle_mode=oracle_mode), list(cases), setup=given)):
        for name, trace in rows.items():
            if trace is not None:
                traces[name].append(trace)
        if rows["oracle-hop"] is None:
            unseeded.append(case.case_id)
    if cases and not traces["graph"]:  # the index has no entity graph: no graph row
        del traces["graph"]
    for name, items in traces.items():
        # what is written is redacted of PII like every stored trace; scoring below uses the same ids
        write_traces(out / f"traces-{name}.jsonl", [trace_for_storage(t, "ablation-traces", redact=redact) for t in items])
    reports = {}
    for name, items in traces.items():
        oracle = traces["oracle-hop"] if name == "iterative" else None
        reports[name] = evaluate_chains(cases, items, ks=(5, k) if k != 5 else (5,), oracle_traces=oracle)
    rows = []
    for name, report in reports.items():
        kind = "oracle" if name.startswith(("oracle", "minimal")) else "system"
        metrics = {m.replace("@10", f"@{k}"): report.aggregate.get(m.replace("@10", f"@{k}")) for m in TABLE_METRICS}
        rows.append({"ablation": name, "kind": kind, "cases": len(traces[name]), "metrics": metrics, "failures": report.failures})
    for name, why in UNAVAILABLE.items():
        rows.append({"ablation": name, "kind": "unavailable", "cases": 0, "metrics": {}, "failures": {}, "note": why})
    check = oracle_check(cases, traces["iterative"], traces["oracle-hop"], k=k)
    check["oracle_unseeded"] = unseeded
    result = AblationResult(rows=rows, oracle_check=check, out_dir=out)
    from hoprag.io.kinds import JSON_DOCUMENT, MARKDOWN_REPORT
    from hoprag.io.outputs import write_text

    write_text(out / "ablations.json", json.dumps(result.to_json(), indent=2, ensure_ascii=False), JSON_DOCUMENT)
    write_text(out / "ablations.md", render_table(result), MARKDOWN_REPORT)
    return result


ROWS = ("single", "iterative", "iterative-hop-order", "fixed-template", "graph", "oracle-hop", "oracle-evidence",
        "minimal-evidence")


@dataclass(frozen=True)
class AblationEngines:
    """What one worker answers every ablation row of a case with."""

    single: SingleShotEngine
    iterative: MultiHopEngine
    hop_order: HopOrderEngine
    templated: MultiHopEngine
    chunks: Mapping[str, Chunk]
    documents: Mapping[str, Any]
    chunks_by_doc: Mapping[str, list[Chunk]]
    #: the iterative engine with the graph hop (``None``: the index has no entity graph)
    graphed: MultiHopEngine | None = None


def check_ablation_spec(spec: EngineSpec) -> EngineSpec:
    """``spec`` when ablate can use all of it: its retrieval, ``k``, multi-hop knobs, planner model and
    model settings; any other role model, the LLM reranker or the graph flag would be ignored."""
    unused = [f"{name}: {getattr(spec, name)}" for name in ("llm", "synth_llm", "judge_llm", "rerank", "graph")
              if getattr(spec, name) != EngineSpec.model_fields[name].default]
    if unused:
        raise ConfigError(
            f"ablate answers with the offline roles but the planner, so {', '.join(unused)} in the engine config "
            "would be ignored. Fix: remove it (planner_llm sets the planner's model), or answer with `hoprag run`"
        )
    return spec


def ablation_engines(index: Index, *, planner: Any = None, clearance: str | Clearance | None = None,
                     spec: EngineSpec | None = None) -> AblationEngines:
    """The engines of every row over ``index``, for a caller at ``clearance`` (``None``:
    ``HOPRAG_CLEARANCE``, else unrestricted; :mod:`hoprag.security.clearance` decides), with the
    retrieval, ``k`` and multi-hop knobs of ``spec`` (default: the defaults)."""
    from hoprag.pipeline.factory import spec_retriever
    from hoprag.security import clearance as resolver  # looked up per call: one resolver, tests can watch it

    spec = check_ablation_spec(spec or EngineSpec())
    retriever = spec_retriever(spec, index)
    config = spec.multihop_config()
    single = SingleShotConfig(**({"k": spec.k} if spec.k else {}))
    cleared = resolver.caller_clearance(clearance, index=index, names=resolver.LIBRARY)
    chunks, documents = visible_corpus(index.chunks, index.documents, cleared)
    chunks_by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks.values():
        chunks_by_doc.setdefault(chunk.doc_id, []).append(chunk)
    return AblationEngines(
        single=SingleShotEngine(retriever, chunks, documents, single, clearance=cleared),
        iterative=MultiHopEngine(retriever, chunks, documents, config, planner=planner, clearance=cleared),
        hop_order=HopOrderEngine(retriever, chunks, documents, config, planner=planner, clearance=cleared),
        templated=MultiHopEngine(retriever, chunks, documents, config, planner=QuestionPlanner(), clearance=cleared),
        chunks=chunks, documents=documents, chunks_by_doc=chunks_by_doc,
        graphed=MultiHopEngine(retriever, chunks, documents, config, planner=planner, clearance=cleared, graph=graph)
        if (graph := index.entity_graph()) is not None else None,
    )


@dataclass(frozen=True)
class _Given:
    engines: AblationEngines

    def __call__(self) -> AblationEngines:
        return self.engines


@dataclass(frozen=True)
class AblationRecipe:
    """A Ray worker's setup: the engines of every row over the index at ``index_dir`` (a path every
    worker can read, or a PostgreSQL URL; :func:`hoprag.index.open.index_location`), with the
    ``planner_llm`` backend (None: the offline planner)."""

    index_dir: str
    spec: EngineSpec = field(default_factory=EngineSpec)
    clearance: Any = None

    def __call__(self) -> AblationEngines:
        from hoprag.index.open import open_index

        return ablation_engines(open_index(self.index_dir), planner=ablation_planner(self.spec), clearance=self.clearance,
                                spec=self.spec)


def ablation_planner(spec: EngineSpec) -> Any:
    """The planner of the iterative rows: ``spec.planner_llm`` with its model settings, or ``None`` (offline)."""
    backend = spec.llm_settings.make(spec.planner_llm)
    if backend is None:
        return None
    from hoprag.pipeline.llm_roles import LLMPlanner

    return LLMPlanner(backend, guard=spec.llm_settings.guard())


def ablate_case(engines: AblationEngines, case: Case, *, oracle_mode: str = "augment") -> dict[str, Trace | None]:
    """Every row's trace for one case (``oracle-hop`` None when its layer-1 facts are not indexed)."""
    q = case.query
    rows: dict[str, Trace | None] = {}
    rows["single"] = engines.single.answer(q, case_id=case.case_id, run_id="ablate-single")
    free = rows["iterative"] = engines.iterative.answer(q, case_id=case.case_id, run_id="ablate-iterative")
    rows["iterative-hop-order"] = engines.hop_order.answer(q, case_id=case.case_id, run_id="ablate-hop-order")
    rows["fixed-template"] = engines.templated.answer(q, case_id=case.case_id, run_id="ablate-fixed-template")
    rows["graph"] = engines.graphed.answer(q, case_id=case.case_id, run_id="ablate-graph") if engines.graphed else None
    seeds = oracle_seed(case, engines.chunks_by_doc)
    if seeds and oracle_mode == "augment":
        own = free.steps[0].selected if free.steps else ()
        seeds = seeds + [c for c in own if c not in seeds]
    rows["oracle-hop"] = (engines.iterative.answer(q, case_id=case.case_id, run_id="ablate-oracle-hop", seed_chunks=seeds)
                          if seeds else None)
    gold: list[str] = []
    for fact_id in (case.valid_chains[0] if case.valid_chains else []):
        gold.extend(c for c in fact_chunks(case, fact_id, engines.chunks_by_doc) if c not in gold)
    rows["oracle-evidence"] = _evidence_trace(case, gold, engines.chunks, engines.documents, "ablate-oracle-evidence",
                                              "oracle-evidence")
    rows["minimal-evidence"] = _minimal(case, free)
    return rows


def render_table(result: AblationResult) -> str:
    metrics = list(result.rows[0]["metrics"]) if result.rows else []
    lines = ["# Ablations", "", "| ablation | kind | cases | " + " | ".join(metrics) + " |", "|---|---|---:|" + "---:|" * len(metrics)]
    for kind in ("system", "oracle", "unavailable"):
        if kind == "oracle":
            lines.append("| **oracle rows: diagnostics only, read gold labels, never release scores** |" + " |" * (len(metrics) + 2))
        for row in (r for r in result.rows if r["kind"] == kind):
            cells = [("–" if row["metrics"].get(m) is None else f"{row['metrics'][m]:.3f}") for m in metrics]
            if kind == "unavailable":
                cells = ["not available"] + [""] * (len(metrics) - 1)
            lines.append(f"| {row['ablation']} | {kind} | {row['cases']} | " + " | ".join(cells) + " |")
    c = result.oracle_check
    lines += ["", f"Oracle-hop hop-2 recall@{c['k']} = {_f(c['oracle_hop2_recall'])} vs free-running {_f(c['free_hop2_recall'])} "
              f"over {c['cases']} cases (holds: {c['holds']}); {len(c['oracle_worse'])} case(s) where the oracle run is lower:"]
    lines += [f"- {w['case_id']}: {w['free']:.2f} → {w['oracle']:.2f}: {w['why']}" for w in c["oracle_worse"]]
    for name, why in UNAVAILABLE.items():
        lines.append(f"\n{name}: not available — {why}.")
    return "\n".join(lines) + "\n"


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
