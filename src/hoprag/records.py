"""The records every layer shares: frozen dataclasses with a JSON round-trip.

Documents and chunks flow into the index, hits and evidence flow out of retrieval, and a Trace is
what one question leaves behind: the unit that evaluation consumes. ``Case`` (the gold labels) is
validated input and lives in :mod:`hoprag.datasets.schema`; it is never shown to a system under test.
JSONL reading lives in :mod:`hoprag.jsonl`, writing in :mod:`hoprag.io.outputs`; a traces file is
read and written by :mod:`hoprag.io.traces`. Every number ``from_dict`` reads goes
through :mod:`hoprag.finite_numbers` (finite, whole numbers within 64 bits).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

from hoprag.finite_numbers import bounded_int, finite_float

# the leaves ``dataclasses.asdict`` would deep-copy to themselves
_ATOMS = frozenset({str, int, float, bool, type(None), bytes})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def asdict(record: Any) -> Any:
    """``dataclasses.asdict(record)``, value for value and container type for container type, without
    deep-copying each string and number: a trace holds thousands, and copying them was most of the
    CPU of writing one (the service stores every answer)."""
    kind = type(record)
    if kind in _ATOMS:
        return record
    if hasattr(kind, "__dataclass_fields__"):
        names = _FIELD_NAMES.get(kind)
        if names is None:
            names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
        return {name: asdict(getattr(record, name)) for name in names}
    if kind is tuple or kind is list:
        return kind(asdict(v) for v in record)
    if kind is dict:
        return {asdict(k): asdict(v) for k, v in record.items()}
    if isinstance(record, tuple) and hasattr(record, "_fields"):  # a named tuple, as dataclasses does
        return kind(*[asdict(v) for v in record])
    if isinstance(record, (list, tuple)):
        return kind(asdict(v) for v in record)
    if isinstance(record, dict):
        return kind((asdict(k), asdict(v)) for k, v in record.items())
    return copy.deepcopy(record)


@dataclass(frozen=True)
class Document:
    """One source document: a paragraph of a benchmark, a policy, a contract."""

    id: str
    title: str
    text: str
    source: str = ""
    version: str = ""
    timestamp: str = ""
    doc_type: str = ""
    acl: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        return cls(
            id=str(data["id"]),
            title=str(data.get("title") or ""),
            text=str(data["text"]),
            source=str(data.get("source") or ""),
            version=str(data.get("version") or ""),
            timestamp=str(data.get("timestamp") or ""),
            doc_type=str(data.get("doc_type") or ""),
            acl=str(data.get("acl") or ""),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True)
class Chunk:
    """A retrievable piece of a document; ``text == document.text[start:end]``."""

    id: str
    doc_id: str
    text: str
    start: int
    end: int
    index: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        return cls(
            id=str(data["id"]),
            doc_id=str(data["doc_id"]),
            text=str(data["text"]),
            start=bounded_int(data["start"], "start"),
            end=bounded_int(data["end"], "end"),
            index=bounded_int(data["index"], "index"),
        )


@dataclass(frozen=True)
class Hit:
    """One ranked result of one retrieval call.

    ``start``/``end`` are the chunk's character offsets in its document (``None`` when a foreign
    pipeline only knows documents); they let evaluation match hits to labelled fact spans.
    """

    chunk_id: str
    doc_id: str
    score: float
    rank: int
    retriever: str
    start: int | None = None
    end: int | None = None
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hit:
        return cls(
            chunk_id=str(data.get("chunk_id") or data["doc_id"]),
            doc_id=str(data["doc_id"]),
            score=finite_float(data.get("score", 0.0), "score"),
            rank=bounded_int(data.get("rank", 0), "rank"),
            retriever=str(data.get("retriever") or ""),
            start=_opt_int(data.get("start"), "start"),
            end=_opt_int(data.get("end"), "end"),
            title=str(data.get("title") or ""),
        )


@dataclass(frozen=True)
class Evidence:
    """A piece of retrieved text held in the evidence buffer, with its provenance."""

    hit: Hit
    text: str
    title: str
    hop: int
    step_id: str
    sub_query: str

    @property
    def chunk_id(self) -> str:
        return self.hit.chunk_id

    @property
    def doc_id(self) -> str:
        return self.hit.doc_id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            hit=Hit.from_dict(data["hit"]),
            text=str(data.get("text") or ""),
            title=str(data.get("title") or ""),
            hop=bounded_int(data.get("hop", 1), "hop"),
            step_id=str(data.get("step_id") or ""),
            sub_query=str(data.get("sub_query") or ""),
        )


@dataclass(frozen=True)
class HopStep:
    """One retrieval call. Parallel branches share a ``hop``; ``depends_on`` names earlier steps.

    ``selected`` holds the chunk ids kept from ``hits``; ``duplicates`` those of them the evidence
    buffer dropped as exact or near-duplicates of held evidence; ``bridge`` the structured
    intermediate state this step produced or used (e.g. ``{"value": "Neil Peart"}``).
    """

    step_id: str
    hop: int
    sub_query: str
    issued_query: str
    hits: tuple[Hit, ...] = ()
    selected: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    filters: dict[str, Any] = field(default_factory=dict)
    bridge: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    timed_out: bool = False
    latency_ms: float = 0.0
    cumulative_ms: float = 0.0
    duplicates: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HopStep:
        return cls(
            step_id=str(data["step_id"]),
            hop=bounded_int(data.get("hop", 1), "hop"),
            sub_query=str(data.get("sub_query") or ""),
            issued_query=str(data.get("issued_query") or data.get("sub_query") or ""),
            hits=tuple(Hit.from_dict(h) for h in data.get("hits") or ()),
            selected=tuple(str(s) for s in data.get("selected") or ()),
            depends_on=tuple(str(s) for s in data.get("depends_on") or ()),
            filters=dict(data.get("filters") or {}),
            bridge=dict(data.get("bridge") or {}),
            error=data.get("error"),
            timed_out=bool(data.get("timed_out", False)),
            latency_ms=finite_float(data.get("latency_ms", 0.0), "latency_ms"),
            cumulative_ms=finite_float(data.get("cumulative_ms", 0.0), "cumulative_ms"),
            duplicates=tuple(str(s) for s in data.get("duplicates") or ()),
        )


@dataclass(frozen=True)
class Citation:
    """A claim's pointer to one piece of evidence, by chunk and the hop that found it."""

    chunk_id: str
    doc_id: str
    hop: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Citation:
        return cls(chunk_id=str(data["chunk_id"]), doc_id=str(data["doc_id"]), hop=bounded_int(data.get("hop", 1), "hop"))


