"""Answer exact match and token F1 with the SQuAD / HotpotQA official semantics.

``normalize(s)``: lowercase, drop every ``string.punctuation`` character, drop the articles
``a|an|the`` as whole words, collapse whitespace (SQuAD v1.1 ``normalize_answer``).

    EM(p, g) = 1 if normalize(p) == normalize(g) else 0
    F1(p, g) = 2 * P * R / (P + R),  P = |common| / |tokens(p)|,  R = |common| / |tokens(g)|

with ``common`` the multiset intersection of the normalised tokens (HotpotQA ``f1_score``),
including its special case: if either normalised side is ``yes``, ``no`` or ``noanswer`` and
the two differ, F1 = 0. When a side normalises to no tokens at all, F1 = 1 if both do and 0
otherwise (the SQuAD v2.0 rule; HotpotQA's script would give 0 even when both are empty, which
breaks ``EM <= F1``). Over several gold strings (answers + aliases) each score is the max.
An abstaining trace scores EM = F1 = 0; an explanatory case (or one with no gold string) is
not applicable (``None``).
"""

from __future__ import annotations

import re
import string
from collections import Counter

from hoprag.datasets.schema import Case
from hoprag.records import Trace

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPECIAL = ("yes", "no", "noanswer")


def normalize(text: str) -> str:
    """SQuAD/HotpotQA answer normalisation."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize(prediction) == normalize(gold))


def f1(prediction: str, gold: str) -> float:
    """Token-level F1 of one prediction against one gold string."""
    pred, ref = normalize(prediction), normalize(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    if not pred_tokens or not ref_tokens:
        return float(pred_tokens == ref_tokens)
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def gold_strings(case: Case) -> list[str]:
    """The closed answers a prediction may match: answers then aliases."""
    if case.answer_type == "explanatory":
        return []
    return [*case.answers, *case.aliases]


def answer_applies(case: Case) -> bool:
    return bool(gold_strings(case))


def answer_em(case: Case, trace: Trace, k: int | None = None) -> float | None:
    """Max EM over answers + aliases; 0 when the trace abstained; None when not applicable."""
    golds = gold_strings(case)
    if not golds:
        return None
    if trace.answer.abstained:
        return 0.0
    return max(exact_match(trace.answer.text, g) for g in golds)


def answer_f1(case: Case, trace: Trace, k: int | None = None) -> float | None:
    """Max F1 over answers + aliases; 0 when the trace abstained; None when not applicable."""
    golds = gold_strings(case)
    if not golds:
        return None
    if trace.answer.abstained:
        return 0.0
    return max(f1(trace.answer.text, g) for g in golds)
