"""Answer exact match and token F1, with each benchmark's official rules chosen by the case's dataset.

Every profile shares one normalisation, ``normalize(s)``: lowercase, drop every ``string.punctuation``
character, drop the articles ``a|an|the`` as whole words, collapse whitespace (SQuAD v1.1
``normalize_answer``, which the HotpotQA, MuSiQue and 2Wiki scripts reuse unchanged)::

    EM(p, g) = 1 if normalize(p) == normalize(g) else 0
    F1(p, g) = 2 * P * R / (P + R),  P = |common| / |tokens(p)|,  R = |common| / |tokens(g)|

with ``common`` the multiset intersection of the normalised tokens. The profiles differ in three
rules (:class:`AnswerRules`):

- ``hotpotqa`` (``hotpot_evaluate_v1.py``): if either normalised side is ``yes``, ``no`` or
  ``noanswer`` and the two differ, F1 = 0; a side without tokens gives F1 = 0, even when both are
  empty (EM is still 1 then).
- ``2wiki`` (``2wikimultihop_evaluate_v1.1.py``): the HotpotQA rules; its gold strings are the
  answer plus the aliases and demonyms of its ``answer_id`` (``hoprag import 2wiki --aliases``).
- ``musique`` (``evaluate_v1.0.py``, ``metrics/answer.py``): no yes/no rule; when a side has no
  tokens, F1 = 1 if both have none, else 0; gold strings are the answer and ``answer_aliases``.
- ``squad`` (SQuAD v2.0 ``evaluate-v2.0.py``): the MuSiQue rules, and gold strings that normalise
  to nothing are dropped unless all of them do.

``squad`` applies to native cases (``dataset`` unset) and to any dataset without a profile. Over
several gold strings (answers + aliases) each score is the max. An abstaining trace scores
EM = F1 = 0; an explanatory case (or one with no gold string) is not applicable (``None``).
HotpotQA's empty-side rule makes EM = 1 > F1 = 0 possible there, as in its script.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from hoprag.datasets.schema import Case
from hoprag.evaluation.memo import memoized
from hoprag.records import Trace

_DROP_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPECIAL = ("yes", "no", "noanswer")


@dataclass(frozen=True)
class AnswerRules:
    """How one benchmark's official script scores an answer (see the module table)."""

    name: str
    yes_no_rule: bool
    empty_agrees: bool
    drop_empty_golds: bool


SQUAD = AnswerRules("squad", yes_no_rule=False, empty_agrees=True, drop_empty_golds=True)
HOTPOTQA = AnswerRules("hotpotqa", yes_no_rule=True, empty_agrees=False, drop_empty_golds=False)
TWOWIKI = AnswerRules("2wiki", yes_no_rule=True, empty_agrees=False, drop_empty_golds=False)
MUSIQUE = AnswerRules("musique", yes_no_rule=False, empty_agrees=True, drop_empty_golds=False)
RULES_BY_DATASET = {r.name: r for r in (HOTPOTQA, TWOWIKI, MUSIQUE)}


def rules_for(case: Case) -> AnswerRules:
    """The profile of the case's dataset; SQuAD v2.0 for native cases and datasets without one."""
    return RULES_BY_DATASET.get(case.dataset or "", SQUAD)


@lru_cache(maxsize=65536)  # golds are normalised once per measure and per prediction
def normalize(text: str) -> str:
    """SQuAD answer normalisation (shared by every profile)."""
    text = text.lower()
    text = text.translate(_DROP_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize(prediction) == normalize(gold))


def f1(prediction: str, gold: str, rules: AnswerRules = SQUAD) -> float:
    """Token-level F1 of one prediction against one gold string under ``rules``."""
    pred = normalize(prediction)
    tokens = pred.split()
    return _f1(pred, tokens, Counter(tokens), normalize(gold), rules)


def _f1(pred: str, pred_tokens: list[str], pred_counts: Counter[str], ref: str, rules: AnswerRules) -> float:
    """:func:`f1` of normalised strings, given the prediction's tokens and their counts."""
    if rules.yes_no_rule and (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    ref_tokens = ref.split()
    if rules.empty_agrees and (not pred_tokens or not ref_tokens):
        return float(pred_tokens == ref_tokens)
    # the size of the multiset intersection, sum((Counter(pred) & Counter(ref)).values()), without building it
    same = sum(min(n, pred_counts[t]) for t, n in _token_counts(ref).items() if t in pred_counts)
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


@lru_cache(maxsize=65536)
def _token_counts(normalized: str) -> dict[str, int]:
    """Token counts of a normalised gold string (shared: callers must not mutate it)."""
    return dict(Counter(normalized.split()))


def scored_golds(golds: Sequence[str], rules: AnswerRules) -> list[str]:
    """The gold strings a profile compares against (SQuAD v2.0 drops golds without tokens)."""
    if rules.drop_empty_golds:
        kept = [g for g in golds if normalize(g)]
        return kept or [""]
    return list(golds)


def best_em(prediction: str, golds: Sequence[str], rules: AnswerRules = SQUAD) -> float:
    return max(exact_match(prediction, g) for g in scored_golds(golds, rules))


def best_f1(prediction: str, golds: Sequence[str], rules: AnswerRules = SQUAD) -> float:
    pred = normalize(prediction)  # the prediction's tokens and counts once, for every gold
    tokens = pred.split()
    counts = Counter(tokens)
    return max(_f1(pred, tokens, counts, normalize(g), rules) for g in scored_golds(golds, rules))


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
    # once per case and trace within an evaluation: the failure diagnosis asks again
    return memoized("answer_em", (case, trace), lambda: best_em(trace.answer.text, golds, rules_for(case)))


def answer_f1(case: Case, trace: Trace, k: int | None = None) -> float | None:
    """Max F1 over answers + aliases under the case's dataset rules; 0 when the trace abstained."""
    golds = gold_strings(case)
    if not golds:
        return None
    if trace.answer.abstained:
        return 0.0
    return best_f1(trace.answer.text, golds, rules_for(case))
