"""The registry of measure definitions: what each measure is called, takes and scores when absent.

A definition is data (ir_measures' shape): a family name, its kind, whether it takes a cut-off
``@k``, its *default* (the value of a case with no trace, or a query missing from a run: 0 for
every recall-like measure, so a missing answer lowers a mean and never leaves it; ``None`` for
descriptive ones such as latency), how it is summarised, and the module whose docstring holds its
formula. Computing is elsewhere: :mod:`hoprag.evaluation.measures.cases` per case,
:mod:`hoprag.evaluation.measures.documents` over qrels and a run.

Kinds: ``chain`` (whole evidence chains), ``hop`` (one graph layer), ``passage`` (supporting
passages and facts), ``answer``, ``attribution``, ``trace`` (descriptive statistics of a trace) and
``document`` (TREC measures over document-level qrels, :mod:`hoprag.evaluation.qrels`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hoprag.errors import ConfigError

__all__ = ["KINDS", "REGISTRY", "MeasureDef", "MeasureSpec", "definition", "parse_measure", "valid_names"]

KINDS = ("chain", "hop", "passage", "answer", "attribution", "trace", "document")
CUTOFFS = ("required", "optional", "none")


@dataclass(frozen=True)
class MeasureDef:
    """One registered measure family (``str(def)`` is its name)."""

    name: str
    kind: str
    cutoff: str
    default: float | None
    formula: str  # the module whose docstring defines it
    summaries: tuple[str, ...] = ("mean",)
    aliases: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.name


def _defs(kind: str, cutoff: str, default: float | None, formula: str, *names: str) -> list[MeasureDef]:
    return [MeasureDef(name, kind, cutoff, default, formula) for name in names]


_ALL: list[MeasureDef] = [
    *_defs("chain", "required", 0.0, "hoprag.evaluation.hops", "chain_coverage"),
    *_defs("chain", "required", 0.0, "hoprag.evaluation.paths", "path_precision"),
    *_defs("hop", "required", 0.0, "hoprag.evaluation.hops", "hop1_recall"),
    *_defs("hop", "required", 0.0, "hoprag.evaluation.paths", "hop2_recall", "hop3_recall"),
    *_defs("hop", "required", None, "hoprag.evaluation.chain_scoring",
           "cond_hop2_recall", "cond_hop3_recall", "gap_hop2_recall", "gap_hop3_recall"),
    *_defs("passage", "required", 0.0, "hoprag.evaluation.support", "passage_recall", "all_passages"),
    *_defs("passage", "none", 0.0, "hoprag.evaluation.support", "sp_em", "sp_f1"),
    *_defs("answer", "none", 0.0, "hoprag.evaluation.answers", "answer_em", "answer_f1"),
    *_defs("attribution", "none", None, "hoprag.evaluation.attribution", "citation_support"),
    *_defs("attribution", "none", 0.0, "hoprag.evaluation.attribution", "claim_recall"),
    MeasureDef("latency_ms", "trace", "none", None, "hoprag.evaluation.latency", summaries=("p50", "p95")),
    *_defs("trace", "none", None, "hoprag.evaluation.hops", "hops", "steps", "evidence_count"),
    MeasureDef("P", "document", "required", 0.0, "hoprag.evaluation.measures.documents", aliases=("precision",)),
    MeasureDef("R", "document", "required", 0.0, "hoprag.evaluation.measures.documents", aliases=("recall",)),
    MeasureDef("Success", "document", "required", 0.0, "hoprag.evaluation.measures.documents",
               aliases=("coverage",)),
    MeasureDef("nDCG", "document", "optional", 0.0, "hoprag.evaluation.measures.documents", aliases=("ndcg",)),
    MeasureDef("RR", "document", "none", 0.0, "hoprag.evaluation.measures.documents", aliases=("mrr",)),
    MeasureDef("AP", "document", "none", 0.0, "hoprag.evaluation.measures.documents", aliases=("map",)),
]

#: every registered family by name
REGISTRY: dict[str, MeasureDef] = {d.name: d for d in _ALL}
_ALIASES = {alias: d.name for d in _ALL for alias in d.aliases}
_NAME = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)(?:@(\d+))?$")


@dataclass(frozen=True)
class MeasureSpec:
    """A registered family at a cut-off: ``str(spec)`` is e.g. ``"P@5"`` or ``"RR"``."""

    family: str
    k: int | None

    def __str__(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    @property
    def definition(self) -> MeasureDef:
        return REGISTRY[self.family]


def definition(name: str) -> MeasureDef:
    """The registered family ``name`` (an alias included); :class:`KeyError` if there is none."""
    return REGISTRY[name] if name in REGISTRY else REGISTRY[_ALIASES[name.lower()]]


def valid_names(kinds: tuple[str, ...] = KINDS) -> str:
    """The valid spellings of ``kinds``' measures, for messages: ``P@k, ..., nDCG, nDCG@k, RR, AP``."""
    out = []
    for d in _ALL:
        if d.kind not in kinds:
            continue
        spelled = {"required": [f"{d.name}@k"], "optional": [d.name, f"{d.name}@k"], "none": [d.name]}[d.cutoff]
        if d.name == "Success":  # the one alias people still type (the gate's old name)
            spelled[-1] += " (alias coverage@k)"
        out.extend(spelled)
    return ", ".join(out)


def parse_measure(name: str, kinds: tuple[str, ...] = KINDS) -> MeasureSpec:
    """``"P@5"`` → ``MeasureSpec("P", 5)``; an unknown name, or one of another kind, lists the valid ones."""
    what = "retrieval measure" if kinds == ("document",) else "measure"
    valid = valid_names(kinds)
    match = _NAME.match(name.strip())
    try:
        found = definition(match.group(1)) if match else None
    except KeyError:
        found = None
    if match is None or found is None or found.kind not in kinds:
        raise ConfigError(f"unknown {what} '{name}'; valid: {valid}. Fix: use one of these names")
    k = int(match.group(2)) if match.group(2) else None
    needs, allows = found.cutoff == "required", found.cutoff != "none"
    if (k is None and needs) or (k is not None and not allows) or (k is not None and k < 1):
        problem = "needs a cut-off @k >= 1" if needs or allows else "takes no cut-off"
        raise ConfigError(f"measure '{name}': {found.name} {problem}; valid: {valid}. Fix: write it as one of these")
    return MeasureSpec(found.name, k)