@dataclass(frozen=True)
class Claim:
    """One statement of an answer and the evidence it cites."""

    text: str
    citations: tuple[Citation, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Claim:
        return cls(
            text=str(data.get("text") or ""),
            citations=tuple(Citation.from_dict(c) for c in data.get("citations") or ()),
        )


@dataclass(frozen=True)
class Answer:
    """The system's answer; ``confidence`` is a mechanical composite, never a model's self-rating.

    ``partial`` marks an answer given from an incomplete chain (a budget ran out); ``rejected_citations``
    records citations the synthesiser made to evidence that was not in the buffer.
    """

    text: str
    claims: tuple[Claim, ...] = ()
    abstained: bool = False
    confidence: float = 0.0
    partial: bool = False
    rejected_citations: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Answer:
        return cls(
            text=str(data.get("text") or ""),
            claims=tuple(Claim.from_dict(c) for c in data.get("claims") or ()),
            abstained=bool(data.get("abstained", False)),
            confidence=finite_float(data.get("confidence", 0.0), "confidence"),
            partial=bool(data.get("partial", False)),
            rejected_citations=tuple(str(c) for c in data.get("rejected_citations") or ()),
        )


@dataclass(frozen=True)
class Usage:
    """Tokens and cost spent answering one question (zero for the offline engine)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(
            prompt_tokens=bounded_int(data.get("prompt_tokens", 0), "prompt_tokens"),
            completion_tokens=bounded_int(data.get("completion_tokens", 0), "completion_tokens"),
            cost=finite_float(data.get("cost", 0.0), "cost"),
        )


@dataclass(frozen=True)
class Trace:
    """Everything one question left behind: steps, final ranked evidence, answer, stop reason.

    ``evidence`` is the buffer in the order it was given to synthesis (best first); evaluation's
    "top-k selected evidence" is its first k entries. ``warnings`` records degraded steps that did
    not stop the run, e.g. a model call that failed and fell back to the offline role, and
    ``fallbacks`` counts those fallbacks per role (``{"planner": 1, "judge": 2}``); ``timings``
    splits the wall time by phase (``planning_ms``, ``retrieval_ms``, ``ranking_ms``, ``synthesis_ms``).
    ``redacted`` says PII in the trace's text was replaced by placeholders (:mod:`hoprag.security.redaction`);
    ``redactions`` counts the distinct values replaced per kind (``{"email": 2}``), and
    ``redaction_shifts`` maps an evidence entry's redacted text back to its source offsets
    (chunk id → ``(position, shift)`` change points; see :func:`hoprag.security.redaction.source_offset`).
    """

    run_id: str
    case_id: str
    question: str
    steps: tuple[HopStep, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    answer: Answer = field(default_factory=lambda: Answer(text=""))
    stop_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    config_hash: str = ""
    engine: str = ""
    latency_ms: float = 0.0
    error: str | None = None
    plan: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    fallbacks: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    redacted: bool = False
    redactions: dict[str, int] = field(default_factory=dict)
    redaction_shifts: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        return cls(
            run_id=str(data.get("run_id") or ""),
            case_id=str(data["case_id"]),
            question=str(data.get("question") or ""),
            steps=tuple(HopStep.from_dict(s) for s in data.get("steps") or ()),
            evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence") or ()),
            answer=Answer.from_dict(data.get("answer") or {}),
            stop_reason=str(data.get("stop_reason") or ""),
            usage=Usage.from_dict(data.get("usage") or {}),
            config_hash=str(data.get("config_hash") or ""),
            engine=str(data.get("engine") or ""),
            latency_ms=finite_float(data.get("latency_ms", 0.0), "latency_ms"),
            error=data.get("error"),
            plan=dict(data.get("plan") or {}),
            warnings=tuple(str(w) for w in data.get("warnings") or ()),
            fallbacks={str(k): bounded_int(v, f"fallbacks.{k}") for k, v in (data.get("fallbacks") or {}).items()},
            timings={str(k): finite_float(v, f"timings.{k}") for k, v in (data.get("timings") or {}).items()},
            redacted=bool(data.get("redacted", False)),
            redactions={str(k): bounded_int(v, f"redactions.{k}") for k, v in (data.get("redactions") or {}).items()},
            redaction_shifts={str(k): tuple((bounded_int(p, "redaction_shifts"), bounded_int(s, "redaction_shifts")) for p, s in v)
                              for k, v in (data.get("redaction_shifts") or {}).items()},
        )


def _opt_int(value: Any, field: str) -> int | None:
    return None if value is None else bounded_int(value, field)
