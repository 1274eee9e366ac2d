"""The data and chunk gates of an index change, run on the documents it analyses and recorded as a run.

``hoprag index CORPUS --out DIR --thresholds FILE [--store URL]`` (a build) and the same with
``--update`` run the ingest checks (:mod:`hoprag.gates.checks.data`: schema, PII, duplicates) and
the chunk checks (:mod:`hoprag.gates.checks.chunks`) on the documents the change brings — every
document of a build; the added and replaced ones of an update, chunked as the index chunks them —
*before* the index is written. The metrics land in the run store under one run (kind
``index-build`` / ``index-update``), and the rules of FILE on those two stages decide:

- a blocking failure raises :class:`GateBlockedError` (exit 1, as ``hoprag gate check``): the
  index is left as it was, the run is marked failed, the message names the metric and the fix;
- warnings are returned for the command to print, the change is applied, and the run gets the
  artifact ids before and after and the change-log entry (artifact ``index_change``).

Rules are checked on their absolute bounds only (``min``, ``max``): a delta of a few documents is
no sample to compare with a baseline run's values, so ``max_drop`` / ``max_rise`` are left out and
a rule with nothing else is not applied. ``--store`` alone records the metrics without a verdict.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoprag.errors import HopragError

if TYPE_CHECKING:  # the checks, the gate and the run store load only when a change is gated
    from hoprag.gates.gate import GateReport, GateRow
    from hoprag.gates.thresholds import Thresholds
    from hoprag.ingest.chunking import ChunkConfig
    from hoprag.records import Document

__all__ = ["CHANGE_ARTIFACT", "GATED_STAGES", "GateBlockedError", "IndexChangeGate", "delta_rules", "index_change_gate"]

GATED_STAGES = ("ingest", "chunk")
#: the run-store artifact that ties a gated run to the index change it checked
CHANGE_ARTIFACT = "index_change"
_SHOWN = 3  # document ids quoted in a message


class GateBlockedError(HopragError):
    """A gate blocked an index change: the index is as it was. Exits 1, as ``hoprag gate check`` does."""

    exit_code = 1


def delta_rules(thresholds: Thresholds) -> Thresholds:
    """The rules of ``thresholds`` on the ingest and chunk stages, on their absolute bounds only."""
    from hoprag.gates.thresholds import Thresholds

    kept = [replace(rule, max_drop=None, max_rise=None) for rule in thresholds.rules
            if rule.stage in GATED_STAGES and (rule.min is not None or rule.max is not None)]
    return Thresholds(rules=tuple(kept), source=thresholds.source)


class IndexChangeGate:
    """The gate of one index change: :meth:`check` the documents before the index is written (a
    :class:`GateBlockedError` stops the change), :meth:`record` the change once applied."""

    def __init__(self, store: Any, thresholds: Thresholds | None, *, kind: str, chunk_config: ChunkConfig,
                 config: dict[str, Any], target: str) -> None:
        self.store = store
        self.thresholds = thresholds
        self.kind = kind
        self.chunk_config = chunk_config
        self.config = config
        self.target = target
        self.run_id: str | None = None
        self.report: GateReport | None = None
        self.report_source = thresholds.source if thresholds is not None else ""
        self.documents = 0

    @property
    def warnings(self) -> list[GateRow]:
        return self.report.warnings if self.report is not None else []

    def summary(self) -> list[str]:
        """One line for the run and the verdict, one per warning (none when nothing was checked)."""
        if self.run_id is None:
            return []
        if self.report is None:
            verdict = "recorded without a verdict (no --thresholds)"
        elif not any(row.threshold for row in self.report.rows):  # no rule of FILE applied, only the hook rows
            verdict = f"recorded; {self.report_source} has no ingest or chunk rule with a min or max to decide"
        else:
            verdict = f"passed, {len(self.warnings)} warning(s)"
        lines = [f"gates on {self.documents} document(s): {verdict}; run {self.run_id} in {self.store.display_url}"]
        for row in self.warnings:
            value = "missing" if row.value is None else f"{row.value:g}"
            lines.append(f"warning: {row.stage} {row.metric} = {value}, rule {row.threshold or row.reason}")
        return lines

    def check(self, documents: Sequence[Document], artifact_before: str | None = None) -> None:
        """Run the ingest and chunk checks on ``documents`` into a new run; raise when a blocking rule fails."""
        from hoprag.gates.checks.chunks import ChunkOutput
        from hoprag.gates.checks.data import IngestOutput
        from hoprag.gates.gate import evaluate_gate
        from hoprag.gates.hooks import StageRunner
        from hoprag.gates.staged_run import StoreSink, new_gate_run_id
        from hoprag.ingest.chunking import chunk_document

        self.run_id = run_id = new_gate_run_id()
        self.documents = len(documents)
        source = self.thresholds.source if self.thresholds else None
        self.store.create_run(run_id, kind=self.kind, artifact_id=artifact_before,
                              config={**self.config, "documents": len(documents), "thresholds": source})
        sink = StoreSink(self.store)
        runner = StageRunner(run_id, sink, {"chunk_config": self.chunk_config})
        runner.observe("ingest", IngestOutput(list(documents)))
        chunks = [c for doc in documents for c in chunk_document(doc, self.chunk_config)]
        runner.observe("chunk", ChunkOutput(chunks, list(documents)))
        sink.flush()
        if self.thresholds is not None:
            self.report = evaluate_gate(run_id, runner.emitted, delta_rules(self.thresholds))
            if self.report.blocked:
                raise GateBlockedError(_blocked_message(self.report, runner.emitted, run_id, self.store.display_url,
                                                        self.thresholds, self.target))

    def record(self, artifact_before: str | None, artifact_after: str, change: dict[str, Any]) -> None:
        """After the change is applied: the new artifact's id on the run, and what changed (artifact ``index_change``)."""
        if self.run_id is None:  # nothing was checked (an update that changed nothing)
            return
        self.store.set_artifact_id(self.run_id, artifact_after)
        self.store.put_json(self.run_id, CHANGE_ARTIFACT, {
            **change, "artifact_before": artifact_before, "artifact_after": artifact_after, "target": self.target})


