"""What label verification reports: one :class:`LabelProblem` per problem, a :class:`LabelReport`
per set of cases (the checks themselves are in :mod:`hoprag.datasets.labels`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SPAN_MATCHES = ("exact", "whitespace")
ERROR_KINDS = (
    "invalid_case",
    "duplicate_case_id",
    "undefined_fact",
    "empty_chain",
    "dependency_cycle",
    "invalid_span",
    "span_out_of_range",
    "span_mismatch",
)
WARNING_KINDS = ("missing_source", "version_mismatch", "title_mismatch", "missing_distractor", "no_chain")


@dataclass(frozen=True)
class LabelProblem:
    """One problem with one case's labels; ``severity`` is ``"error"`` or ``"warning"``."""

    case_id: str
    kind: str
    message: str
    fix: str
    fact_id: str | None = None
    field: str | None = None
    expected: str | None = None
    found: str | None = None
    source: str | None = None
    line: int | None = None

    @property
    def severity(self) -> str:
        return "error" if self.kind in ERROR_KINDS else "warning"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "severity": self.severity}

    def describe(self, *, with_case: bool = True) -> str:
        """One line: case, fact, field, what is wrong, expected and found text, the fix."""
        parts = [self.case_id] if with_case else []
        if self.line is not None and self.kind in ("invalid_case", "duplicate_case_id"):
            parts.append(f"(line {self.line})")
        field = self.field
        if self.fact_id:
            parts.append(f"fact {self.fact_id}")
            prefix = f"facts.{self.fact_id}."
            field = field[len(prefix):] if field and field.startswith(prefix) else field
        if field:
            parts.append(field)
        text = " ".join(parts) + (": " if parts else "") + f"{self.kind}: {self.message}"
        if self.expected is not None:
            text += f" (expected {self.expected!r}, found {self.found!r})"
        return text + f" → {self.fix}"


@dataclass(frozen=True)
class LabelReport:
    """Every label problem of a set of cases, and what was checked."""

    problems: tuple[LabelProblem, ...]
    cases: int
    facts: int
    spans_checked: int
    documents: int | None
    span_match: str = "exact"
    case_ids: tuple[str, ...] = field(default=(), repr=False)

    @property
    def errors(self) -> list[LabelProblem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[LabelProblem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def excluded_cases(self) -> list[str]:
        """Cases with at least one error, in input order: they must not be scored."""
        bad = {p.case_id for p in self.errors}
        ordered = [c for c in self.case_ids if c in bad]
        return ordered + sorted(bad - set(ordered))

    @property
    def flagged_cases(self) -> list[str]:
        flagged = {p.case_id for p in self.problems}
        ordered = [c for c in self.case_ids if c in flagged]
        return ordered + sorted(flagged - set(ordered))

    def by_case(self) -> dict[str, list[LabelProblem]]:
        out: dict[str, list[LabelProblem]] = {cid: [] for cid in self.flagged_cases}
        for problem in self.problems:
            out[problem.case_id].append(problem)
        return out

    def missing_source_facts(self) -> list[dict[str, str | None]]:
        return [{"case_id": p.case_id, "fact_id": p.fact_id, "source_id": p.found}
                for p in self.problems if p.kind == "missing_source"]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for problem in self.problems:
            out[problem.kind] = out.get(problem.kind, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "facts": self.facts,
            "spans_checked": self.spans_checked,
            "documents": self.documents,
            "span_match": self.span_match,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "counts": self.counts(),
            "excluded_cases": self.excluded_cases,
            "flagged_cases": self.flagged_cases,
            "missing_source_facts": self.missing_source_facts(),
            "by_case": {cid: [p.to_dict() for p in ps] for cid, ps in self.by_case().items()},
        }
