"""BLEU (sacrebleu's corpus BLEU: 13a tokens, exp smoothing) and ROUGE-1/2/L (rouge-score's F1).

BLEU with ``r`` references per hypothesis: clipped n-gram matches (n = 1..4) against the maximum
count in any reference, brevity penalty ``exp(1 - ref_len / sys_len)`` when shorter, where
ref_len sums each hypothesis's closest reference length (ties to the shorter), and
``100 * BP * exp(mean(log p_n))``; a zero match count at order n is smoothed to
``1 / (2^m * total_n)`` for the m-th such order (NIST/mteval "exp" smoothing).

ROUGE-N F1 = 2PR/(P+R) of clipped n-gram overlap; ROUGE-L uses the longest common subsequence.
Tokens: lowercase, every non-``[a-z0-9]`` run is a separator, no stemming. With several
references a pair scores its best reference's F1 (rouge-score's ``score_multi``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["corpus_bleu", "rouge_f1", "rouge_tokens", "tokenize_13a"]

_13A = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def tokenize_13a(line: str) -> list[str]:
    """mteval-v13a tokens (as sacrebleu's default tokenizer)."""
    line = line.rstrip().replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} "
    for pattern, repl in _13A:
        line = pattern.sub(repl, line)
    return line.split()


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], max_order: int = 4) -> float:
    """Corpus BLEU in [0, 100]; ``references[i]`` are the references of ``hypotheses[i]``."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    correct = [0] * max_order
    total = [0] * max_order
    sys_len = ref_len = 0
    for hyp, refs in zip(hypotheses, references):
        if not refs:
            raise ValueError("every hypothesis needs at least one reference")
        h = tokenize_13a(hyp)
        rs = [tokenize_13a(r) for r in refs]
        sys_len += len(h)
        ref_len += min((abs(len(h) - len(r)), len(r)) for r in rs)[1]
        for n in range(1, max_order + 1):
            hyp_counts = _ngrams(h, n)
            best: Counter[tuple[str, ...]] = Counter()
            for r in rs:
                best |= _ngrams(r, n)
            correct[n - 1] += sum(min(c, best[g]) for g, c in hyp_counts.items())
            total[n - 1] += max(len(h) - n + 1, 0)
    if not any(correct):
        return 0.0
    bp = 1.0 if sys_len >= ref_len else (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0)
    log_sum = 0.0
    smooth = 1.0
    for n in range(max_order):
        if total[n] == 0:
            log_sum += -9999999999.0  # sacrebleu's log(0); only reachable with empty hypotheses
            continue
        if correct[n] == 0:
            smooth *= 2
            precision = 100.0 / (smooth * total[n])
        else:
            precision = 100.0 * correct[n] / total[n]
        log_sum += math.log(precision) if precision > 0 else -9999999999.0
    return bp * math.exp(log_sum / max_order)


def rouge_tokens(text: str) -> list[str]:
    return [t for t in _NON_ALNUM.split(text.lower()) if t]


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def _f1(overlap: int, pred: int, target: int) -> float:
    p = overlap / max(pred, 1)
    r = overlap / max(target, 1)
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _rouge_one(kind: str, pred: list[str], target: list[str]) -> float:
    if kind == "rougeL":
        if not pred or not target:
            return 0.0
        return _f1(_lcs(target, pred), len(pred), len(target))
    n = int(kind[len("rouge"):])
    pc, tc = _ngrams(pred, n), _ngrams(target, n)
    overlap = sum(min(c, tc[g]) for g, c in pc.items())
    return _f1(overlap, sum(pc.values()), sum(tc.values()))


def rouge_f1(prediction: str, references: Sequence[str], kind: str = "rougeL") -> float:
    """ROUGE F1 of one prediction against its best reference (``kind``: rouge1, rouge2, rougeL)."""
    if kind not in ("rouge1", "rouge2", "rougeL"):
        raise ValueError(f"unknown ROUGE kind '{kind}'; valid: rouge1, rouge2, rougeL")
    pred = rouge_tokens(prediction)
    return max((_rouge_one(kind, pred, rouge_tokens(ref)) for ref in references), default=0.0)
