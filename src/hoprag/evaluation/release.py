"""Frozen release policy: a YAML file that says when a run may ship; exit 0 pass, 1 fail.

Policy (every section optional; see ``examples/release-policy.yaml``)::

    version: 1
    k: 10                               # cutoff for @k metrics named without one
    critical:                           # cases whose chain must be complete AND answer right
      templates: [acquired-plan-retention]
      case_ids: [ent-003]
      question_types: []
    min:                                # aggregate >= value
      chain_coverage@10: 0.6
      citation_support: 0.9
    max:                                # aggregate <= value (stopping metrics included)
      latency_ms_p95: 2000
      unsupported_completion_rate: 0.0
      timeout_rate: 0.05
    timeouts:
      allowed_fallbacks: [abstain, partial]   # what a timed-out or incomplete trace may do
    uncertain: exclude                  # or include: uncertain-label cases in critical checks
    calibration: calibration.json       # the judge's calibration record (path relative to the policy)

A critical case passes when its context holds a complete chain and its answer is right (its earliest
failure is none, ``citation_failure`` excepted unless ``critical_attribution: true``, which traces
that cite nothing fail: their attribution is not assessable). The policy's
content hash is reported with the decision so the release record says which policy was applied.
A policy that gates a judge metric (``citation_support``, ``claim_recall``) must name the judge's
calibration (written by ``hoprag judge calibrate --out``), made for the judge the release scores
with (the offline deterministic one); ``--allow-uncalibrated`` waives that, and says so. Every check
of a judge metric records the judge's meta: its calibration (kappa, CI, n, record hash, date) or
``uncalibrated``.
Traces from an oracle ablation (a step with ``filters.oracle`` or hits from retriever ``oracle``)
are refused: oracle scores are diagnostics, never release scores.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hoprag.datasets.schema import Case
from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.chain_eval import ChainReport
from hoprag.records import Trace
from hoprag.validation_messages import quote

_SECTIONS = {"version", "k", "critical", "min", "max", "timeouts", "uncertain", "critical_attribution", "description",
             "calibration"}
JUDGE_METRICS = ("citation_support", "claim_recall")
_STOPPING_KEYS = ("unsupported_completion_rate", "timeout_rate")


@dataclass(frozen=True)
class Policy:
    raw: dict[str, Any]
    digest: str
    source: str = "<policy>"

    @property
    def k(self) -> int:
        return int(self.raw.get("k") or 10)


@dataclass(frozen=True)
class Decision:
    passed: bool
    reasons: list[str]
    checks: list[dict[str, Any]] = field(default_factory=list)
    policy_hash: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "reasons": self.reasons, "checks": self.checks, "policy_hash": self.policy_hash}


def load_policy(path: str | Path) -> Policy:
    from hoprag.yaml_input import parse_yaml, read_yaml_text

    path = Path(path)
    if not path.exists():
        raise InputError("policy file not found", source=str(path), fix="pass --policy with a YAML release policy")
    fix = "see examples/release-policy.yaml"
    text = read_yaml_text(path, what="release policy", fix=fix)
    raw = parse_yaml(text, source=str(path), what="release policy", fix=fix) or {}
    return parse_policy(raw, source=str(path), digest="sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16])


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Critical(_Spec):
    templates: list[str] = Field(default_factory=list)
    case_ids: list[str] = Field(default_factory=list)
    question_types: list[str] = Field(default_factory=list)


class _Timeouts(_Spec):
    allowed_fallbacks: list[str] = Field(default_factory=lambda: ["abstain", "partial"])


class PolicySpec(_Spec):
    """The shape a policy must have; every section optional (see the module docstring)."""

    version: int = 1
    description: str = ""
    k: int = Field(default=10, ge=1, le=10_000)
    critical: _Critical | None = None
    critical_attribution: bool = False
    uncertain: Literal["exclude", "include"] = "exclude"
    min: dict[str, Union[int, float]] | None = None
    max: dict[str, Union[int, float]] | None = None
    timeouts: _Timeouts | None = None
    calibration: str | None = None


def parse_policy(raw: Any, *, source: str = "<policy>", digest: str | None = None) -> Policy:
    if not isinstance(raw, dict):
        raise InputError("a policy must be a mapping", source=source, fix="see examples/release-policy.yaml")
    unknown = sorted(str(k) for k in set(raw) - _SECTIONS)
    if unknown:
        raise InputError(f"unknown policy sections {unknown}", source=source, fix=f"valid sections: {', '.join(sorted(_SECTIONS))}")
    for section in ("min", "max"):
        bounds = raw.get(section) or {}
        for key, value in (bounds.items() if isinstance(bounds, dict) else ()):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise InputError(f"{section}.{key} must be a number, got {quote(value)}", source=source,
                                 field=f"{section}.{key}", fix="give a number such as 0.5")
    try:
        PolicySpec.model_validate({k: v for k, v in raw.items() if v is not None})
    except ValidationError as exc:
        from hoprag.validation_messages import validation_error

        raise validation_error(exc, what="policy", source=source, fix="see examples/release-policy.yaml") from None
    allowed = (raw.get("timeouts") or {}).get("allowed_fallbacks", ["abstain", "partial"])
    from hoprag.evaluation.stopping import FALLBACKS

    bad = [f for f in allowed if f not in FALLBACKS]
    if bad:
        raise InputError(f"unknown fallbacks {bad}", source=source, field="timeouts.allowed_fallbacks", fix=f"valid: {', '.join(FALLBACKS)}")
    if raw.get("uncertain", "exclude") not in ("exclude", "include"):
        raise InputError("uncertain must be 'exclude' or 'include'", source=source, field="uncertain")
    if digest is None:
        import json

        digest = "sha256:" + hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return Policy(raw=raw, digest=digest, source=source)


def refuse_oracle(traces: list[Trace]) -> None:
    for trace in traces:
        for step in trace.steps:
            if step.filters.get("oracle") or step.bridge.get("oracle") or any(h.retriever == "oracle" for h in step.hits):
                raise ConfigError(
                    f"trace for case {trace.case_id!r} comes from an oracle ablation; oracle scores never enter a release "
                    "decision. Release the system's own run instead"
                )


def judge_metrics(policy: Policy) -> list[str]:
    """The metrics the policy gates whose value a judge decides."""
    return sorted({m for s in ("min", "max") for m in (policy.raw.get(s) or {}) if m in JUDGE_METRICS})


def judge_calibration(policy: Policy, *, allow_uncalibrated: bool = False) -> dict[str, Any] | None:
    """The calibration meta of the judge behind the policy's judge metrics; refuse when it has none."""
    from hoprag.evaluation.calibration import OfflineGrader
    from hoprag.evaluation.calibration_record import calibration_meta, load_calibration

    gated = judge_metrics(policy)
    ref = policy.raw.get("calibration")
    if ref is None:
        if gated and not allow_uncalibrated:
            raise ConfigError(
                f"{policy.source}: the policy gates judge metrics {gated} but names no calibration of the judge. "
                "Fix: run hoprag judge calibrate CASES --out calibration.json and add 'calibration: calibration.json' "
                "to the policy, or pass --allow-uncalibrated"
            )
        return None
    path = Path(ref)
    if not path.is_absolute() and policy.source != "<policy>":
        path = Path(policy.source).parent / path
    record = load_calibration(path)
    if record["judge"].get("llm") != "offline" or record["judge"].get("model_id") != OfflineGrader().model_id:
        raise ConfigError(
            f"{path}: calibration of judge {record['judge'].get('model_id')!r}, but release scores with the offline "
            "judge. Fix: calibrate it with hoprag judge calibrate CASES --llm offline --out FILE"
        )
    return calibration_meta(record)


