"""A local GGUF model in-process through llama-cpp-python (``pip install 'hoprag[local]'``).

JSON requests are grammar-constrained to the schema (llama.cpp's ``json_object`` + ``schema``).
The attempt's wall-clock bound (:mod:`hoprag.llm.deadline`: ``timeout``, never past the question's
deadline) is checked before each generated token: a text request past it is ended at once (the
next token is forced to end-of-generation) and raises LLMTimeoutError. A JSON request is generated
as a stream (a logits processor would slow grammar-constrained sampling threefold) and abandoned at
the first token past the timeout, raising LLMTimeoutError; its prompt tokens are then counted with
the tokenizer rather than reported by llama.cpp. Prompt evaluation itself cannot be interrupted.
A timeout is not retried: with the same seed and prompt the model would take as long again.
Calls are serialised by a lock because a ``llama_cpp.Llama`` is not thread-safe.

A streamed call hands out each generated token as llama.cpp makes it (the lock is held until the
stream ends or is closed); the base class checks the attempt's bound before each one, so a stream
past it is ended at the next token and generation stops there.

The context window is ``n_ctx`` and tokens are counted with the model's own tokenizer, so callers
can fit a prompt before sending it; a prompt that still does not fit raises
:class:`~hoprag.llm.errors.LLMContextLengthError` instead of llama.cpp's ValueError.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.llm import deadline as call_deadline
from hoprag.llm.base import DEFAULT_TIMEOUT, Completion, LLM, Message
from hoprag.llm.errors import LLMContextLengthError, LLMDependencyError, LLMError, LLMResponseError, LLMTimeoutError
from hoprag.llm.streaming import Delta
from hoprag.records import Usage

# llama-cpp-python's words for a prompt longer than the context
_TOO_LONG = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


class _Deadline:
    """A logits processor that notes when the deadline passes and then forces end-of-generation.

    llama-cpp-python calls it from a C callback, where an exception would be swallowed.
    """

    def __init__(self, deadline: float, eos: int) -> None:
        self.deadline = deadline
        self.eos = eos
        self.passed = False

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if not self.passed and time.monotonic() > self.deadline:
            self.passed = True
        if self.passed:
            scores[:] = -float("inf")
            scores[self.eos] = 0.0
        return scores


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise LLMDependencyError("llama-cpp-python", "local") from exc
    return llama_cpp


class LlamaCppLLM(LLM):
    """A GGUF chat model; ``n_ctx`` is the context window, ``n_threads`` None lets llama.cpp choose."""

    name = "llamacpp"

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int = 0,
        chat_format: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        path = Path(model_path).expanduser()
        super().__init__(str(path), timeout=timeout, **kwargs)
        if path.suffix.lower() != ".gguf":
            raise InputError("not a GGUF model file (expected a .gguf path)", source=str(path),
                             fix="pass --llm llamacpp:PATH/TO/MODEL.gguf")
        if not path.is_file():
            raise InputError("GGUF model file not found", source=str(path),
                             fix="check the path, or download a .gguf model and pass llamacpp:PATH.gguf")
        llama_cpp = _import_llama_cpp()
        self.seed = seed
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                seed=seed,
                chat_format=chat_format,
                verbose=verbose,
            )
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"llama.cpp cannot load the model: {exc}", model=str(path),
                           fix="check that the file is a complete GGUF model this llama-cpp-python supports") from exc
        self._lock = threading.Lock()
        self.context_window = n_ctx

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the model's own tokenizer."""
        with self._lock:
            return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    @property
    def spec(self) -> str:
        return f"llamacpp:{self.model}"

    def close(self) -> None:
        closer = getattr(self._llama, "close", None)
        if closer is not None:
            closer()

    def _complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None,
    ) -> Completion:
        timeout = self.attempt_timeout()
        options: dict[str, Any] = {
            "messages": [m.to_dict() for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": self.seed,
        }
        if json_schema is not None:
            options["response_format"] = {"type": "json_object", "schema": json_schema}
        deadline = None
        streamed = False
        if timeout is not None:  # waiting for the lock counts against the timeout too
            # the attempt's end as hoprag.llm.deadline holds it (the question's deadline included)
            end = call_deadline.current_end() or time.monotonic() + timeout
            deadline = _Deadline(end, self._llama.token_eos())
            if json_schema is None:
                options["logits_processor"] = [deadline]
            else:  # a grammar-constrained reply is streamed, so it can be abandoned at the deadline
                streamed = options["stream"] = True
                prompt_tokens = sum(self.count_tokens(m.content) for m in messages)
        with self._lock:
            try:
                if streamed:
                    data = _collect(self._llama.create_chat_completion(**options), deadline, prompt_tokens)
                else:
                    data = self._llama.create_chat_completion(**options)
            except (ValueError, RuntimeError) as exc:
                raise self._failure(exc) from exc
        if deadline is not None and (deadline.passed or time.monotonic() > deadline.deadline):
            error = LLMTimeoutError(f"generation did not finish within {timeout:.3g} s", model=self.model, timeout=timeout)
            error.retryable = False  # the same seed and prompt would take as long again
            raise error
        return _parse(data, self.model)

    def _stream(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Iterator[Delta]:
        prompt_tokens = sum(self.count_tokens(m.content) for m in messages)  # before the lock: it takes it too
        options: dict[str, Any] = {"messages": [m.to_dict() for m in messages], "max_tokens": max_tokens,
                                   "temperature": temperature, "seed": self.seed, "stream": True}
        with self._lock:
            chunks = None
            made = 0
            finish = None
            try:
                chunks = self._llama.create_chat_completion(**options)
                for chunk in chunks:
                    choice = chunk["choices"][0]
                    finish = choice.get("finish_reason") or finish
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        made += 1
                        yield Delta(piece)
            except (ValueError, RuntimeError) as exc:
                raise self._failure(exc) from exc
            except (KeyError, IndexError, TypeError) as exc:
                raise LLMResponseError(f"llama.cpp streamed a chunk without a choice: {exc}", model=self.model) from exc
            finally:
                closer = getattr(chunks, "close", None)
                if closer is not None:
                    closer()  # stops generation when the stream is abandoned
        # llama.cpp reports no usage on a stream: the prompt by the tokenizer, one token per piece
        yield Delta(usage=Usage(prompt_tokens, made), finish_reason=finish, model=self.model)

    def _failure(self, exc: Exception) -> LLMError:
        """llama.cpp's ValueError or RuntimeError as the LLM error it stands for."""
        too_long = _TOO_LONG.search(str(exc))
        if too_long:
            needed, window = int(too_long.group(1)), int(too_long.group(2))
            return LLMContextLengthError(
                f"the prompt ({needed} tokens) does not fit the context window of {window} tokens",
                model=self.model, window=window, prompt_tokens=needed,
            )
        return LLMError(f"llama.cpp failed: {exc}", model=self.model,
                        fix="shorten the prompt or raise n_ctx (the context window)")


def _collect(chunks: Any, deadline: _Deadline, prompt_tokens: int) -> dict[str, Any]:
    """A streamed chat completion as one response; stops reading (and generating) past the deadline."""
    parts: list[str] = []
    finish = None
    try:
        for chunk in chunks:
            choice = chunk["choices"][0]
            piece = (choice.get("delta") or {}).get("content")
            if piece:
                parts.append(piece)
            finish = choice.get("finish_reason") or finish
            if time.monotonic() > deadline.deadline:
                deadline.passed = True
                break
    finally:
        closer = getattr(chunks, "close", None)
        if closer is not None:
            closer()
    message = {"role": "assistant", "content": "".join(parts)}
    return {"choices": [{"message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(parts)}}


def _parse(data: Any, model: str) -> Completion:
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] or ""
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMResponseError(f"llama.cpp returned no message: {str(data)[:200]}", model=model) from exc
    usage = data.get("usage") or {}
    return Completion(
        text=str(text),
        usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
        model=model,
        raw=data,
        finish_reason=choice.get("finish_reason"),
    )
