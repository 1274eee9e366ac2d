"""Request and response bodies of the service API (pydantic: validated, documented in /openapi.json)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from hoprag.gates.checks.feedback import TAG_STAGES
from hoprag.pipeline.question_check import MAX_QUESTION_CHARS

__all__ = ["AskRequest", "AskResponse", "ClickRequest", "ErrorBody", "FeedbackRequest", "IssueTag"]

# the fixed taxonomy of the stage gates, one name per tag (a tag added there is valid here)
IssueTag = Literal[tuple(TAG_STAGES)]  # type: ignore[valid-type]

#: the engines' own limit (hoprag.pipeline.question_check), declared in /openapi.json
MAX_QUESTION = MAX_QUESTION_CHARS


class ErrorBody(BaseModel):
    """Every error: what was wrong and how to fix it (never a stack trace)."""

    error: str
    fix: str


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(..., min_length=1, max_length=MAX_QUESTION, description="the question")
    k: Optional[int] = Field(None, ge=1, le=50, description="hits per retrieval call (engine default when absent)")
    engine: Literal["multihop", "single"] = Field("multihop", description="multi-hop engine or single-shot baseline")
    mode: Literal["bm25", "dense", "hybrid"] = Field("bm25", description="retrieval mode (dense/hybrid need a dense index)")
    llm: Literal["default", "offline"] = Field(
        "default", description="default: the model the server was started with (--llm); offline: no model")
    # strict: a write is asked for with true, never with "yes", 1 or "on" (pydantic reads those as true)
    store: bool = Field(True, strict=True,
                        description="store the (redacted) trace so feedback can follow; needs a write token")


class CitationOut(BaseModel):
    chunk_id: str
    doc_id: str
    hop: int
    title: str = ""
    start: Optional[int] = None
    end: Optional[int] = None
    sentence_start: Optional[int] = Field(None, description="document offset of the cited sentence (the claim)")
    sentence_end: Optional[int] = None
    marker: int = Field(..., description="1-based number shown inline in the answer")


class ClaimOut(BaseModel):
    text: str
    citations: list[CitationOut]


class AskResponse(BaseModel):
    trace_id: str
    stored: bool
    question: str
    answer: str
    abstained: bool
    partial: bool
    confidence: float
    stop_reason: str
    claims: list[ClaimOut]
    citations: list[CitationOut]
    steps: list[dict[str, Any]] = Field(..., description="the evidence trail: one entry per retrieval call")
    evidence: list[dict[str, Any]] = Field(..., description="the ranked evidence handed to synthesis")
    warnings: list[str]
    latency_ms: float
    engine: str
    timings: dict[str, float] = Field(default_factory=dict, description="wall time by phase (planning_ms, retrieval_ms, "
                                      "ranking_ms, synthesis_ms) and by hop (hop2.start_ms, hop2.retrieval_ms, "
                                      "hop2.graph_ms, hop2.judge_ms, hop2.end_ms)")
    clearance: str


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace_id: str = Field(..., min_length=1, max_length=64)
    thumbs: Optional[Literal["up", "down"]] = None
    tags: list[IssueTag] = Field(default_factory=list, max_length=len(TAG_STAGES),
                                 description="issue tags; each is owned by a stage: " +
                                 ", ".join(f"{t} → {s}" for t, s in TAG_STAGES.items()))
    comment: Optional[str] = Field(None, max_length=2000)


class FeedbackResponse(BaseModel):
    trace_id: str
    stored: int
    run_id: str
    stages: list[str]


class ClickRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace_id: str = Field(..., min_length=1, max_length=64)
    citation: str = Field(..., min_length=1, max_length=400, description="the chunk id (or doc id) opened")


class ClickResponse(BaseModel):
    trace_id: str
    recorded: bool


class DocumentOut(BaseModel):
    id: str
    title: str
    acl: str
    doc_type: str
    version: str
    text: str
    span: Optional[list[int]] = Field(None, description="[start, end] of the highlighted span")
    before: str = Field("", description="context before the span")
    highlight: str = Field("", description="the cited span")
    after: str = Field("", description="context after the span")
