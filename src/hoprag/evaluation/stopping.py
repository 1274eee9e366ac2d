"""Latency, stopping and fallback behaviour, read from the observable trace.

Per trace (:func:`trace_profile`):

- ``hop_latency_ms``: summed ``latency_ms`` of the steps at each hop; ``latency_ms``: end to end
  (:func:`hoprag.evaluation.latency.trace_latency_ms`);
- ``candidates``: hits returned, per hop and in total; ``steps``; ``parallel_branches``: the most
  steps issued at one hop;
- ``retries``: steps whose (hop, folded issued query) repeats an earlier step's;
- ``timeout``: the first timed-out step as ``"hop <h> step <id>"``, else ``"stop:<reason>"`` when
  the stop reason names a timeout or budget, else ``None``;
- ``fallback`` (:func:`fallback_outcome`) — what the system did when the context held no complete
  chain: ``complete`` (it did hold one), ``abstain``, ``partial`` (the answer is flagged
  ``partial``, or the stop reason starts with ``partial``: evidence presented with uncertainty), ``single_hop`` (answered from hop-1 calls
  only) or ``unsupported_completion`` (a confident answer from an incomplete multi-hop chain, which
  is always a failure).

Quality at an equal budget (:func:`truncate_to_budget`): a trace cut at ``budget_ms`` keeps only
the steps whose ``cumulative_ms`` is within the budget and the evidence those steps produced (an
evidence entry naming no kept step survives only when the whole trace fits the budget); its answer
is kept only when the whole trace fits, otherwise it counts as abstained.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.evaluation.latency import trace_latency_ms
from hoprag.evaluation.graph import context_facts
from hoprag.pipeline.text import fold
from hoprag.records import Answer, Trace

FALLBACKS = ("complete", "abstain", "partial", "single_hop", "unsupported_completion")
_TIMEOUT_WORDS = ("timeout", "timed_out", "budget", "deadline")


def chain_complete(case: Case, trace: Trace, context_k: int | None = None) -> bool:
    if not case.valid_chains:
        return True
    covered = context_facts(case, trace, context_k)
    return any(set(chain) <= covered for chain in case.valid_chains)


def fallback_outcome(case: Case, trace: Trace, context_k: int | None = None) -> str:
    """One of :data:`FALLBACKS`; see the module doc."""
    if chain_complete(case, trace, context_k):
        return "complete"
    if trace.answer.abstained or not trace.answer.text.strip():
        return "abstain"
    if trace.answer.partial or trace.stop_reason.lower().startswith("partial"):
        return "partial"
    if all(step.hop <= 1 for step in trace.steps):
        return "single_hop"
    return "unsupported_completion"


def timeout_cause(trace: Trace) -> str | None:
    for step in trace.steps:
        if step.timed_out:
            return f"hop {step.hop} step {step.step_id}"
    reason = trace.stop_reason.lower()
    if any(word in reason for word in _TIMEOUT_WORDS):
        return f"stop:{trace.stop_reason}"
    return None


def trace_profile(case: Case, trace: Trace, context_k: int | None = None) -> dict[str, Any]:
    """Latency, candidate, retry, branch, timeout and fallback facts of one trace."""
    hop_latency: dict[int, float] = {}
    candidates: dict[int, int] = {}
    per_hop_steps: dict[int, int] = {}
    seen: set[tuple[int, str]] = set()
    retries = 0
    for step in trace.steps:
        hop_latency[step.hop] = hop_latency.get(step.hop, 0.0) + float(step.latency_ms)
        candidates[step.hop] = candidates.get(step.hop, 0) + len(step.hits)
        per_hop_steps[step.hop] = per_hop_steps.get(step.hop, 0) + 1
        key = (step.hop, " ".join(fold(step.issued_query or step.sub_query).split()))
        if key in seen:
            retries += 1
        seen.add(key)
    return {
        "latency_ms": trace_latency_ms(case, trace),
        "hop_latency_ms": {str(h): round(v, 3) for h, v in sorted(hop_latency.items())},
        "candidates": sum(candidates.values()),
        "candidates_by_hop": {str(h): v for h, v in sorted(candidates.items())},
        "steps": len(trace.steps),
        "parallel_branches": max(per_hop_steps.values(), default=0),
        "retries": retries,
        "errors": sum(1 for s in trace.steps if s.error) + (1 if trace.error else 0),
        "timeout": timeout_cause(trace),
        "stop_reason": trace.stop_reason,
        "fallback": fallback_outcome(case, trace, context_k),
    }


def truncate_to_budget(trace: Trace, budget_ms: float) -> Trace:
    """The part of ``trace`` a system with an end-to-end budget of ``budget_ms`` would have had."""
    total = trace.latency_ms or (trace.steps[-1].cumulative_ms if trace.steps else 0.0)
    if total <= budget_ms:
        return trace
    kept = tuple(s for s in trace.steps if s.cumulative_ms <= budget_ms)
    kept_ids = {s.step_id for s in kept}
    evidence = tuple(e for e in trace.evidence if e.step_id in kept_ids)
    return replace(
        trace,
        steps=kept,
        evidence=evidence,
        answer=Answer(text="", abstained=True),
        stop_reason="budget_exhausted",
        latency_ms=float(budget_ms),
    )


def summarize_profiles(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and means over trace profiles: fallbacks, timeouts, retries, branches, candidates."""
    n = len(profiles)
    fallbacks = {name: sum(1 for p in profiles if p["fallback"] == name) for name in FALLBACKS}
    incomplete = n - fallbacks["complete"]
    hops = sorted({h for p in profiles for h in p["hop_latency_ms"]}, key=int)
    return {
        "traces": n,
        "fallbacks": fallbacks,
        "unsupported_completion_rate": fallbacks["unsupported_completion"] / incomplete if incomplete else 0.0,
        "timeouts": sum(1 for p in profiles if p["timeout"]),
        "timeout_rate": sum(1 for p in profiles if p["timeout"]) / n if n else 0.0,
        "retries": sum(p["retries"] for p in profiles),
        "errors": sum(p["errors"] for p in profiles),
        "max_parallel_branches": max((p["parallel_branches"] for p in profiles), default=0),
        "mean_candidates": sum(p["candidates"] for p in profiles) / n if n else None,
        "mean_hop_latency_ms": {
            h: sum(p["hop_latency_ms"].get(h, 0.0) for p in profiles) / n for h in hops
        },
        "stop_reasons": _count(p["stop_reason"] for p in profiles),
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))
