"""Pydantic's validation errors in the house words: where, which field, what was wrong, and the fix.

Every reader that validates user input with pydantic (cases, manifests, policies, price tables,
settings, the service's request bodies, the command line's own values) hands the
``ValidationError`` to :func:`validation_error` (a :class:`~hoprag.errors.InputError`) or to
:func:`describe` (the text and the fix, for the HTTP service). The reader says what the input is
(``what``), where it came from (``source``, ``line``) and, when it knows better than the generic
advice, the fix per field (``fixes``). No message carries pydantic's own phrasing ("Input should
be", "validation error for", "Value error,", "type=") and no value is quoted beyond
:data:`QUOTE_LIMIT` characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hoprag.errors import InputError

__all__ = ["QUOTE_LIMIT", "check_choice", "Problem", "describe", "is_validation_error", "plain_words", "problems", "quote",
           "validation_error"]

#: characters of a user's value a message may quote (a 3 MB value is not echoed back)
QUOTE_LIMIT = 200
#: problems listed in one message; the rest are counted
_SHOWN = 3


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` cut to ``limit`` characters (with how much was cut), for quoting in a message."""
    if isinstance(value, (bytes, bytearray)):
        text = repr(bytes(value[: limit + 1]))
    elif isinstance(value, str):
        text = repr(value[: limit + 1])
    else:
        try:
            text = repr(value)
        except Exception:  # a value whose repr fails is still named by its type
            text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, (str, bytes, bytearray, list, dict, tuple)) else None
    more = f" ({size:,} long)" if size is not None else ""
    return text[:limit] + "…" + more


def is_validation_error(exc: BaseException) -> bool:
    """Whether ``exc`` is pydantic's ``ValidationError`` (checked by name: pydantic is not imported here)."""
    kind = type(exc)
    return kind.__name__ == "ValidationError" and kind.__module__.startswith(("pydantic", "pydantic_core"))


# What a JSON/YAML reader calls each kind of value, in the user's words.
_KINDS = {
    "string": "text", "str": "text", "int": "a whole number", "integer": "a whole number", "float": "a number",
    "number": "a number", "bool": "true or false", "boolean": "true or false", "list": "a list",
    "tuple": "a list", "set": "a list", "dict": "a mapping (key: value)", "dictionary": "a mapping (key: value)",
    "mapping": "a mapping (key: value)", "model": "a mapping (key: value)", "object": "a mapping (key: value)",
    "date": "a date (YYYY-MM-DD)", "datetime": "a date and time (ISO 8601)", "url": "a URL",
    "none": "null", "bytes": "text", "uuid": "a UUID", "decimal": "a number", "enum": "one of the allowed values",
}


@dataclass(frozen=True)
class Problem:
    """One field's problem: its path (``facts.f1.spans.0.start``), what was wrong, and the fix."""

    field: str
    wrong: str
    fix: str


def _field(loc: Sequence[Any]) -> str:
    # tagged unions and function validators add names of their own to the path: keep only the user's keys
    parts = [str(p) for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))]
    return ".".join(parts)


def _kind_of(error_type: str) -> str:
    stem = error_type.split("_")[0]
    return _KINDS.get(stem, "a valid value")


def _got(error: Mapping[str, Any]) -> str:
    if "input" not in error:
        return ""
    value = error["input"]
    if isinstance(value, dict) and not value:
        return " (got an empty mapping)"
    if isinstance(value, (dict, list)) and error.get("type") in ("missing",):
        return ""
    kind = {dict: "a mapping", list: "a list", bool: "a boolean", type(None): "null"}.get(type(value))
    if kind and error.get("type", "").endswith(("_type", "_parsing")):
        return f" (got {kind})"
    return f" (got {quote(value, 60)})"


