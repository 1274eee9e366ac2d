"""Any OpenAI-compatible chat server over HTTP: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio.

The base URL comes from ``base_url=``, else ``HOPRAG_BASE_URL``, else ``https://api.openai.com/v1``;
``/v1`` is appended when the URL has no ``/v1`` in its path. The key comes from ``api_key=``, else
``HOPRAG_API_KEY``, else ``OPENAI_API_KEY``; it is required up front only for api.openai.com, and
otherwise only once the server answers 401/403 (a local server needs none).

JSON requests send ``response_format`` ``json_schema`` (constrained decoding: OpenAI, vLLM, the
llama.cpp C++ server); a server that rejects it (HTTP 400/422, or a 5xx whose body names
``response_format``) is asked again with ``json_object``
carrying a ``schema`` (llama-cpp-python's server constrains to it), then plain ``json_object``, then
the prompt alone; the backend remembers the level that worked. Every level also states the schema
in the prompt, and the base class validates the reply either way.

Every request goes through :func:`hoprag.llm.deadline.http_client`: the whole attempt, from connecting
to the last byte of the body, ends by its wall-clock bound however the server trickles or stalls.
Connecting has its own short timeout (``connect_timeout``, 2 s): a port nobody listens on, or a host
that drops packets, fails in seconds and is not retried, while the read timeout (``timeout``) is
the model's time to answer. A 400 whose body says the prompt exceeds the context (OpenAI, vLLM,
llama.cpp and llama-cpp-python's servers each word it their way) raises
:class:`~hoprag.llm.errors.LLMContextLengthError` with the window and prompt size the body names;
it is not mistaken for a refused JSON mode.

A streamed call (:meth:`~hoprag.llm.base.LLM.stream`) sends ``stream: true`` and reads the server's
Server-Sent Events through the same bounded client, handing out each content delta as it arrives;
it asks for the usage in the last event (``stream_options.include_usage``) and, from a server that
refuses that option, streams without it (the base class then estimates the usage).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from hoprag.errors import ConfigError
from hoprag.llm import deadline as call_deadline
from hoprag.llm.base import DEFAULT_TIMEOUT, Completion, LLM, Message
from hoprag.llm.server_replies import (
    context_exceeded,
    context_numbers,
    error_detail,
    rejects_format,
    retry_after,
    set_response_format,
)
from hoprag.llm.sse import chat_deltas
from hoprag.llm.streaming import Delta
from hoprag.llm.errors import (
    LLMContextLengthError,
    LLMDependencyError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnavailableError,
    MissingAPIKeyError,
)
from hoprag.records import Usage

if TYPE_CHECKING:
    import httpx

OPENAI_BASE_URL = "https://api.openai.com/v1"
BASE_URL_VARIABLE = "HOPRAG_BASE_URL"
KEY_VARIABLES = ("HOPRAG_API_KEY", "OPENAI_API_KEY")
JSON_MODES = ("json_schema", "json_object+schema", "json_object", "prompt")
DEFAULT_CONNECT_TIMEOUT = 2.0

def resolve_base_url(base_url: str | None = None) -> str:
    """The API root ending in ``/v1`` (or wherever the given path already names ``/v1``)."""
    from hoprag.llm.base_url import check_base_url

    given = base_url or os.environ.get(BASE_URL_VARIABLE)
    flag = "--base-url" if base_url else BASE_URL_VARIABLE
    url = (check_base_url(given, flag=flag) if given else OPENAI_BASE_URL).rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        from hoprag.security.boundary import shown

        raise ConfigError(
            f"LLM base URL {shown(url, 'url')!r} is not an http(s) URL; pass e.g. --base-url http://127.0.0.1:8080/v1"
            f" or set {BASE_URL_VARIABLE}"
        )
    if "/v1" not in parts.path:
        url += "/v1"
    return url


def resolve_api_key(api_key: str | None = None) -> tuple[str | None, str | None]:
    """(key, where it came from): the argument, then each of KEY_VARIABLES; (None, None) if none."""
    if api_key:
        return api_key, "api_key"
    for name in KEY_VARIABLES:
        value = os.environ.get(name)
        if value:
            return value, name
    return None, None


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise LLMDependencyError("httpx", "llm") from exc
    return httpx


class OpenAICompatLLM(LLM):
    """Chat completions at ``{base_url}/chat/completions``; ``json_mode`` fixes the JSON level."""

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        json_mode: str = "auto",
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, timeout=timeout, **kwargs)
        #: sent as the request's ``seed`` when set (servers that sample honour it; a grader pins it)
        self.seed = seed
        if connect_timeout <= 0:
            raise ConfigError(f"connect_timeout must be positive seconds, got {connect_timeout}")
        self.connect_timeout = connect_timeout
        if not model:
            raise ConfigError("the openai backend needs a model name: openai:MODEL (e.g. openai:gpt-4o-mini)")
        if json_mode != "auto" and json_mode not in JSON_MODES:
            raise ConfigError(f"json_mode {json_mode!r} is not one of: auto, {', '.join(JSON_MODES)}")
        self._httpx = _import_httpx()
        self.base_url = resolve_base_url(base_url)
        self.url = self.base_url + "/chat/completions"
        self._api_key, self._key_source = resolve_api_key(api_key)
        if self._api_key is None and urlsplit(self.base_url).hostname == "api.openai.com":
            raise MissingAPIKeyError(f"{self.base_url} needs an API key and none was given", model=model)
        self._json_level = 0 if json_mode == "auto" else JSON_MODES.index(json_mode)
        self._level_lock = threading.Lock()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # every request keeps the attempt's wall-clock bound (hoprag.llm.deadline), not only a per-read timeout
        self._client: httpx.Client = call_deadline.http_client(self.base_url, headers=headers,
                                                               timeout=self._timeouts(timeout))

    @property
    def display_url(self) -> str:
        """The base URL as messages show it: a password or key in it masked (``user:***@``)."""
        from hoprag.security.boundary import shown

        return shown(self.base_url, "url")

    @property
    def json_mode(self) -> str:
        """The JSON level this server accepted last (or will be tried first)."""
        return JSON_MODES[self._json_level]

    def close(self) -> None:
        self._client.close()

    def _timeouts(self, read: float | None) -> httpx.Timeout:
        connect = self.connect_timeout if read is None else min(self.connect_timeout, read)
        return self._httpx.Timeout(read, connect=connect)

    def list_models(self) -> list[str]:
        """Model ids the server offers (GET /models)."""
        response = self._send("GET", self.base_url + "/models", None)
        self._raise_for_status(response)
        data = self._read_json(response).get("data")
        return [str(m.get("id")) for m in data or [] if isinstance(m, dict)]

    def _complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        with self._level_lock:
            first_level = level = self._json_level
        while True:
            if json_schema is not None:
                set_response_format(body, JSON_MODES[level], json_schema)
            response = self._send("POST", self.url, body)
            rejected = json_schema is not None and rejects_format(response) and not context_exceeded(response)
            if not rejected or JSON_MODES[level] == "prompt":
                break
            level += 1
        if level != first_level and response.status_code < 400:
            # Remember only a level that worked: a 400 for another reason must not disable constraints.
            with self._level_lock:
                self._json_level = max(self._json_level, level)
        self._raise_for_status(response)
        return self._parse(self._read_json(response))

    def _stream(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Iterator[Delta]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.seed is not None:
            body["seed"] = self.seed
        timeout = self.attempt_timeout()
        with self._transport_errors(self.url, timeout):
            refused = yield from self._events(body, timeout)
            if refused:  # an older server refuses the option: stream without the usage
                del body["stream_options"]
                yield from self._events(body, timeout)

    def _events(self, body: dict[str, Any], timeout: float | None) -> Generator[Delta, None, bool]:
        """One streamed request's deltas; True (and nothing yielded) when the server refused ``stream_options``."""
        with self._client.stream("POST", self.url, json=body, timeout=self._timeouts(timeout),
                                 headers={"Accept": "text/event-stream"}) as response:
            if response.status_code >= 400:
                response.read()
                if "stream_options" in body and response.status_code in (400, 422) and "stream_options" in response.text:
                    return True
                self._raise_for_status(response)
            yield from chat_deltas(response.iter_lines(), url=self.url, model=self.model)
        return False

    def _send(self, method: str, url: str, body: dict[str, Any] | None) -> httpx.Response:
        timeout = self.attempt_timeout()
        with self._transport_errors(url, timeout):
            return self._client.request(method, url, json=body, timeout=self._timeouts(timeout))

    @contextmanager
    def _transport_errors(self, url: str, timeout: float | None) -> Iterator[None]:
        """httpx's transport errors as the LLM errors they stand for (a dead host, a timeout, a cut)."""
        httpx = self._httpx
        try:
            yield
        except httpx.ConnectTimeout as exc:
            # Nothing answered the connection: a dead host, not a slow model. Not worth retrying.
            raise LLMUnavailableError(
                url, f"no connection within {min(self.connect_timeout, timeout or self.connect_timeout):g} s",
                model=self.model,
            ) from exc
        except httpx.TimeoutException as exc:
            raise LLMTimeoutError(
                f"no complete answer from {url} within {_seconds(timeout)} s ({type(exc).__name__}: {exc})",
                model=self.model,
                timeout=timeout,
            ) from exc
        except httpx.ConnectError as exc:
            raise LLMUnavailableError(url, str(exc) or "connection failed", model=self.model) from exc
        except httpx.RemoteProtocolError as exc:
            error = LLMResponseError(f"{url} closed the connection mid-response: {exc}", model=self.model,
                                     fix="check the server's log; the call is retried")
            error.retryable = True  # a cut connection is transient; a malformed body is not
            raise error from exc
        except httpx.TransportError as exc:
            raise LLMUnavailableError(url, f"{type(exc).__name__}: {exc}", model=self.model) from exc

    def _raise_for_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        url = str(response.request.url)
        detail = error_detail(response)
        if status in (401, 403):
            if self._api_key is None:
                message = f"{url} requires an API key (HTTP {status}: {detail}) and none was given"
            else:
                message = f"{url} rejected the API key from {self._key_source} (HTTP {status}: {detail})"
            raise MissingAPIKeyError(message, variable=KEY_VARIABLES[0], model=self.model)
        if status == 429:
            raise LLMRateLimitError(f"{url} is rate limiting (HTTP 429: {detail})", model=self.model,
                                    retry_after=retry_after(response))
        if status == 408:
            raise LLMTimeoutError(f"{url} timed out the request (HTTP 408: {detail})", model=self.model,
                                  timeout=self.attempt_timeout())
        if status in (400, 413, 422) and context_exceeded(response):
            window, needed = context_numbers(response.text)
            sizes = f" (window {window} tokens, prompt {needed})" if window and needed else (
                f" (window {window} tokens)" if window else "")
            raise LLMContextLengthError(f"{url}: the prompt does not fit the model's context{sizes}: {detail}",
                                        model=self.model, window=window, prompt_tokens=needed)
        if status >= 500:
            raise LLMServerError(f"{url} failed (HTTP {status}: {detail})", model=self.model, status=status)
        if status == 404:
            raise LLMError(f"{url} answered 404: {detail}", model=self.model,
                           fix="check the base URL (the API root, usually ending in /v1) and the model name")
        raise LLMError(f"{url} refused the request (HTTP {status}: {detail})", model=self.model)

    def _read_json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as exc:
            raise LLMResponseError(
                f"{response.request.url} returned a body that is not valid JSON (truncated?): {response.text[:200]!r}",
                model=self.model,
                fix="check that the base URL points at an OpenAI-compatible API and the server's log",
            ) from exc
        if not isinstance(data, dict):
            raise LLMResponseError(f"{response.request.url} returned JSON that is not an object: {data!r:.200}",
                                   model=self.model)
        return data

    def _parse(self, data: dict[str, Any]) -> Completion:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMResponseError(f"{self.url} returned no choices: {str(data)[:200]}", model=self.model)
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise LLMResponseError(f"{self.url} returned a choice without a message: {str(choices[0])[:200]}",
                                   model=self.model)
        content = message.get("content")
        if content is None and message.get("refusal"):
            raise LLMError(f"the model refused: {message['refusal']}", model=self.model)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Completion(
            text=str(content or ""),
            usage=Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))),
            model=str(data.get("model") or self.model),
            raw=data,
            finish_reason=choices[0].get("finish_reason"),
        )


def _seconds(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:.3g}"


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
