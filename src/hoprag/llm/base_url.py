"""The one check of an OpenAI-compatible server's URL (``--base-url``, ``HOPRAG_BASE_URL``, ``base_url=``).

Called where the URL enters: :class:`~hoprag.llm.settings.LLMSettings` (the CLI's model flags and
the service), ``resolve_base_url`` (every backend and the service's stream) and ``hoprag serve``.
A URL that ``urllib`` cannot split (``http://[::1/v1``), one that is not http(s), has no host or a
port outside 1-65535 is a ConfigError naming it, saying what is wrong and how to write it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from hoprag.errors import ConfigError

__all__ = ["check_base_url"]

_FIX = ("give it as http://HOST:PORT/v1, e.g. --base-url http://127.0.0.1:8080/v1 "
        "(an IPv6 host goes in brackets: http://[::1]:8080/v1)")


def check_base_url(url: str, *, flag: str = "--base-url", fix: str = _FIX) -> str:
    """``url`` stripped, when it is an http(s) URL with a host and a valid port; else a ConfigError
    (``fix``: how to write it, for another flag than ``--base-url``)."""
    from hoprag.security.boundary import shown  # a password in the URL is never echoed
    from hoprag.validation_messages import quote

    text = url.strip() if isinstance(url, str) else ""

    def refuse(why: str) -> ConfigError:
        return ConfigError(f"{flag} {quote(shown(text, 'url'), 120)} {why}. Fix: {fix}")

    if not text:
        raise refuse("is empty")
    try:
        parts = urlsplit(text)
        port = parts.port  # raises for a port that is not a number or is out of range
        host = parts.hostname
    except ValueError as exc:
        raise refuse(f"is not a URL that can be read ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise refuse(f"is not an http(s) URL (scheme {parts.scheme!r})" if parts.scheme else "is not an http(s) URL (it has no http:// or https://)")
    if not host:
        raise refuse("names no host")
    if port == 0:
        raise refuse("has port 0; a port is 1-65535")
    return text
