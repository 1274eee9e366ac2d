"""Answer text streamed token by token: the offline synthesiser's text, or a model's real stream.

:class:`StreamingSynthesizer` wraps the engine's synthesiser. Offline, it answers as before and
then hands the text out word by word. With an OpenAI-compatible server it asks for the answer with
``stream=true`` and forwards every delta the server sends as it arrives; the streamed text cites
passages as ``[E1]``, ``[E2]`` and those markers become the answer's citations (a marker outside the
buffer is rejected and recorded, as the JSON synthesiser does). Any failure of the stream falls
back to the wrapped synthesiser, recorded in ``failures`` so the trace's warnings say so.

A stream ends by a wall-clock deadline: ``timeout`` seconds after it started, and never after the
question's model budget (the scope every model call of the question draws on), kept by
:mod:`hoprag.llm.deadline` on every socket operation like any model call. A read timeout alone
would not do: servers such as llama-cpp-python's send keep-alive comments while a request waits,
so a stream stuck behind other work would outlive the request.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from hoprag.records import Answer, Citation, Claim, Evidence

__all__ = ["OpenAIStream", "StreamingSynthesizer", "split_tokens"]

TokenSink = Callable[[str], None]
_TOKEN = re.compile(r"\S+\s*|\s+")
_MARKER = re.compile(r"\[(E\d+(?:\s*,\s*E\d+)*)\]")
_INSUFFICIENT = "INSUFFICIENT"


def split_tokens(text: str) -> list[str]:
    """Word-sized pieces whose concatenation is ``text`` (how offline text is streamed)."""
    return _TOKEN.findall(text)


class OpenAIStream:
    """One streamed chat completion at ``{base_url}/chat/completions``."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, max_tokens: int = 256) -> None:
        from hoprag.llm.openai_compat import resolve_api_key, resolve_base_url

        self.model = model
        self.url = resolve_base_url(base_url) + "/chat/completions"
        self.api_key = resolve_api_key(api_key)[0]
        self.timeout = timeout
        self.max_tokens = max_tokens

    def stream(self, messages: list[dict[str, str]], on_token: TokenSink,
               deadline: float | None = None) -> tuple[str, dict[str, int]]:
        """The full text and token usage; every content delta goes to ``on_token`` as it arrives.

        The stream is abandoned with :class:`TimeoutError` at ``timeout`` seconds or at ``deadline``
        (a :func:`time.monotonic` value), whichever comes first: the request runs inside the same
        wall-clock bound as every model call (:mod:`hoprag.llm.deadline`), so a server that stalls or
        trickles keep-alive comments cannot hold it, and the connection is closed when it ends.
        """
        import httpx

        from hoprag.llm import deadline as call_deadline

        started = time.monotonic()
        end = call_deadline.attempt_end(deadline, self.timeout, started)
        if end is None or end <= started:
            raise TimeoutError("no time is left in the question's model budget")
        limit = (f"the question's model budget ({end - started:.1f} s left)"
                 if deadline is not None and deadline < started + self.timeout else f"{self.timeout:g} s")
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = {"model": self.model, "messages": messages, "stream": True, "temperature": 0.0,
                "max_tokens": self.max_tokens, "stream_options": {"include_usage": True}}
        parts: list[str] = []
        usage: dict[str, int] = {}
        try:
            with call_deadline.bounded(end), call_deadline.http_client(
                self.url, headers=headers, timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 3.0))
            ) as client, client.stream("POST", self.url, json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    raise RuntimeError(f"{self.url} answered HTTP {response.status_code}: {response.text[:200]}")
                for line in response.iter_lines():
                    if time.monotonic() > end:  # lines already buffered are not read past the bound either
                        raise httpx.ReadTimeout("the stream's deadline passed")
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        continue
                    if not isinstance(chunk, dict):
                        continue
                    if isinstance(chunk.get("usage"), dict):
                        usage = {k: int(v) for k, v in chunk["usage"].items() if isinstance(v, int)}
                    for choice in chunk.get("choices") or ():
                        piece = (choice.get("delta") or {}).get("content")
                        if piece:
                            parts.append(piece)
                            on_token(piece)
        except httpx.TimeoutException as exc:
            raise TimeoutError(f"the stream from {self.url} did not finish within {limit}"
                               f" (ended after {time.monotonic() - started:.1f} s)") from exc
        return "".join(parts), usage


def _prompt(question: str, evidence: Sequence[Evidence], width: int = 600) -> list[dict[str, str]]:
    passages = "\n\n".join(f"[E{i}] {e.title}\n{' '.join(e.text.split())[:width]}"
                           for i, e in enumerate(evidence, start=1))
    system = ("Answer the question from the passages only, in one or two short sentences. After each "
              "statement cite the passages that support it as [E1], [E2]. The answer usually joins facts "
              f"from several passages. If the passages do not answer it, reply {_INSUFFICIENT} and nothing else.")
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Question: {question}\n\nPassages:\n{passages}"}]


def parse_cited_text(text: str, evidence: Sequence[Evidence]) -> Answer:
    """Claims (one per sentence) citing the ``[E<n>]`` markers they carry; unknown markers are rejected."""
    clean = text.strip()
    if not clean or clean.upper().startswith(_INSUFFICIENT):
        return Answer(text="", abstained=True)
    rejected: list[str] = []
    claims: list[Claim] = []
    for sentence in re.split(r"(?<=[.!?])\s+", clean):
        cites: list[Citation] = []
        for group in _MARKER.findall(sentence):
            for ref in (r.strip() for r in group.split(",")):
                n = int(ref[1:])
                if 1 <= n <= len(evidence):
                    item = evidence[n - 1]
                    cite = Citation(chunk_id=item.chunk_id, doc_id=item.doc_id, hop=item.hop)
                    if cite not in cites:
                        cites.append(cite)
                else:
                    rejected.append(ref)
        plain = " ".join(_MARKER.sub("", sentence).split())
        if plain:
            claims.append(Claim(text=plain, citations=tuple(cites)))
    answer_text = " ".join(_MARKER.sub("", clean).split())
    return Answer(text=answer_text, claims=tuple(claims), abstained=not answer_text, rejected_citations=tuple(rejected))


def _budget_deadline() -> float | None:
    """When the model budget of the question being answered runs out (None: no budget set)."""
    from hoprag.llm.guard import current_scope

    scope = current_scope()
    return getattr(scope, "deadline", None) if scope is not None else None


class StreamingSynthesizer:
    """The engine's synthesiser, with its text streamed to ``on_token`` (see the module docstring)."""

    def __init__(self, inner: Any, on_token: TokenSink, stream: OpenAIStream | None = None) -> None:
        self.inner = inner
        self.on_token = on_token
        self.stream = stream
        self.name = getattr(inner, "name", "synthesizer")
        self.own_failures: list[str] = []
        self.streamed = False

    def __getattr__(self, item: str) -> Any:  # usage and the like come from the wrapped role
        return getattr(self.inner, item)

    @property
    def failures(self) -> list[str]:
        # the wrapped role's running list first: the engine counts a question's failures from its
        # length when the question started
        return [*getattr(self.inner, "failures", ()), *self.own_failures]

    def answer(self, question: str, evidence: Sequence[Evidence]) -> Answer:
        if self.stream is not None and evidence:
            try:
                text, _usage = self.stream.stream(_prompt(question, evidence), self._forward, _budget_deadline())
                return parse_cited_text(text, evidence)
            except Exception as exc:  # noqa: BLE001 - any stream failure falls back, recorded
                self.own_failures.append(f"stream failed ({type(exc).__name__}: {str(exc)[:160]})")
                self.on_token("\n")
        answer = self.inner.answer(question, evidence)
        for piece in split_tokens(answer.text):
            self._forward(piece)
        return answer

    def _forward(self, piece: str) -> None:
        self.streamed = True
        self.on_token(piece)
