"""Judge calibration: how often a grader agrees with human labels on adjudicated examples.

Examples are built from every *adjudicated* case (at least one ``adjudication`` entry and a
majority of ``accept`` decisions; others are skipped and counted). The reviewers who accepted a
case vouched for its facts, answers, aliases and reference claims, so each example's derived label
is theirs (``reviewer`` = ``adjudication:r1+r2``). Items, per case (``CHAIN`` = the span texts of
the case's first valid chain; *other case* = the next adjudicated case in file order, wrapping,
whose facts share no entity and no source with this case's and whose first answer is not one of
this case's answers or aliases)::

    task                item                 judged pair                                   label
    claim_support       support:FACT         FACT's last span  vs  FACT's span texts        supported
    claim_support       support:FACT:other   FACT's last span  vs  other case's CHAIN       not supported
    claim_support       claim:I              reference_claims[I]  vs  CHAIN                 supported
    claim_support       claim:I:other        reference_claims[I]  vs  other case's CHAIN    not supported
    faithfulness        faithful:answer      answers[0]  vs  CHAIN                          supported
    faithfulness        faithful:other       other case's answers[0]  vs  CHAIN             not supported
    answer_equivalence  alias:I              aliases[I]  vs  answers (closed cases)         equivalent
    answer_equivalence  alias:other          other case's answers[0]  vs  answers           not equivalent

Human labels may add to or replace these: a JSONL of ``{"case_id", "item", "label", "reviewer"}``
(``label`` true or false, ``item`` spelled as above). An item a file labels takes the file's
majority label instead of the derived one; a tie is *contested*, counted and left out.

The offline judge is the deterministic one the evaluation uses: :class:`TokenContainmentJudge`
for claim support and faithfulness, and answer F1 (the case's dataset rules) >= 0.5 for
equivalence. A model on an OpenAI-compatible server is graded the same way
(:class:`~hoprag.evaluation.model_judge.ModelGrader`); an example it gives no verdict for is a
counted grader failure, left out of the figures. Agreement is reported per task and overall: accuracy, Cohen's kappa
``(p_o - p_e) / (1 - p_e)``, the confusion matrix, and a percentile bootstrap CI for kappa
(examples resampled with replacement, seeded; resamples with undefined kappa are skipped).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from hoprag.datasets.schema import Case
from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.answers import best_f1, normalize, rules_for
from hoprag.evaluation.attribution import TokenContainmentJudge
from hoprag.jsonl import read_jsonl_dicts

TASKS = ("claim_support", "faithfulness", "answer_equivalence")
FORMAT_VERSION = 1
ITEM_HELP = "support:FACT[:other], claim:I[:other], faithful:answer|other, alias:I|other"


@dataclass(frozen=True)
class Example:
    """One (claim, evidence) or (prediction, gold) pair with its human label."""

    case_id: str
    item: str
    task: str
    claim: str
    evidence: str
    label: bool
    reviewer: str


@dataclass(frozen=True)
class ExampleSet:
    examples: tuple[Example, ...]
    skipped_cases: tuple[str, ...]
    contested: tuple[str, ...]

    @property
    def digest(self) -> str:
        canon = json.dumps([asdict(e) for e in self.examples], sort_keys=True, ensure_ascii=False)
        return "sha256:" + hashlib.sha256(canon.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Agreement:
    n: int
    accuracy: float | None
    kappa: float | None
    ci: tuple[float | None, float | None]
    confusion: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "accuracy": self.accuracy, "kappa": self.kappa, "kappa_ci95": list(self.ci),
                "confusion": self.confusion}


def cohen_kappa(human: Sequence[bool], judge: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters; None when chance agreement is 1 (kappa undefined)."""
    n = len(human)
    if n == 0 or n != len(judge):
        return None
    p_o = sum(1 for h, j in zip(human, judge) if h == j) / n
    h1, j1 = sum(human) / n, sum(judge) / n
    p_e = h1 * j1 + (1 - h1) * (1 - j1)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


