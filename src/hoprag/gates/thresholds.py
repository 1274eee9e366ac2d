"""Thresholds in YAML: per stage, per metric, a bound and whether crossing it warns or blocks.

::

    ingest:                       # a stage (or a seed alias: source_data, chunking, vectorization, ...)
      pii_hits: {max: 0, mode: block}
      duplicate_frac: {max: 0.02}             # mode defaults to warn
    retrieve:
      nDCG@10: {min: 0.30, max_drop: 0.05}    # max_drop / max_rise compare with the baseline run
      Success@10: {min: 0.80, optional: true} # optional: a missing metric is skipped, not failed

Bounds: ``min``, ``max`` (absolute), ``max_drop`` (baseline - value), ``max_rise`` (value - baseline).
A metric name must be one the stage's checks emit (the error lists them) unless the rule says
``custom: true`` (a metric of your own hook). ``coverage@k`` is accepted for ``Success@k``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoprag.errors import ConfigError
from hoprag.finite_numbers import NumberError, finite_float
from hoprag.gates.checks.retrieval import CUTOFF_FAMILIES, PLAIN_FAMILIES
from hoprag.metrics import STAGES, canonical_stage
from hoprag.validation_messages import quote

__all__ = ["KNOWN_METRICS", "MODES", "Rule", "Thresholds", "is_known_metric", "load_thresholds", "parse_thresholds"]

MODES = ("warn", "block")
_BOUNDS = ("min", "max", "max_drop", "max_rise")
_KEYS = set(_BOUNDS) | {"mode", "optional", "custom", "note"}
_ANY = ("latency_ms", "hook_error", "stage_error")
KNOWN_METRICS: dict[str, tuple[str, ...]] = {
    "ingest": ("documents", "schema_violations", "schema_violation_frac", "null_rate.<field>", "mixed_type_fields",
               "type_flips", "pii_hits", "pii_docs", "pii.<kind>", "exact_duplicates", "near_duplicates",
               "duplicate_frac"),
    "chunk": ("chunks", "len_chars_p50", "len_chars_p95", "len_chars_max", "len_tokens_p50", "len_tokens_p95",
              "len_tokens_max", "below_floor_frac", "overlap_pairs", "overlap_chars_p50", "overlap_tokens_p50",
              "overlap_zero_frac", "overlap_ratio"),
    "embed": ("vectors", "nonfinite_frac", "zero_norm_frac", "norm_p05", "norm_p50", "norm_p95", "oov_frac",
              "pairwise_sim_mean", "pairwise_sim_p05", "pairwise_sim_p95", "centroid_drift", "norm_p50_shift",
              "pairwise_sim_ks", "embed_texts"),
    "index": ("documents_indexed", "chunks_indexed", "chunks_per_document", "unindexed_documents"),
    # the retrieve check's names, read from it (it records the evaluation core's document measures)
    "retrieve": ("queries", *(f"{family}@<k>" for family in CUTOFF_FAMILIES), *PLAIN_FAMILIES),
    "generate": ("answers", "answered", "abstain_rate", "error_rate", "faithfulness", "factuality",
                 "citation_coverage", "bleu", "rouge1", "rouge2", "rougeL", "answer_em", "answer_f1",
                 "latency_ms_p50", "latency_ms_p95", "step_latency_ms_p50", "step_latency_ms_p95", "input_tokens",
                 "output_tokens", "input_tokens_per_query", "output_tokens_per_query", "cost_total",
                 "cost_per_answered"),
    "feedback": ("events", "thumbs", "thumbs_up_rate", "thumbs_up_rate_latest", "thumbs_up_rate_change",
                 "tags.<stage>", "tag.<tag>", "citation_clicks", "citation_ctr"),
}
_PLACEHOLDER = {"<field>": r"[A-Za-z_][\w]*", "<kind>": r"[a-z_]+", "<k>": r"[1-9]\d*", "<stage>": r"[a-z]+",
                "<tag>": r"[a-z_]+"}


def _pattern(name: str) -> re.Pattern[str]:
    regex = re.escape(name)
    for holder, sub in _PLACEHOLDER.items():
        regex = regex.replace(re.escape(holder), sub)
    return re.compile(f"^{regex}$")


_PATTERNS = {stage: [_pattern(n) for n in names + _ANY] for stage, names in KNOWN_METRICS.items()}


def is_known_metric(stage: str, name: str) -> bool:
    return any(p.match(name) for p in _PATTERNS.get(stage, ()))


@dataclass(frozen=True)
class Rule:
    stage: str
    metric: str
    mode: str = "warn"
    min: float | None = None
    max: float | None = None
    max_drop: float | None = None
    max_rise: float | None = None
    optional: bool = False

    @property
    def needs_baseline(self) -> bool:
        return self.max_drop is not None or self.max_rise is not None

    def describe(self) -> str:
        parts = [f"{label} {getattr(self, key):g}" for key, label in
                 (("min", ">="), ("max", "<="), ("max_drop", "drop <="), ("max_rise", "rise <="))
                 if getattr(self, key) is not None]
        return ", ".join(parts)


@dataclass(frozen=True)
class Thresholds:
    rules: tuple[Rule, ...]
    source: str = "<memory>"


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: bound must be a number, got {quote(value)}. Fix: give a number such as 0.5")
    try:  # hoprag.finite_numbers: .nan, .inf and integers past the float range are no bounds
        return finite_float(value, "bound")
    except NumberError as exc:
        raise ConfigError(f"{where}: bound {exc.reason}. Fix: give a finite number such as 0.5") from None


def parse_thresholds(data: Any, source: str = "<memory>") -> Thresholds:
    """Validate a thresholds mapping; every problem names the stage, the metric and the fix."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: thresholds must be a mapping of stage -> metric -> rule")
    rules: list[Rule] = []
    for raw_stage, metrics in data.items():
        if raw_stage == "version":
            continue
        try:
            stage = canonical_stage(str(raw_stage))
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        if not isinstance(metrics, dict):
            raise ConfigError(f"{source}: stage '{raw_stage}' must map metric names to rules")
        for raw_name, spec in metrics.items():
            name = re.sub(r"^coverage@", "Success@", str(raw_name))
            where = f"{source}: {raw_stage}.{raw_name}"
            if not isinstance(spec, dict):
                raise ConfigError(f"{where}: rule must be a mapping such as {{max: 0, mode: block}}")
            unknown = set(spec) - _KEYS
            if unknown:
                raise ConfigError(f"{where}: unknown rule key(s) {sorted(map(str, unknown))}; valid: {sorted(_KEYS)}")
            if not spec.get("custom") and not is_known_metric(stage, name):
                raise ConfigError(
                    f"{where}: unknown metric '{raw_name}' for stage '{stage}'; valid: "
                    f"{', '.join(KNOWN_METRICS[stage] + _ANY)} (mark a metric of your own hook with custom: true)")
            mode = str(spec.get("mode", "warn"))
            if mode not in MODES:
                raise ConfigError(f"{where}: mode '{mode}' is not one of {', '.join(MODES)}")
            for flag in ("optional", "custom"):
                if not isinstance(spec.get(flag, False), bool):
                    raise ConfigError(f"{where}: {flag} must be true or false, got {quote(spec[flag])}. "
                                      f"Fix: write {flag}: true or {flag}: false")
            bounds = {k: _number(spec[k], f"{where}.{k}") for k in _BOUNDS if k in spec}
            if not bounds:
                raise ConfigError(f"{where}: give at least one bound: {', '.join(_BOUNDS)}")
            rules.append(Rule(stage=stage, metric=name, mode=mode, optional=bool(spec.get("optional", False)),
                              **bounds))
    if not rules:
        raise ConfigError(f"{source}: no rules; give at least one stage with a metric rule (stages: {', '.join(STAGES)})")
    return Thresholds(rules=tuple(rules), source=source)


def load_thresholds(path: str | Path) -> Thresholds:
    """Read and validate a thresholds YAML file."""
    from hoprag.errors import InputError
    from hoprag.yaml_input import read_yaml

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: thresholds file not found. Fix: pass --thresholds thresholds.yaml "
                          "(the documented one is at the repository root)")
    try:
        data = read_yaml(path, what="thresholds file", fix="see the format in thresholds.yaml")
    except InputError as exc:  # a thresholds file is configuration: its errors are ConfigErrors
        raise ConfigError(str(exc)) from None
    return parse_thresholds(data, source=str(path))