@contextmanager
def index_change_gate(store_url: str | None, thresholds_path: Path | None, *, kind: str,
                      chunk_config: ChunkConfig, config: dict[str, Any], target: str) -> Iterator[IndexChangeGate | None]:
    """The gate of one index change (``None`` when neither thresholds nor a store was given), its run
    marked complete when the block ends and failed when it raises (a blocked gate included)."""
    if store_url is None and thresholds_path is None:
        yield None
        return
    from hoprag.gates.thresholds import load_thresholds
    from hoprag.store import COMPLETE, FAILED, RunStore

    thresholds = load_thresholds(thresholds_path) if thresholds_path is not None else None
    with RunStore(store_url) as store:
        gate = IndexChangeGate(store, thresholds, kind=kind, chunk_config=chunk_config, config=config, target=target)
        try:
            yield gate
        except BaseException as exc:
            if gate.run_id is not None:
                reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
                store.finish_run(gate.run_id, FAILED, error=reason[:1000])
            raise
        if gate.run_id is not None:
            store.finish_run(gate.run_id, COMPLETE)


#: what to do about a failing metric, by name (prefix); the rule itself can always be changed too
_FIXES = (
    (("schema_violation", "null_rate."), "give every document a non-empty text and source, or leave those "
                                         "documents out"),
    (("pii",), "remove or mask the personal data in those documents, or leave them out"),
    (("exact_duplicates", "near_duplicates", "duplicate_frac"), "drop the duplicated documents"),
    (("mixed_type_fields", "type_flips"), "give each field one type in every document"),
    (("below_floor_frac",), "merge or drop the very short documents"),
    (("len_", "overlap_"), "check the documents' sentence breaks (one huge sentence is kept whole)"),
    (("hook_error", "stage_error"), "the check itself failed (the reason is above); report it with the "
                                    "documents that made it fail"),
)


def _fix_for(metric: str) -> str:
    for prefixes, fix in _FIXES:
        if metric.startswith(prefixes):
            return fix
    return "correct the documents"


def _doc_ids(metric: str, emitted: Sequence[Any]) -> list[str]:
    """The ids of the documents a failing metric points at, when its check recorded them."""
    for m in emitted:
        if m.name != metric:
            continue
        if "doc_ids" in m.meta:
            return list(dict.fromkeys(m.meta["doc_ids"]))
        if "locations" in m.meta:
            return list(dict.fromkeys(loc.get("doc_id", "") for loc in m.meta["locations"] if loc.get("doc_id")))
        if "pairs" in m.meta:
            return list(dict.fromkeys(i for pair in m.meta["pairs"] for i in pair))
    return []


def _blocked_message(report: GateReport, emitted: Sequence[Any], run_id: str, where: str, thresholds: Thresholds,
                     target: str) -> str:
    failures = report.blocking_failures
    parts = []
    for row in failures:
        value = "missing" if row.value is None else f"{row.value:g}"
        ids = _doc_ids(row.metric, emitted)
        named = (f" (documents {', '.join(repr(i) for i in ids[:_SHOWN])}{', …' if len(ids) > _SHOWN else ''})"
                 if ids else "")
        parts.append(f"{row.stage} {row.metric} = {value}, rule {row.threshold or row.reason}{named}")
    fixes = list(dict.fromkeys(_fix_for(row.metric) for row in failures))
    return (f"the gates blocked this change ({len(failures)} blocking failure(s) on its documents: "
            f"{'; '.join(parts)}); {target} is unchanged, and the checks are run {run_id} in {where} "
            f"(`hoprag runs list`, with the same --store). Fix: {'; '.join(fixes)}, then run the command again, or change the rule in "
            f"{thresholds.source}")