def plain_words(error: Mapping[str, Any]) -> tuple[str, str]:
    """``(what was wrong, the fix)`` for one item of ``ValidationError.errors()``."""
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    field = _field(error.get("loc", ())) or "the value"
    named = f"'{field}' " if error.get("loc") else ""  # a bare value (a command-line flag) has no field name
    got = _got(error)
    if kind == "missing":
        return "is missing", f"add '{field}'"
    if kind == "extra_forbidden":
        return "is an unknown field", f"remove '{field}' or correct its spelling"
    if kind in ("string_unicode", "string_sub_type") or (kind == "string_type" and isinstance(error.get("input"), bytes)):
        return "holds bytes that are not UTF-8 text", "save it as UTF-8 text"
    if kind == "literal_error" or kind == "enum":
        expected = str(ctx.get("expected", "")).strip()
        return f"is not one of the allowed values{got}", f"use one of: {expected}" if expected else "use an allowed value"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {"greater_than": ("more than", "gt"), "greater_than_equal": ("at least", "ge"),
                 "less_than": ("less than", "lt"), "less_than_equal": ("at most", "le")}[kind]
        bound = ctx.get(words[1])
        return f"must be {words[0]} {bound}{got}", f"give a value {words[0]} {bound}"
    if kind in ("string_too_short", "too_short"):
        least = ctx.get("min_length", 1)
        unit = "character" if kind.startswith("string") else "item"
        if least == 1:
            return "is empty", f"give {named}a value"
        return f"needs at least {least} {unit}s{got}", f"give at least {least} {unit}s"
    if kind in ("string_too_long", "too_long"):
        most = ctx.get("max_length")
        unit = "characters" if kind.startswith("string") else "items"
        size = error.get("input")
        have = f" (got {len(size):,})" if isinstance(size, (str, list, tuple, dict)) else ""
        return f"is longer than {most:,} {unit}{have}", f"shorten it to at most {most:,} {unit}"
    if kind == "finite_number":
        return f"is not a finite number{got}", "give a finite number such as 0.5"
    if kind == "int_from_float":
        return f"must be a whole number{got}", "drop the fraction (e.g. 3, not 3.5)"
    if kind in ("json_invalid", "json_type"):
        detail = str(ctx.get("error", "")).strip()
        return f"is not valid JSON{' (' + detail + ')' if detail else ''}", "correct the JSON syntax"
    if kind.endswith(("_type", "_parsing")):
        return f"must be {_kind_of(kind)}{got}", f"give {named}as {_kind_of(kind)}".replace("give as", "give")
    # a validator of our own raised ValueError or AssertionError: its text is already the house's words
    message = str(error.get("msg", "is invalid"))
    message = re.sub(r"^(Value error|Assertion failed), ?", "", message)
    message = re.sub(r"^Input should be\b", "must be", message)
    return message, ""


def problems(exc: Any, *, fixes: Mapping[str, str] | None = None, fix: str | None = None) -> list[Problem]:
    """Every problem of ``exc`` (a pydantic ``ValidationError``), each with its fix.

    ``fixes`` maps a field path (or its first part) to the fix to give for it; ``fix`` is the fix of
    last resort, for a problem whose kind has no specific one.
    """
    found: list[Problem] = []
    for error in exc.errors(include_url=False):
        field = _field(error.get("loc", ()))
        wrong, generic = plain_words(error)
        chosen = None
        if fixes:
            chosen = fixes.get(field) or fixes.get(field.split(".")[0])
        found.append(Problem(field=field, wrong=wrong, fix=chosen or generic or fix or "correct the value"))
    return found


def describe(exc: Any, *, what: str = "input", fixes: Mapping[str, str] | None = None,
             fix: str | None = None) -> tuple[str, str]:
    """``(message, fix)`` for ``exc``: ``"invalid {what}: field: what was wrong; …"`` and the fixes."""
    found = problems(exc, fixes=fixes, fix=fix)
    parts = [f"{p.field}: {p.wrong}" if p.field else p.wrong for p in found[:_SHOWN]]
    if len(found) > _SHOWN:
        parts.append(f"and {len(found) - _SHOWN} more")
    fixes_given: list[str] = []
    for p in found[:_SHOWN]:
        if p.fix not in fixes_given:
            fixes_given.append(p.fix)
    if fix and len(found) > _SHOWN and fix not in fixes_given:
        fixes_given.append(fix)
    return f"invalid {what}: " + "; ".join(parts), "; ".join(fixes_given) or (fix or "correct the value")


def validation_error(exc: Any, *, what: str = "input", source: str | None = None, line: int | None = None,
                     fixes: Mapping[str, str] | None = None, fix: str | None = None) -> InputError:
    """The :class:`InputError` to raise for ``exc``: where (``source``:``line``), the fields, what was wrong, the fix."""
    found = problems(exc, fixes=fixes, fix=fix)
    if len(found) == 1 and found[0].field:  # the house form: "…: invalid case: is missing (field 'query')"
        return InputError(f"invalid {what}: {found[0].wrong}", source=source, line=line, field=found[0].field,
                          fix=found[0].fix)
    message, advice = describe(exc, what=what, fixes=fixes, fix=fix)
    return InputError(message, source=source, line=line, fix=advice)


def check_choice(value: str, valid: Sequence[str], what: str) -> str:
    """``value`` when it is one of ``valid``, else a :class:`~hoprag.errors.ConfigError` listing them."""
    if value not in valid:
        import difflib

        from hoprag.errors import ConfigError

        close = difflib.get_close_matches(value, list(valid), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"unknown {what} {quote(value, 80)}; valid: {', '.join(valid)}. "
                          f"Fix: pass one of them{hint}")
    return value
