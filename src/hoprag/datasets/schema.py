"""The evidence-chain ``Case``: gold labels for evaluation, never shown to a system under test.

A case holds source-backed *facts* (exact spans in a document), dependency *edges* between them
(fact B is found or read with a bridge value from fact A), and every *valid chain* (a minimal
sufficient fact set). The native JSONL form is the one of ``data/enterprise/cases.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hoprag.errors import InputError
from hoprag.finite_numbers import INT_MAX, INT_MIN, first_refused
from hoprag.gc_pause import collector_paused
from hoprag.jsonl import read_jsonl_dicts

DISTRACTOR_ERROR_TYPES = (
    "same_entity_wrong_date",
    "same_family_wrong_item",
    "obsolete_source",
    "bridge_name_collision",
    "partially_valid_chain",
    "unlabelled",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Span(_Model):
    """A character span ``[start, end)`` of the source document; ``text == doc.text[start:end]``."""

    start: int = Field(ge=0, le=INT_MAX)
    end: int = Field(ge=0, le=INT_MAX)
    text: str

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before start {self.start}")
        return self


class ValidTime(_Model):
    valid_from: str | None = Field(default=None, alias="from")
    valid_to: str | None = Field(default=None, alias="to")


class Fact(_Model):
    """One source-backed fact. ``grade`` 2 = answer-bearing, 1 = bridge a later fact depends on."""

    source_id: str
    spans: list[Span] = Field(default_factory=list)
    source_version: str | None = None
    valid_time: ValidTime | None = None
    entities: list[str] = Field(default_factory=list)
    grade: int = Field(default=1, ge=INT_MIN, le=INT_MAX)
    title: str | None = None


class Edge(_Model):
    """``to`` can be found or read only with a value from ``from`` (the bridge)."""

    from_fact: str = Field(alias="from")
    to_fact: str = Field(alias="to")
    bridge_field: str | None = None
    bridge_value: str | None = None


class Distractor(_Model):
    source_id: str
    error_type: str = "unlabelled"


class SplitKeys(_Model):
    source_family: str | None = None
    entities: list[str] = Field(default_factory=list)
    template: str | None = None
    seed: str | None = None


class Adjudication(_Model):
    model_config = ConfigDict(extra="allow")
    reviewer: str
    decision: str
    reason: str = ""


class Case(_Model):
    """One evaluation case in hoprag's native evidence-chain format."""

    case_id: str
    query: str
    answers: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)
    answer_type: Literal["closed", "explanatory"] = "closed"
    reference_claims: list[str] = Field(default_factory=list)
    facts: dict[str, Fact] = Field(default_factory=dict)
    required_facts: list[str] = Field(default_factory=list)
    valid_chains: list[list[str]] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    distractors: list[Distractor] = Field(default_factory=list)
    split_keys: SplitKeys = Field(default_factory=SplitKeys)
    corpus_snapshot: str | None = None
    acl_class: str | None = None
    adjudication: list[Adjudication] = Field(default_factory=list)
    uncertain: bool = False
    # Importer extras: where the case came from and its benchmark type (bridge, comparison, ...).
    question_type: str | None = None
    dataset: str | None = None
    warnings: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        if not self.query.strip():
            raise ValueError("query is empty")
        extras = [a.model_extra for a in self.adjudication if a.model_extra]
        found = first_refused({"metadata": self.metadata, "adjudication": extras}) if self.metadata or extras else None
        if found:  # hoprag.finite_numbers: no NaN, no Infinity, nothing past a float
            raise ValueError(f"{found[0]}: {found[1]}")
        if not self.valid_chains and self.required_facts:
            self.valid_chains = [list(self.required_facts)]
        if not self.required_facts and self.valid_chains:
            self.required_facts = list(self.valid_chains[0])
        known = set(self.facts)
        for name, ids in [("required_facts", self.required_facts)] + [
            (f"valid_chains[{i}]", chain) for i, chain in enumerate(self.valid_chains)
        ]:
            unknown = [f for f in ids if f not in known]
            if unknown:
                raise ValueError(f"{name} names facts not in 'facts': {unknown}")
        for i, edge in enumerate(self.edges):
            for end in (edge.from_fact, edge.to_fact):
                if end not in known:
                    raise ValueError(f"edges[{i}] names fact {end!r} that is not in 'facts'")
        return self

    # --- graph helpers (pure; used by evaluation) ---------------------------------------------

    def fact_layers(self) -> dict[str, int]:
        """Hop number of each fact as its depth in the dependency graph (1 = no incoming edge).

        A depth-first walk with its own stack (a chain of thousands of facts is deeper than Python's
        call stack); a cycle in the labels counts its back edge as absent.
        """
        parents: dict[str, set[str]] = {f: set() for f in self.facts}
        for edge in self.edges:
            parents[edge.to_fact].add(edge.from_fact)
        layers: dict[str, int] = {}
        for root in self.facts:
            if root in layers:
                continue
            on_path = {root}
            # frames: [fact, its parents still to visit, deepest parent layer so far]
            stack: list[list[Any]] = [[root, iter(sorted(parents[root])), 0]]
            while stack:
                frame = stack[-1]
                for parent in frame[1]:
                    if parent in layers:
                        frame[2] = max(frame[2], layers[parent])
                    elif parent in on_path:  # the back edge of a cycle
                        frame[2] = max(frame[2], 1)
                    else:
                        on_path.add(parent)
                        stack.append([parent, iter(sorted(parents[parent])), 0])
                        break
                else:
                    stack.pop()
                    fact = frame[0]
                    layers[fact] = 1 + frame[2]
                    on_path.discard(fact)
                    if stack:
                        stack[-1][2] = max(stack[-1][2], layers[fact])
        return layers

    def to_json(self) -> str:
        return json.dumps(self.model_dump(by_alias=True, exclude_none=False), ensure_ascii=False)