def bootstrap_kappa_ci(human: Sequence[bool], judge: Sequence[bool], *, resamples: int = 1000, seed: int = 42,
                       level: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of kappa over examples; the same seed gives the same interval."""
    n = len(human)
    if n == 0:
        return (None, None)
    rng = random.Random(seed)
    values: list[float] = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        k = cohen_kappa([human[i] for i in idx], [judge[i] for i in idx])
        if k is not None:
            values.append(k)
    if not values:
        return (None, None)
    values.sort()
    lo = values[int((1 - level) / 2 * (len(values) - 1))]
    hi = values[int(round((1 + level) / 2 * (len(values) - 1)))]
    return (round(lo, 4), round(hi, 4))


def agreement(human: Sequence[bool], judge: Sequence[bool], *, resamples: int = 1000, seed: int = 42) -> Agreement:
    n = len(human)
    pairs = list(zip(human, judge))
    confusion = {"tp": sum(1 for h, j in pairs if h and j), "fn": sum(1 for h, j in pairs if h and not j),
                 "fp": sum(1 for h, j in pairs if not h and j), "tn": sum(1 for h, j in pairs if not h and not j)}
    kappa = cohen_kappa(human, judge)
    return Agreement(
        n=n,
        accuracy=round((confusion["tp"] + confusion["tn"]) / n, 4) if n else None,
        kappa=None if kappa is None else round(kappa, 4),
        ci=bootstrap_kappa_ci(human, judge, resamples=resamples, seed=seed),
        confusion=confusion,
    )


# --- examples ----------------------------------------------------------------------------------------


def _accepted(case: Case) -> bool:
    decisions = [a.decision for a in case.adjudication]
    return bool(decisions) and sum(d == "accept" for d in decisions) * 2 > len(decisions)


def _reviewers(case: Case) -> str:
    return "adjudication:" + "+".join(a.reviewer for a in case.adjudication if a.decision == "accept")


def _chain_text(case: Case) -> str:
    chain = case.valid_chains[0] if case.valid_chains else list(case.facts)
    return " ".join(span.text for fid in chain for span in case.facts[fid].spans)


def _keys(case: Case) -> set[str]:
    return {e.lower() for f in case.facts.values() for e in f.entities} | {f.source_id for f in case.facts.values()}


def _other(cases: list[Case], i: int) -> Case | None:
    mine, golds = _keys(cases[i]), {normalize(a) for a in cases[i].answers + cases[i].aliases}
    for step in range(1, len(cases)):
        other = cases[(i + step) % len(cases)]
        if other.answers and not (_keys(other) & mine) and normalize(other.answers[0]) not in golds:
            return other
    return None


def _derived(cases: list[Case], i: int) -> list[Example]:
    case, who = cases[i], _reviewers(cases[i])
    other = _other(cases, i)
    out: list[Example] = []

    def add(item: str, task: str, claim: str, evidence: str, label: bool) -> None:
        if claim.strip() and evidence.strip():
            out.append(Example(case.case_id, item, task, claim, evidence, label, who))

    chain = _chain_text(case)
    for fid in case.required_facts:
        fact = case.facts[fid]
        add(f"support:{fid}", "claim_support", fact.spans[-1].text, " ".join(s.text for s in fact.spans), True)
        if other is not None:
            add(f"support:{fid}:other", "claim_support", fact.spans[-1].text, _chain_text(other), False)
    for j, ref in enumerate(case.reference_claims):
        add(f"claim:{j}", "claim_support", ref, chain, True)
        if other is not None:
            add(f"claim:{j}:other", "claim_support", ref, _chain_text(other), False)
    if case.answers:
        add("faithful:answer", "faithfulness", case.answers[0], chain, True)
        if other is not None:
            add("faithful:other", "faithfulness", other.answers[0], chain, False)
    if case.answer_type == "closed" and case.answers:
        gold = " | ".join(case.answers)
        for j, alias in enumerate(case.aliases):
            add(f"alias:{j}", "answer_equivalence", alias, gold, True)
        if other is not None:
            add("alias:other", "answer_equivalence", other.answers[0], gold, False)
    return out


def build_examples(cases: list[Case], human: list[dict[str, Any]] | None = None) -> ExampleSet:
    """Examples from the adjudicated cases, with labels from ``human`` replacing derived ones."""
    accepted = [c for c in cases if _accepted(c)]
    skipped = tuple(c.case_id for c in cases if not _accepted(c))
    examples = [e for i in range(len(accepted)) for e in _derived(accepted, i)]
    by_key = {(e.case_id, e.item): e for e in examples}
    votes: dict[tuple[str, str], list[tuple[bool, str]]] = {}
    for row in human or ():
        key = (row["case_id"], row["item"])
        if key not in by_key:
            raise InputError(
                f"judgment for case {row['case_id']!r} item {row['item']!r} matches no calibration example",
                source=row.get("_source"), line=row.get("_line"),
                fix=f"label an adjudicated case's item, spelled {ITEM_HELP}",
            )
        votes.setdefault(key, []).append((row["label"], row["reviewer"]))
    contested: list[str] = []
    final: list[Example] = []
    for e in examples:
        cast = votes.get((e.case_id, e.item))
        if not cast:
            final.append(e)
            continue
        yes = sum(1 for label, _ in cast if label)
        if yes * 2 == len(cast):
            contested.append(f"{e.case_id}/{e.item}")
            continue
        who = "+".join(dict.fromkeys(r for _, r in cast))
        final.append(Example(e.case_id, e.item, e.task, e.claim, e.evidence, yes * 2 > len(cast), who))
    return ExampleSet(tuple(final), skipped, tuple(contested))


def read_judgments(path: str | Path) -> list[dict[str, Any]]:
    """Read a human-label JSONL (``case_id``, ``item``, ``label`` true/false, ``reviewer``)."""
    rows: list[dict[str, Any]] = []
    for line, rec in read_jsonl_dicts(path, "judgments file", allow_empty=False):
        for name, kind in (("case_id", str), ("item", str), ("label", bool), ("reviewer", str)):
            if not isinstance(rec.get(name), kind):
                raise InputError(
                    f"judgment needs '{name}' as {'true/false' if kind is bool else 'a string'}, got {rec.get(name)!r}",
                    source=str(path), line=line, field=name,
                    fix='write one {"case_id": …, "item": …, "label": true|false, "reviewer": …} per line',
                )
        rows.append({**rec, "_source": str(path), "_line": line})
    return rows


# --- judging -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OfflineGrader:
    """The deterministic grader the evaluation uses, as one object with one identity."""

    threshold: float = 0.5
    containment: TokenContainmentJudge = TokenContainmentJudge()

    @property
    def model_id(self) -> str:
        return f"{self.containment.model_id}+answer-f1>={self.threshold}"

    @property
    def prompt_version(self) -> str:
        return self.containment.prompt_version

    def grade(self, example: Example, case: Case) -> bool:
        if example.task == "answer_equivalence":
            return best_f1(example.claim, case.answers, rules_for(case)) >= self.threshold
        return bool(self.containment.judge(example.claim, example.evidence).supported)

    def identity(self) -> dict[str, Any]:
        return {"llm": "offline", "model_id": self.model_id, "prompt_version": self.prompt_version}


class Grader(Protocol):
    """What :func:`calibrate` grades with: one identity, one verdict per example."""

    model_id: str
    prompt_version: str

    def identity(self) -> dict[str, Any]: ...

    def grade(self, example: Example, case: Case) -> bool: ...


GRADERS = "offline | openai:MODEL"


def check_grader_spec(llm: str) -> None:
    """Refuse a grader spec that cannot be calibrated before any file is read or server called."""
    from hoprag.llm.settings import backend_kind

    if backend_kind(llm) not in ("offline", "openai"):
        raise ConfigError(
            f"--llm {llm!r}: the graders that can be calibrated are the offline deterministic judge and a model "
            "on an OpenAI-compatible server; pass --llm offline (the default) or --llm openai:MODEL --base-url URL"
        )


def make_grader(llm: str, settings: Any = None, *, seed: int = 0) -> Any:
    """The offline grader, or a :class:`~hoprag.evaluation.model_judge.ModelGrader` for ``openai:MODEL``
    (``settings``: an :class:`~hoprag.llm.settings.LLMSettings`; the server is asked for its models)."""
    check_grader_spec(llm)
    if llm.strip() == "offline":
        return OfflineGrader()
    from hoprag.evaluation.model_judge import ModelGrader
    from hoprag.llm.settings import LLMSettings

    return ModelGrader.connect(llm, settings or LLMSettings(), seed=seed)


def calibrate(cases: list[Case], human: list[dict[str, Any]] | None = None, *, llm: str = "offline",
              grader: Grader | None = None, resamples: int = 1000, seed: int = 42) -> dict[str, Any]:
    """Grade every example and report agreement with the human labels (the calibration record).

    An example the grader gives no verdict for (:class:`~hoprag.evaluation.model_judge.GraderFailure`)
    is counted and listed under ``grader_failures`` and left out of the agreement figures.
    """
    from hoprag.evaluation.model_judge import GraderFailure

    built = build_examples(cases, human)
    if not built.examples:
        raise InputError("no calibration examples: no case has an accepting adjudication",
                         fix="add 'adjudication' entries to the cases or pass a judgments JSONL")
    grader = grader or make_grader(llm, seed=seed)
    by_id = {c.case_id: c for c in cases}
    graded: list[tuple[Example, bool]] = []
    failures: list[dict[str, Any]] = []
    for e in built.examples:
        try:
            graded.append((e, grader.grade(e, by_id[e.case_id])))
        except GraderFailure as exc:
            failures.append({"case_id": e.case_id, "item": e.item, "task": e.task, "reason": exc.reason,
                             "reply": exc.reply})
    if not graded:
        raise InputError(f"the grader gave no verdict on any of the {len(built.examples)} examples "
                         f"(first failure: {failures[0]['reason']})",
                         fix="use a model that answers yes or no, or check the server's log")
    result: dict[str, Any] = {
        "version": FORMAT_VERSION,
        "judge": grader.identity(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "examples_digest": built.digest,
        "examples": len(built.examples),
        "seed": seed,
        "resamples": resamples,
        "overall": agreement([e.label for e, _ in graded], [v for _, v in graded], resamples=resamples,
                             seed=seed).to_json(),
        "tasks": {},
        "grader_failures": {"count": len(failures), "items": failures},
        "skipped_cases": list(built.skipped_cases),
        "contested": list(built.contested),
        "disagreements": [f"{e.case_id}/{e.item}" for e, v in graded if v != e.label],
    }
    for task in TASKS:
        pairs = [(e.label, v) for e, v in graded if e.task == task]
        if pairs:
            human_l, judge_l = zip(*pairs)
            result["tasks"][task] = agreement(human_l, judge_l, resamples=resamples, seed=seed).to_json()
            result["tasks"][task]["grader_failures"] = sum(1 for f in failures if f["task"] == task)
    return result