def _critical(cases: list[Case], policy: Policy) -> list[Case]:
    spec = policy.raw.get("critical") or {}
    ids, templates, types = set(spec.get("case_ids") or ()), set(spec.get("templates") or ()), set(spec.get("question_types") or ())
    chosen = [
        c for c in cases
        if c.case_id in ids or (c.split_keys.template in templates) or (c.question_type in types)
    ]
    missing = sorted(ids - {c.case_id for c in cases})
    if missing:
        raise InputError(f"critical case ids not in the case file: {missing}", source=policy.source, field="critical.case_ids")
    if policy.raw.get("uncertain", "exclude") == "exclude":
        chosen = [c for c in chosen if not c.uncertain]
    return chosen


def decide(cases: list[Case], report: ChainReport, policy: Policy,
           judge_meta: dict[str, Any] | None = None) -> Decision:
    """Apply ``policy`` to an evaluation ``report``; every failed check becomes a reason.

    ``judge_meta`` (:mod:`hoprag.evaluation.calibration_record`: calibrated or ``uncalibrated``) is
    recorded on the check of every judge metric, so the report says how far its judge is trusted."""
    checks: list[dict[str, Any]] = []
    agg = dict(report.aggregate)
    for key in _STOPPING_KEYS:
        agg[key] = report.stopping.get(key)
    for section, better in (("min", lambda v, t: v >= t), ("max", lambda v, t: v <= t)):
        for metric, threshold in (policy.raw.get(section) or {}).items():
            value = agg.get(metric)
            if metric not in agg:
                raise InputError(
                    f"policy metric {metric!r} is not reported", source=policy.source, field=f"{section}.{metric}",
                    fix=f"use a reported metric, e.g. {', '.join(k for k in list(agg)[:12])}",
                )
            ok = value is not None and better(float(value), float(threshold))
            checks.append({"check": f"{section} {metric}", "value": value, "threshold": threshold, "passed": ok,
                           **({"judge": dict(judge_meta)} if judge_meta is not None and metric in JUDGE_METRICS
                              else {})})
    rows = {r["case_id"]: r for r in report.cases}
    strict_attr = bool(policy.raw.get("critical_attribution", False))
    # attribution demanded of traces that cite nothing is not shown to hold: a failed check, never a pass
    unshown = strict_attr and "citation_failure" in report.not_assessable
    for case in _critical(cases, policy):
        row = rows[case.case_id]
        failure = row["failure"]
        ok = failure is None or (failure == "citation_failure" and not strict_attr)
        value = failure or "passed"
        if ok and unshown:
            ok, value = False, "attribution not assessable (traces carry no citations)"
        checks.append({"check": f"critical {case.case_id}", "value": value, "threshold": "passed", "passed": ok})
    allowed = set((policy.raw.get("timeouts") or {}).get("allowed_fallbacks", ["abstain", "partial"]))
    for row in report.cases:
        if row.get("fallback") in (None, "complete"):
            continue
        if row["fallback"] not in allowed and (row.get("timeout") or row["fallback"] == "unsupported_completion"):
            checks.append({"check": f"fallback {row['case_id']}", "value": row["fallback"], "threshold": sorted(allowed), "passed": False})
    reasons = [f"{c['check']}: {c['value']} (needs {c['threshold']})" for c in checks if not c["passed"]]
    return Decision(passed=not reasons, reasons=reasons, checks=checks, policy_hash=policy.digest)