def cycle_text(cycle: Sequence[str], *, shown: int = 6) -> str:
    """A cycle for a message: ``a -> b -> c -> a``, or its ends around ``… (N facts) …`` when it is long."""
    if len(cycle) <= shown:
        return " -> ".join(cycle)
    head, tail = cycle[: shown - 2], cycle[-2:]
    return " -> ".join(head) + f" -> … ({len(cycle) - shown} more facts) … -> " + " -> ".join(tail)


def find_cycle(case: Case) -> list[str] | None:
    """A dependency cycle as a fact path ``[a, b, ..., a]``, or ``None`` when the edges form a DAG."""
    children: dict[str, list[str]] = {f: [] for f in case.facts}
    for edge in case.edges:
        children.setdefault(edge.from_fact, []).append(edge.to_fact)
    state: dict[str, int] = {}  # 1 = on the path, 2 = done
    # a depth-first walk with its own stack: a chain of thousands of facts is deeper than Python's
    for start in sorted(children):
        if start in state:
            continue
        state[start] = 1
        path = [start]
        pending = [iter(children.get(start, ()))]
        while pending:
            for child in pending[-1]:
                if state.get(child) == 1:
                    return path[path.index(child) :] + [child]
                if child not in state:
                    state[child] = 1
                    path.append(child)
                    pending.append(iter(children.get(child, ())))
                    break
            else:
                pending.pop()
                state[path.pop()] = 2
    return None


_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def case_from_json_line(line: str) -> Case | None:
    """The case a well-formed JSON line holds, parsed and validated in one call, or ``None``.

    Strict: only a line whose every field has exactly its schema's JSON type is read here, so the
    case equals ``case_from_dict(json.loads(line))``; any other line (a value that needs coercing,
    an invalid case, malformed JSON, a surrogate escape) gives ``None``, and the caller reads it as
    before, so its error is the one it always was.
    """
    if "\\u" in line and _LONE_SURROGATE.search(line):
        return None
    try:
        return Case.model_validate_json(line, strict=True)
    except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
        return None


def case_from_dict(data: dict[str, Any], *, source: str = "<input>", line: int | None = None) -> Case:
    """Validate one case; errors name the file, line and field."""
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        from hoprag.validation_messages import quote, validation_error

        case_id = data.get("case_id") if isinstance(data, dict) else None
        what = f"case {quote(case_id, 80)}" if case_id else "case"
        raise validation_error(exc, what=what, source=source, line=line,
                               fix="see the case format in docs/evaluation.md (Evidence-chain cases)") from None


def load_cases(path: str | Path, *, allow_empty: bool = False) -> list[Case]:
    """Read a cases JSONL file; duplicate case ids are an error, and so is a file without cases."""
    with collector_paused():
        return _load_cases(path, allow_empty=allow_empty)


def _load_cases(path: str | Path, *, allow_empty: bool) -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for number, obj in read_jsonl_dicts(path, "cases file", allow_empty=allow_empty, fast=case_from_json_line):
        case = obj if type(obj) is Case else case_from_dict(obj, source=str(path), line=number)
        if case.case_id in seen:
            raise InputError(
                f"duplicate case_id {case.case_id!r} (first on line {seen[case.case_id]})",
                source=str(path),
                line=number,
                field="case_id",
                fix="give every case a unique case_id",
            )
        seen[case.case_id] = number
        cases.append(case)
    return cases


def write_cases(path: str | Path, cases: Iterable[Case]) -> int:
    """Write ``cases`` as JSONL, atomically through the output guard (:mod:`hoprag.io.outputs`)."""
    from hoprag.io.kinds import CASES_JSONL
    from hoprag.io.outputs import atomic_writer

    count = 0
    with atomic_writer(path, CASES_JSONL) as handle:
        for case in cases:
            handle.write(case.to_json() + "\n")
            count += 1
    return count


def dataset_version(path: str | Path) -> str:
    """Content hash of a cases file: the dataset version stored with every run."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return f"sha256:{digest[:16]}"
