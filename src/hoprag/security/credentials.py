"""Credentials in text: found and masked as ``***`` wherever text is printed, logged or stored.

What counts as a credential:

* the password of a URL's user info (``http://user:s3cret@host`` → ``http://user:***@host``; user
  info without a password is often a token and is masked whole);
* the value of a secret-bearing URL query parameter (``api_key=``, ``key=``, ``token=``,
  ``access_token=``, ``sig=``, ``signature=``, ``X-Amz-Signature=`` and kin);
* the value of an ``Authorization`` header (``Bearer …``, ``Basic …``) and of a ``Bearer`` token;
* a ``NAME_API_KEY=…``-style assignment (``api_key``, ``access_token``, ``client_secret``, …);
* provider keys recognised by their shape (``sk-…``, ``ghp_…``, ``AKIA…``, ``xoxb-…``, ``AIza…``).

Only the secret is masked, never the text around it, so a message still names the host it could not
reach. A mask is never masked again: masking masked text changes nothing.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "find_secrets", "mask_credentials", "might_hold_secret"]

MASK = "***"

_URL_USERINFO = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,15}://(?P<info>[^\s/?#@]+(?:@[^\s/?#@]+)*)@")
_QUERY_SECRET = re.compile(
    r"[?&;](?:api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|"
    r"sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|"
    r"password|passwd|pwd|secret|client[_-]?secret)=(?P<value>[^&#\s\"'<>]+)",
    re.IGNORECASE,
)
# an Authorization value: after its scheme, or bare when it looks like a token ("authorization: required" is prose)
_AUTH_HEADER = re.compile(r"\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+"
                          r"(?P<value>[^\s\"',;]+)|(?P<bare>(?=[^\s\"',;]*\d)[^\s\"',;]{16,}))", re.IGNORECASE)
# a token after "Bearer": long and with a digit, so "the bearer of bad news" is prose
_BEARER = re.compile(r"\bbearer\s+(?P<value>(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,})", re.IGNORECASE)
_ASSIGNED = re.compile(
    r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|"
    r"client[_-]?secret|secret[_-]?key|private[_-]?key)[\"']?\s*[=:]\s*[\"']?(?P<value>[^\s\"'&,;<>]{4,})",
    re.IGNORECASE,
)
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<value>sk-(?:[A-Za-z0-9]+-)?[A-Za-z0-9_-]{12,}|(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"
)
# Every pattern needs one of these; most text holds none and is returned at once.
_CANDIDATE = re.compile(r"://|=|[Bb][Ee][Aa][Rr][Ee][Rr]|[Aa]uthorization|sk-|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|AKIA|"
                        r"xox[abprs]-|AIza|[Kk][Ee][Yy]|[Tt][Oo][Kk][Ee][Nn]|[Ss][Ee][Cc][Rr][Ee][Tt]")
# a value that is already a mask, or a placeholder of the redaction (<EMAIL_1>), is not a secret
_MASKED = re.compile(r"\**|<[A-Z][A-Z0-9_]*>")


def might_hold_secret(text: str) -> bool:
    """False when no credential pattern can match ``text`` (a cheap test before :func:`find_secrets`)."""
    return _CANDIDATE.search(text) is not None


def _userinfo_secret(match: re.Match[str]) -> tuple[int, int]:
    start, end = match.span("info")
    colon = match.group("info").find(":")
    return (start + colon + 1, end) if colon >= 0 else (start, end)


def find_secrets(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every credential value in ``text``, in order, none overlapping."""
    if not might_hold_secret(text):
        return []
    spans: list[tuple[int, int]] = []
    if "://" in text:
        spans.extend(_userinfo_secret(m) for m in _URL_USERINFO.finditer(text))
    for pattern in (_QUERY_SECRET, _BEARER, _ASSIGNED, _KEY_SHAPES):
        spans.extend(m.span("value") for m in pattern.finditer(text))
    spans.extend(m.span("value" if m.group("value") is not None else "bare") for m in _AUTH_HEADER.finditer(text))
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if end <= start or _MASKED.fullmatch(text, start, end):
            continue
        if out and start < out[-1][1]:  # overlapping finds (a key= inside a URL) join into one span
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def mask_credentials(text: str) -> str:
    """``text`` with every credential value replaced by ``***``; text without one is returned as is."""
    spans = find_secrets(text)
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], MASK]
        last = end
    parts.append(text[last:])
    return "".join(parts)
