"""Generation eval over traces: faithfulness, factuality, BLEU/ROUGE, latency, tokens and cost.

Stage output: a :class:`GenerationOutput` (traces and the cases they answer). A claim is
*supported* by a text when at least ``support`` (default 0.8) of its content words occur in it:

    faithfulness = mean over answered traces of (claims supported by the evidence they cite / claims)
    factuality   = the same against the gold fact spans of the case (cases with labelled spans only)
    citation_coverage = share of claims that cite at least one piece of evidence

Both are lexical checks, hence advisory: a paraphrase can fail them, a negation can pass them.
An answer with text but no claims is one uncited claim. ``bleu`` is corpus BLEU and ``rouge*``
the mean F1 of answers against the case's reference answers (and aliases).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoprag.datasets.schema import Case
from hoprag.evaluation.answers import answer_em, answer_f1
from hoprag.evaluation.calibration_record import uncalibrated_meta
from hoprag.gates.checks.textmetrics import corpus_bleu, rouge_f1
from hoprag.gates.hooks import hook, metric
from hoprag.metrics import Metric
from hoprag.records import Claim, Trace

__all__ = ["GenerationOutput", "claim_support", "faithfulness", "factuality"]

_WORD = re.compile(r"\w+")
_STOP = frozenset("a an the of in on at to for and or but is are was were be been by with as from that this "
                  "it its which who whom whose what when where how than then there their his her he she they".split())


@dataclass(frozen=True)
class GenerationOutput:
    traces: Sequence[Trace]
    cases: dict[str, Case]


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in _STOP]


def claim_support(claim: str, source: str) -> float:
    """Share of the claim's content words present in ``source`` (1.0 for a claim with none)."""
    words = _content_words(claim)
    if not words:
        return 1.0
    have = set(_content_words(source))
    return sum(w in have for w in words) / len(words)


def _claims(trace: Trace) -> tuple[Claim, ...]:
    if trace.answer.claims:
        return trace.answer.claims
    return (Claim(text=trace.answer.text),) if trace.answer.text.strip() else ()


def _answered(trace: Trace) -> bool:
    return not trace.answer.abstained and trace.error is None and bool(trace.answer.text.strip())


def faithfulness(trace: Trace, support: float = 0.8) -> float | None:
    """Share of claims supported by the evidence they cite; None when nothing was answered."""
    claims = _claims(trace)
    if not _answered(trace) or not claims:
        return None
    text_by_chunk = {e.chunk_id: e.text for e in trace.evidence}
    ok = 0
    for claim in claims:
        cited = " ".join(text_by_chunk.get(c.chunk_id, "") for c in claim.citations)
        ok += bool(claim.citations) and claim_support(claim.text, cited) >= support
    return ok / len(claims)


def factuality(trace: Trace, case: Case, support: float = 0.8) -> float | None:
    """Share of claims supported by the case's gold fact spans; None without spans or answer."""
    gold = " ".join(span.text for fact in case.facts.values() for span in fact.spans)
    claims = _claims(trace)
    if not gold.strip() or not _answered(trace) or not claims:
        return None
    return sum(claim_support(c.text, gold) >= support for c in claims) / len(claims)


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def _pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p, method="linear")) if values else float("nan")


@hook("generate")
def generation_check(out: GenerationOutput, ctx: dict[str, Any]) -> list[Metric]:
    support = float(ctx.get("support", 0.8))
    traces = list(out.traces)
    n = len(traces)
    answered = [t for t in traces if _answered(t)]
    result = [metric(ctx, "answers", n), metric(ctx, "answered", len(answered)),
              metric(ctx, "abstain_rate", sum(t.answer.abstained for t in traces) / n if n else 0.0),
              metric(ctx, "error_rate", sum(t.error is not None for t in traces) / n if n else 0.0)]
    faith = [v for t in traces if (v := faithfulness(t, support)) is not None]
    fact = [v for t in traces if t.case_id in out.cases
            and (v := factuality(t, out.cases[t.case_id], support)) is not None]
    claims = [c for t in answered for c in _claims(t)]
    # the lexical judge has no calibration record: its meta says so rather than leaving it out
    judge = uncalibrated_meta(f"lexical:claim-support>={support:g}", "v1")
    result += [metric(ctx, "faithfulness", _mean(faith), judged=len(faith), method="lexical", support=support, **judge),
               metric(ctx, "factuality", _mean(fact), judged=len(fact), method="lexical", support=support, **judge),
               metric(ctx, "citation_coverage", _mean([float(bool(c.citations)) for c in claims]), claims=len(claims))]
    scored = [(t, out.cases[t.case_id]) for t in traces if t.case_id in out.cases and out.cases[t.case_id].answers]
    if scored:
        hyps = [t.answer.text for t, _ in scored]
        refs = [list(c.answers) + list(c.aliases) for _, c in scored]
        result.append(metric(ctx, "bleu", corpus_bleu(hyps, refs), answers=len(scored), tokenize="13a"))
        for kind in ("rouge1", "rouge2", "rougeL"):
            result.append(metric(ctx, kind, _mean([rouge_f1(h, r, kind) for h, r in zip(hyps, refs)])))
        result.append(metric(ctx, "answer_em", _mean([v for t, c in scored if (v := answer_em(c, t)) is not None])))
        result.append(metric(ctx, "answer_f1", _mean([v for t, c in scored if (v := answer_f1(c, t)) is not None])))
    latencies = [t.latency_ms or (t.steps[-1].cumulative_ms if t.steps else 0.0) for t in traces]
    steps = [s.latency_ms for t in traces for s in t.steps]
    result += [metric(ctx, "latency_ms_p50", _pct(latencies, 50)), metric(ctx, "latency_ms_p95", _pct(latencies, 95)),
               metric(ctx, "step_latency_ms_p50", _pct(steps, 50), steps=len(steps)),
               metric(ctx, "step_latency_ms_p95", _pct(steps, 95), steps=len(steps))]
    prompt = sum(t.usage.prompt_tokens for t in traces)
    completion = sum(t.usage.completion_tokens for t in traces)
    cost = sum(t.usage.cost for t in traces)
    result += [metric(ctx, "input_tokens", prompt), metric(ctx, "output_tokens", completion),
               metric(ctx, "input_tokens_per_query", prompt / n if n else 0.0),
               metric(ctx, "output_tokens_per_query", completion / n if n else 0.0),
               metric(ctx, "cost_total", cost),
               metric(ctx, "cost_per_answered", cost / len(answered) if answered else float("nan"),
                      answered=len(answered))]
    return result
