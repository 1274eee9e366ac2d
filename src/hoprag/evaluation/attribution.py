"""Claim-level attribution: is each cited claim supported by the text it cites?

Deterministic by default (:class:`TokenContainmentJudge`)::

    T(x)        = set of folded content tokens of x (stopwords removed)
    support(c)  = |T(claim) & T(cited text)| / |T(claim)|      (1 when T(claim) is empty)
    supported   = support(c) >= threshold (default 0.8)

The *cited text* of a citation is the text of the logged evidence entry (or step hit's evidence)
with the cited ``chunk_id``; when a foreign trace logged no text, the text of the case's fact spans
that the cited item overlaps stands in. A citation of a chunk the trace never logged is
*unlogged*: it is unsupported, deterministically, and never sent to a judge (a semantic judge is
never asked whether an unlogged document was retrieved). A citation with no text to read is a
*missing judgment*: reported and counted, never imputed.

``citation_support`` = supported claims / judged claims (a claim with no citation is judged
unsupported); ``None`` (missing judgment) when the answer has no claims or no claim could be judged.

Explanatory answers are scored against ``reference_claims``::

    claim_recall = |{r : containment(T(r), T(answer text + claim texts)) >= threshold}| / |refs|

An optional model judge implements :class:`Judge`; its ``model_id`` and ``prompt_version`` are
recorded with every score (no model backend ships yet, so the default is deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hoprag.datasets.schema import Case
from hoprag.evaluation.graph import item_relevant
from hoprag.evaluation.matching import locate
from hoprag.evaluation.memo import memoized
from hoprag.ingest.text import contained_in, containment, content_tokens
from hoprag.records import Claim, Evidence, Hit, Trace


@dataclass(frozen=True)
class Judgment:
    """One judge's verdict on one (claim, cited text) pair, with who judged and how."""

    supported: bool | None
    score: float
    model_id: str
    prompt_version: str
    reason: str = ""


@runtime_checkable
class Judge(Protocol):
    """Anything that says whether ``evidence_text`` supports ``claim``; must name itself."""

    model_id: str
    prompt_version: str

    def judge(self, claim: str, evidence_text: str) -> Judgment: ...


@dataclass(frozen=True)
class TokenContainmentJudge:
    """The deterministic default judge: token containment of the claim in the cited text."""

    threshold: float = 0.8
    model_id: str = "deterministic:token-containment"
    prompt_version: str = "v1"

    def judge(self, claim: str, evidence_text: str) -> Judgment:
        score = containment(claim, evidence_text)
        ok = score >= self.threshold
        return Judgment(ok, round(score, 4), self.model_id, self.prompt_version, "contained" if ok else "not contained")


@dataclass(frozen=True)
class ClaimResult:
    text: str
    supported: bool | None
    score: float
    reason: str


@dataclass(frozen=True)
class Attribution:
    """Per-answer attribution: per-claim results, the share supported, and cited-chain coverage."""

    claims: tuple[ClaimResult, ...]
    citation_support: float | None
    unlogged_citations: int
    missing_judgments: int
    cited_chunks: tuple[str, ...] = ()
    judge: dict[str, str] = field(default_factory=dict)


def _logged(trace: Trace) -> dict[str, Evidence | Hit]:
    logged: dict[str, Evidence | Hit] = {}
    for step in trace.steps:
        for hit in step.hits:
            logged.setdefault(hit.chunk_id, hit)
    for item in trace.evidence:
        logged[item.chunk_id] = item  # evidence carries text; prefer it
    return logged


def _cited_text(case: Case, item: Evidence | Hit) -> str:
    if isinstance(item, Evidence) and item.text.strip():
        return item.text
    loc = locate(item)
    texts = []
    for fact_id, fact in case.facts.items():
        if item_relevant(case, loc, [fact_id]):
            texts.extend(span.text for span in fact.spans)
    return " ".join(texts)


def attribute(case: Case, trace: Trace, judge: Judge | None = None) -> Attribution:
    """Judge every claim of ``trace.answer`` against the text it cites; see the module doc.

    Within an evaluation the result is kept per (case, trace, judge): the failure diagnosis and the
    citation-support measure judge each answer once."""
    judge = judge or TokenContainmentJudge()
    return memoized("attribution", (case, trace, judge), lambda: _attribute(case, trace, judge))


def _attribute(case: Case, trace: Trace, judge: Judge) -> Attribution:
    logged = _logged(trace)
    results: list[ClaimResult] = []
    unlogged = missing = 0
    cited: list[str] = []
    for claim in trace.answer.claims:
        results.append(_judge_claim(case, claim, logged, judge, cited))
        if results[-1].reason == "unlogged citation":
            unlogged += 1
        if results[-1].supported is None:
            missing += 1
    judged = [r for r in results if r.supported is not None]
    support = sum(1 for r in judged if r.supported) / len(judged) if judged else None
    return Attribution(
        claims=tuple(results),
        citation_support=support,
        unlogged_citations=unlogged,
        missing_judgments=missing,
        cited_chunks=tuple(dict.fromkeys(cited)),
        judge={"model_id": judge.model_id, "prompt_version": judge.prompt_version},
    )


def _judge_claim(case: Case, claim: Claim, logged: dict[str, Evidence | Hit], judge: Judge, cited: list[str]) -> ClaimResult:
    if not claim.citations:
        return ClaimResult(claim.text, False, 0.0, "no citation")
    texts: list[str] = []
    for citation in claim.citations:
        item = logged.get(citation.chunk_id)
        if item is None:
            return ClaimResult(claim.text, False, 0.0, "unlogged citation")
        cited.append(citation.chunk_id)
        texts.append(_cited_text(case, item))
    text = " ".join(t for t in texts if t)
    if not text.strip():
        return ClaimResult(claim.text, None, 0.0, "no cited text to judge")
    verdict = judge.judge(claim.text, text)
    return ClaimResult(claim.text, verdict.supported, verdict.score, verdict.reason)


def cited_items(trace: Trace, attribution: Attribution) -> list[Evidence | Hit]:
    """The logged items the answer cites (for cited-chain coverage)."""
    logged = _logged(trace)
    return [logged[c] for c in attribution.cited_chunks if c in logged]


def claim_recall(case: Case, trace: Trace, k: int | None = None, *, threshold: float = 0.6) -> float | None:
    """Explanatory cases: share of ``reference_claims`` the answer makes; None when not applicable."""
    if case.answer_type != "explanatory" or not case.reference_claims:
        return None
    if trace.answer.abstained:
        return 0.0

    def compute() -> float:  # once per case, trace and threshold within an evaluation (the diagnosis asks too)
        said = set(content_tokens(" ".join([trace.answer.text, *(c.text for c in trace.answer.claims)])))
        made = sum(1 for ref in case.reference_claims if contained_in(ref, said) >= threshold)
        return made / len(case.reference_claims)

    return memoized(f"claim_recall:{threshold!r}", (case, trace), compute)


def citation_support(case: Case, trace: Trace, k: int | None = None) -> float | None:
    """Share of the answer's claims supported by their citations (deterministic judge)."""
    if trace.answer.abstained:
        return None
    return attribute(case, trace).citation_support
