"""A model grader: an OpenAI-compatible chat model asked one yes/no question per calibration example.

The three tasks of :mod:`hoprag.evaluation.calibration` each get one prompt (the set is versioned
by :data:`PROMPT_VERSION`; any change to the wording changes the version)::

    claim_support       does EVIDENCE support CLAIM?
    faithfulness        is ANSWER stated in, or directly supported by, EVIDENCE?
    answer_equivalence  does CANDIDATE mean the same as one of the REFERENCE answers?

The reply is asked for as JSON ``{"verdict": "yes"|"no"}`` (:data:`VERDICT_SCHEMA`, sent as the
request's schema, so a server with constrained decoding can only answer a verdict) and parsed
strictly (:func:`parse_verdict`, which also takes a bare first word ``yes``/``no``). A reply that is
neither, even after the backend's one repair round, is a *grader failure*: counted and listed with
the reply, never read as "no". A call
that fails (timeout, server error once retries are spent) is a counted failure too, until
``breaker_threshold`` calls in a row have failed: then the calibration stops with that error, so a
server that died mid-run gives one message, not hundreds of failures.

Before any example is graded, :meth:`ModelGrader.connect` asks the server which models it serves
(``GET /v1/models``); the judge is pinned by the id the server reports, the prompt version, the
base URL's host (never its credentials or query), temperature 0 and the request seed.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from hoprag.errors import ConfigError

if TYPE_CHECKING:
    from hoprag.datasets.schema import Case
    from hoprag.llm.openai_compat import OpenAICompatLLM
    from hoprag.llm.settings import LLMSettings

__all__ = ["PROMPT_VERSION", "GraderFailure", "ModelGrader", "parse_verdict", "prompt_for"]

PROMPT_VERSION = "model-grader-v1"
MAX_TOKENS = 16
#: the reply's shape; sent as the request's JSON schema, so a server that constrains decoding
#: (llama.cpp, vLLM, OpenAI) can only answer one of the two verdicts
VERDICT_SCHEMA: dict[str, Any] = {
    "title": "verdict", "type": "object", "additionalProperties": False, "required": ["verdict"],
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
}
SYSTEM = ("You are a careful grader. You answer every question with exactly one word: yes or no. "
          "Use only the text given; do not use outside knowledge.")
_QUESTIONS = {
    "claim_support": ("Evidence:\n{evidence}\n\nClaim: {claim}\n\n"
                      "Does the evidence support the claim? Answer yes or no."),
    "faithfulness": ("Evidence:\n{evidence}\n\nAnswer: {claim}\n\n"
                     "Is this answer stated in, or directly supported by, the evidence? Answer yes or no."),
    "answer_equivalence": ("Reference answers: {evidence}\n\nCandidate answer: {claim}\n\n"
                           "Does the candidate answer mean the same as one of the reference answers? Answer yes or no."),
}
_WORD = re.compile(r"^[\s\"'*`_]*(yes|no)(?![a-z])", re.IGNORECASE)



class GradedItem(Protocol):
    """What a grader reads of a calibration example (hoprag.evaluation.calibration.Example has it)."""

    task: str
    claim: str
    evidence: str

class GraderFailure(Exception):
    """One example the grader gave no verdict for; ``reason`` says why, ``reply`` what it said."""

    def __init__(self, reason: str, reply: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


def prompt_for(task: str, claim: str, evidence: str) -> str:
    """The user message of one example (the system message is :data:`SYSTEM`)."""
    return _QUESTIONS[task].format(claim=claim.strip(), evidence=evidence.strip())


def parse_verdict(reply: str) -> bool:
    """``yes`` → True, ``no`` → False; anything else raises :class:`GraderFailure`."""
    text = reply.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            raise GraderFailure("reply is not valid JSON", reply) from None
        verdict = data.get("verdict") if isinstance(data, dict) else None
        if isinstance(verdict, str) and verdict.strip().lower() in ("yes", "no"):
            return verdict.strip().lower() == "yes"
        raise GraderFailure('JSON reply has no "verdict" of "yes" or "no"', reply)
    found = _WORD.match(text)
    if found is None:
        raise GraderFailure("reply does not start with yes or no", reply)
    return found.group(1).lower() == "yes"


def _host(base_url: str) -> str:
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


@dataclass
class ModelGrader:
    """Grades calibration examples with one chat model; build it with :meth:`connect`."""

    llm: OpenAICompatLLM
    model_id: str
    budget: float | None = None
    breaker_threshold: int = 3
    seed: int = 0
    prompt_version: str = PROMPT_VERSION
    _consecutive: int = field(default=0, repr=False)

    @classmethod
    def connect(cls, spec: str, settings: LLMSettings, *, seed: int = 0) -> ModelGrader:
        """The grader for ``openai:MODEL`` after asking the server what it serves (a dead port fails here)."""
        from hoprag.llm.settings import backend_kind

        if backend_kind(spec) != "openai":
            raise ConfigError(f"--llm {spec!r}: a model grader needs an OpenAI-compatible server; "
                              "pass --llm openai:MODEL --base-url URL, or --llm offline")
        llm = settings.make(spec, seed=seed)
        requested = llm.model
        try:
            served = llm.list_models()
        except BaseException:
            llm.close()
            raise
        if requested in served:
            model_id = requested
        elif len(served) == 1:
            model_id = served[0]  # a one-model server (llama.cpp) answers any name with its model
        else:
            llm.close()
            raise ConfigError(
                f"--llm {spec!r}: the server at {llm.display_url} does not serve {requested!r}"
                + (f"; it serves {', '.join(served[:10])}" if served else " and lists no models")
                + "; pass --llm openai:ID with one of the ids it lists")
        return cls(llm=llm, model_id=model_id, budget=settings.budget or None,
                   breaker_threshold=settings.breaker_threshold, seed=seed)

    def identity(self) -> dict[str, Any]:
        """What pins this judge in a calibration record (no key, no path beyond the host)."""
        return {"llm": self.llm.spec, "model_id": self.model_id, "prompt_version": self.prompt_version,
                "base_url_host": _host(self.llm.base_url), "temperature": 0.0, "seed": self.seed,
                "max_tokens": MAX_TOKENS}

    def grade(self, example: GradedItem, case: Case) -> bool:
        """The model's verdict on one example; :class:`GraderFailure` when it gives none."""
        from hoprag.llm.base import Message
        from hoprag.llm.errors import LLMError, LLMJSONError

        messages = [Message("system", SYSTEM), Message("user", prompt_for(example.task, example.claim, example.evidence))]
        deadline = time.monotonic() + self.budget if self.budget else None
        try:
            reply = self.llm.complete(messages, max_tokens=MAX_TOKENS, temperature=0.0, json_schema=VERDICT_SCHEMA,
                                      deadline=deadline).text
        except LLMJSONError as exc:  # the model answered, but not a verdict (after one repair round)
            self._consecutive = 0
            raise GraderFailure(f"reply is not a verdict: {exc.problem}", exc.text) from exc
        except LLMError as exc:
            self._consecutive += 1
            if self._consecutive >= self.breaker_threshold:
                raise LLMError(f"the grader stopped after {self._consecutive} failed calls in a row (last: {exc})",
                               model=self.llm.model,
                               fix="check that the server is up and answering, or raise --llm-timeout") from exc
            raise GraderFailure(f"{type(exc).__name__}: {exc}") from exc
        self._consecutive = 0
        return parse_verdict(reply)

    def close(self) -> None:
        self.llm.close()
