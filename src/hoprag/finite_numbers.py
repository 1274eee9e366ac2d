"""One rule for every number hoprag reads: finite, and within what its field can hold.

Python's JSON reader accepts ``NaN``, ``Infinity`` and ``-Infinity`` (none of them JSON), reads
``1e400`` as infinity and a 400-digit integer as a number no float can hold; ``float("nan")`` takes
the text ``"nan"``; YAML has ``.nan`` and ``.inf``. Such a number either fails far from its file
(``OverflowError`` converting it, SQLite or numpy refusing it) or flows on silently: a NaN latency
makes p50 NaN, a NaN score ranks nowhere, and the report then holds ``NaN``, which no other JSON
tool reads. So it is refused where it is read, with the file, line and field:

- :func:`loads` and :data:`DECODER` are the JSON decoding of :mod:`hoprag.jsonl` (every JSONL
  file and whole-file JSON input hoprag reads): a number that is not finite, or that overflows a
  float, raises :class:`NumberError`; :func:`refusal` turns it into the :class:`InputError` naming
  the field's path (``steps[0].latency_ms``) and its line.
- :func:`finite_float` and :func:`bounded_int` are the record readers' conversions
  (``Trace.from_dict``, TREC columns, thresholds, feedback): a number given as text is held to the
  same rule, and a whole number must fit 64 bits (what numpy, SQLite and PostgreSQL store).
- :func:`first_refused` finds such a value in parsed data (the fast readers' free-form fields, a
  ``Case`` built in code).

Writers never write NaN or Infinity: ``json.dumps(..., allow_nan=False)`` in :mod:`hoprag.io.outputs`,
:mod:`hoprag.io.traces` and :mod:`hoprag.json_text`.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from hoprag.errors import InputError

__all__ = [
    "DECODER",
    "FIX",
    "INT_MAX",
    "INT_MIN",
    "NumberError",
    "bounded_int",
    "finite_float",
    "first_refused",
    "loads",
    "refusal",
]

#: the range of a whole-number field: a signed 64-bit integer
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
_FLOAT_DIGITS = len(str(int(sys.float_info.max)))  # an integer with fewer digits always fits a float
FIX = "write a finite number (JSON has no NaN or Infinity; leave the field out when it has no value)"


class NumberError(ValueError):
    """A number its field cannot hold. ``field`` names the field (a path when known), ``fix`` the remedy."""

    def __init__(self, reason: str, *, field: str | None = None, fix: str = FIX) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.reason, self.field, self.fix = reason, field, fix


def _shown(value: Any) -> str:
    """The value as a message quotes it: a 400-digit number by its first digits and length."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 24 else f"{text[:12]}… ({len(text)} characters)"


def _why(value: Any) -> str | None:
    """Why a parsed JSON value breaks the rule, or ``None`` when it does not."""
    kind = type(value)
    if kind is float:
        return None if math.isfinite(value) else f"{_shown(value)} is not a finite number"
    if kind is int and len(str(abs(value))) >= _FLOAT_DIGITS and abs(value) > sys.float_info.max:
        return f"{_shown(value)} is too large for a number"
    return None


def first_refused(value: Any) -> tuple[str, str] | None:
    """``(path, reason)`` of the first number in ``value`` (JSON-shaped data, walked in document
    order) that is not finite or overflows a float; ``None`` when there is none."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed([(f"{path}.{k}" if path else str(k), v) for k, v in item.items()]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(item)]))
        elif type(item) in (float, int):
            why = _why(item)
            if why:
                return path or "(the value)", why
    return None


def _float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise NumberError(f"{_shown(text)} is too large for a number (it reads as infinity)")
    return number


def _int(text: str) -> int:
    number = int(text)
    if len(text) >= _FLOAT_DIGITS and _why(number):
        raise NumberError(f"{_shown(text)} is too large for a number")
    return number


def _constant(text: str) -> Any:
    raise NumberError(f"{text} is not a finite number")


#: the decoder every JSON input goes through: ``json.JSONDecoder`` refusing what the rule refuses
DECODER = json.JSONDecoder(parse_float=_float, parse_int=_int, parse_constant=_constant)
_NUMBER_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')


def loads(text: str) -> Any:
    """``json.loads(text)`` under the rule: raises :class:`NumberError` (a ``ValueError``) for a
    number it refuses, ``json.JSONDecodeError`` as ``json.loads`` does."""
    if text.startswith("\ufeff"):  # json.loads's own refusal of a byte-order mark, word for word
        return json.loads(text)
    return DECODER.decode(text)


def refusal(text: str, *, source: str, line: int | None = None) -> InputError:
    """The :class:`InputError` for JSON ``text`` that :func:`loads` refused: the value as written,
    the field's path, and the line (counted within ``text`` when ``line`` is not given)."""
    path, why = "(unknown)", "a number that is not finite"
    try:
        found = first_refused(json.loads(text))
    except (ValueError, RecursionError):
        found = None
    if found:
        path, why = found
    for match in _NUMBER_OR_STRING.finditer(text):
        token = match.group(1)
        reason = _token_refused(token) if token else None
        if reason:
            why = reason
            if line is None:
                line = text.count("\n", 0, match.start()) + 1
            break
    return InputError(why, source=source, line=line, field=path, fix=FIX)


def _token_refused(token: str) -> str | None:
    """Why :data:`DECODER` refuses a number as written in JSON text, or ``None``."""
    try:
        if token.endswith(("Infinity", "NaN")):
            _constant(token)
        elif any(c in ".eE" for c in token):
            _float(token)
        else:
            _int(token)
    except NumberError as exc:
        return exc.reason
    return None


def finite_float(value: Any, field: str) -> float:
    """``float(value)`` for a number field; :class:`NumberError` when it is not finite (``NaN``,
    ``"inf"``) or overflows (``10**400``). Other bad values raise as ``float`` does."""
    try:
        number = float(value)
    except OverflowError:
        raise NumberError(f"{_shown(value)} is too large for a number", field=field) from None
    if math.isinf(number) and str(value).strip().lstrip("+-").lower() not in ("inf", "infinity"):
        raise NumberError(f"{_shown(value)} is too large for a number (it reads as infinity)", field=field)
    if not math.isfinite(number):
        raise NumberError(f"{_shown(value)} is not a finite number", field=field)
    return number


def bounded_int(value: Any, field: str, *, low: int = INT_MIN, high: int = INT_MAX) -> int:
    """``int(value)`` for a whole-number field, within ``[low, high]`` (by default 64 bits);
    :class:`NumberError` otherwise. Other bad values raise as ``int`` does."""
    try:
        number = int(value)
    except OverflowError:  # int(float("inf"))
        raise NumberError(f"{_shown(value)} is not a finite number", field=field) from None
    except ValueError:
        if isinstance(value, float) and math.isnan(value):
            raise NumberError("NaN is not a finite number", field=field) from None
        raise
    if not low <= number <= high:
        raise NumberError(f"{_shown(number)} is outside {low:,}..{high:,}", field=field,
                          fix=f"give a whole number from {low:,} to {high:,}")
    return number
