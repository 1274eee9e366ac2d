"""BLEU and ROUGE equal sacrebleu and rouge-score on real benchmark text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.gates.checks.textmetrics import corpus_bleu, rouge_f1, tokenize_13a

DATA = Path(__file__).resolve().parents[1] / "data"


def _pairs() -> tuple[list[str], list[str], list[str]]:
    """Hypotheses: each HotpotQA question's supporting sentences; references: the answer and question."""
    hyps, answers, questions = [], [], []
    for name in ("hotpotqa_dev_slice.json", "2wiki_dev_slice.json"):
        for item in json.loads((DATA / name).read_text(encoding="utf-8")):
            context = {title: sents for title, sents in item["context"]}
            sents = [context[t][i] for t, i in item["supporting_facts"] if t in context and i < len(context[t])]
            hyps.append(" ".join(sents))
            answers.append(item["answer"])
            questions.append(item["question"])
    return hyps, answers, questions


@pytest.mark.unit
def test_13a_tokens_hand_checked() -> None:
    assert tokenize_13a("It cost $3.50, (approx.) 1-2 days.") == ["It", "cost", "$", "3.50", ",", "(", "approx", ".",
                                                                   ")", "1", "-", "2", "days", "."]


@pytest.mark.unit
def test_rouge_hand_checked() -> None:
    # pred "the cat sat", ref "the cat sat down": P = 3/3, R = 3/4
    assert rouge_f1("The cat sat", ["the cat sat down"], "rouge1") == pytest.approx(2 * 1 * 0.75 / 1.75)
    assert rouge_f1("The cat sat", ["the cat sat down"], "rouge2") == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))
    assert rouge_f1("", ["x"], "rougeL") == 0.0


@pytest.mark.integration
def test_bleu_equals_sacrebleu() -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    hyps, answers, questions = _pairs()
    assert corpus_bleu(hyps, [[q] for q in questions]) == pytest.approx(
        sacrebleu.corpus_bleu(hyps, [questions]).score, abs=1e-9)
    # two references per hypothesis, and the reverse direction (short hypotheses: brevity penalty)
    assert corpus_bleu(hyps, [[q, a] for q, a in zip(questions, answers)]) == pytest.approx(
        sacrebleu.corpus_bleu(hyps, [questions, answers]).score, abs=1e-9)
    assert corpus_bleu(questions, [[h] for h in hyps]) == pytest.approx(
        sacrebleu.corpus_bleu(questions, [hyps]).score, abs=1e-9)
    assert corpus_bleu(["no overlap at all"], [["completely different"]]) == sacrebleu.corpus_bleu(
        ["no overlap at all"], [["completely different"]]).score == 0.0


@pytest.mark.integration
def test_rouge_equals_rouge_score() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    hyps, answers, questions = _pairs()
    for hyp, answer, question in zip(hyps, answers, questions):
        single = scorer.score(question, hyp)
        multi = scorer.score_multi([question, answer], hyp)
        for kind in ("rouge1", "rouge2", "rougeL"):
            assert rouge_f1(hyp, [question], kind) == pytest.approx(single[kind].fmeasure, abs=1e-12)
            assert rouge_f1(hyp, [question, answer], kind) == pytest.approx(multi[kind].fmeasure, abs=1e-12)
