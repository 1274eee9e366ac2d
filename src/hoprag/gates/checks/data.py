"""Data QA on the ingest stage: schema, null rates, field types and type flips, PII, duplicates.

Stage output: an :class:`IngestOutput` (documents plus, when the corpus was JSON, the raw records
so a field whose *type* changed upstream is seen before :class:`Document` coerces it), or a plain
list of documents. Context keys: ``required_fields`` (default ``("text", "source")``),
``baseline_profile`` (the field-type profile frozen with the baseline, for ``type_flips``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hoprag.gates.checks.dedup import find_duplicates
from hoprag.gates.checks.pii import PII_KINDS, pii_counts, scan_pii
from hoprag.gates.hooks import hook, metric
from hoprag.metrics import Metric
from hoprag.records import Document

__all__ = ["IngestOutput", "SCHEMA_FIELDS", "field_profile", "schema_metrics", "type_flips"]

SCHEMA_FIELDS = ("text", "title", "source", "timestamp", "doc_type")
DEFAULT_REQUIRED = ("text", "source")
MAX_LOCATIONS = 50


@dataclass(frozen=True)
class IngestOutput:
    documents: Sequence[Document]
    raw: Sequence[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value == [] or value == {}


def field_profile(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """``{field: {type: count}}`` over every field seen (``missing`` counts records without it)."""
    rows = list(records)
    names = sorted({k for r in rows for k in r})
    profile: dict[str, dict[str, int]] = {}
    for name in names:
        counts = Counter(_type_name(r[name]) if name in r else "missing" for r in rows)
        profile[name] = dict(sorted(counts.items()))
    return profile


def _dominant(types: dict[str, int]) -> str | None:
    present = {t: n for t, n in types.items() if t not in ("missing", "null")}
    return max(sorted(present), key=lambda t: present[t]) if present else None


def type_flips(profile: dict[str, dict[str, int]], baseline: dict[str, dict[str, int]]) -> list[str]:
    """Fields whose dominant non-null type differs from the baseline's."""
    flips = []
    for name, types in baseline.items():
        before, now = _dominant(types), _dominant(profile.get(name, {}))
        if before is not None and now is not None and before != now:
            flips.append(name)
    return sorted(flips)


def schema_metrics(documents: Sequence[Document], raw: Sequence[dict[str, Any]] | None,
                   required: Sequence[str], ctx: dict[str, Any]) -> list[Metric]:
    n = len(documents)
    rows = list(raw) if raw is not None else [d.to_dict() for d in documents]
    out = [metric(ctx, "documents", n)]
    violating: list[str] = []
    for doc, row in zip(documents, rows):
        if any(_is_null(row.get(f, getattr(doc, f, None))) for f in required):
            violating.append(doc.id)
    out.append(metric(ctx, "schema_violations", len(violating), required=list(required),
                      doc_ids=violating[:MAX_LOCATIONS]))
    out.append(metric(ctx, "schema_violation_frac", len(violating) / n if n else 0.0))
    for name in SCHEMA_FIELDS:
        nulls = sum(_is_null(row.get(name)) for row in rows)
        out.append(metric(ctx, f"null_rate.{name}", nulls / n if n else 0.0))
    profile = field_profile(rows)
    mixed = sorted(f for f, types in profile.items() if len([t for t in types if t not in ("missing", "null")]) > 1)
    out.append(metric(ctx, "mixed_type_fields", len(mixed), fields=mixed, profile=profile))
    baseline = ctx.get("baseline_profile")
    if baseline:
        flips = type_flips(profile, baseline)
        out.append(metric(ctx, "type_flips", len(flips), fields=flips))
    return out


@hook("ingest")
def schema_check(out: Any, ctx: dict[str, Any]) -> list[Metric]:
    docs, raw = (out.documents, out.raw) if isinstance(out, IngestOutput) else (list(out), None)
    return schema_metrics(list(docs), raw, tuple(ctx.get("required_fields") or DEFAULT_REQUIRED), ctx)


@hook("ingest")
def pii_check(out: Any, ctx: dict[str, Any]) -> list[Metric]:
    docs = list(out.documents if isinstance(out, IngestOutput) else out)
    findings = scan_pii(docs)
    counts = pii_counts(findings)
    locations = [f.to_dict() for f in findings[:MAX_LOCATIONS]]
    result = [metric(ctx, "pii_hits", len(findings), locations=locations, truncated=len(findings) > MAX_LOCATIONS),
              metric(ctx, "pii_docs", len({f.doc_id for f in findings}))]
    result += [metric(ctx, f"pii.{kind}", counts.get(kind, 0)) for kind in PII_KINDS]
    return result


@hook("ingest")
def dedup_check(out: Any, ctx: dict[str, Any]) -> list[Metric]:
    docs = list(out.documents if isinstance(out, IngestOutput) else out)
    report = find_duplicates(docs, threshold=float(ctx.get("near_duplicate_threshold", 0.8)))
    n = len(docs)
    return [
        metric(ctx, "exact_duplicates", len(report.exact), pairs=[list(p) for p in report.exact[:MAX_LOCATIONS]]),
        metric(ctx, "near_duplicates", len(report.near), pairs=[list(p) for p in report.near[:MAX_LOCATIONS]]),
        metric(ctx, "duplicate_frac", report.duplicate_frac, documents=n),
    ]
