"""Indented JSON text, byte for byte what ``json.dumps(value, indent=2, ensure_ascii=False)`` writes.

With ``indent`` set, the standard library encodes in Python, one call per value: 0.6 CPU-s for the
report of 10,000 evaluated cases, whose bulk is rows of plain values. :func:`dumps_indented` walks
the containers itself and hands every container that holds only plain values (strings, numbers,
booleans, ``None``) to the C encoder in one call, with the line break and indentation as its item
separator. The output is the same because JSON text holds a raw line break only where indentation
puts one (a line break inside a string is written ``\\n``). NaN and Infinity are refused
(``ValueError``), as ``allow_nan=False`` refuses them: no other JSON tool reads them
(:mod:`hoprag.finite_numbers`).
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps_indented", "dumps_printed"]

_PLAIN = frozenset({str, int, float, bool, type(None)})
_KEY = json.encoder.encode_basestring  # type: ignore[attr-defined]  # a str key as ensure_ascii=False writes it


def dumps_indented(value: Any, indent: int = 2) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=False)``, faster for many flat containers."""
    parts: list[str] = []
    _write(value, 0, indent, parts)
    return "".join(parts)


def _write(value: Any, level: int, indent: int, parts: list[str]) -> None:
    kind = type(value)
    if kind is dict:
        if value and all(type(k) is str for k in value):
            inner = "\n" + " " * (indent * (level + 1))
            if all(type(v) in _PLAIN for v in value.values()):
                parts.append(_flat(value, inner, level, indent))
                return
            parts.append("{")
            first = True
            for key, item in value.items():
                parts.append(inner if first else "," + inner)
                first = False
                parts.append(_KEY(key) + ": ")
                _write(item, level + 1, indent, parts)
            parts.append("\n" + " " * (indent * level) + "}")
            return
    elif kind is list:
        if value:
            inner = "\n" + " " * (indent * (level + 1))
            if all(type(v) in _PLAIN for v in value):
                parts.append(_flat(value, inner, level, indent))
                return
            parts.append("[")
            for i, item in enumerate(value):
                parts.append(inner if i == 0 else "," + inner)
                _write(item, level + 1, indent, parts)
            parts.append("\n" + " " * (indent * level) + "]")
            return
    # anything else (a plain value, an empty container, a tuple, other key types): the standard
    # encoder, its lines moved to this depth
    text = json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)
    parts.append(text.replace("\n", "\n" + " " * (indent * level)) if level else text)


def _flat(value: dict[str, Any] | list[Any], inner: str, level: int, indent: int) -> str:
    """A non-empty container of plain values: one C-encoder call with the indentation as separator."""
    text = json.dumps(value, ensure_ascii=False, separators=("," + inner, ": "), allow_nan=False)
    return text[0] + inner + text[1:-1] + "\n" + " " * (indent * level) + text[-1]


def dumps_printed(value: Any) -> str:
    """JSON a command prints: indented, a value that was not measured (NaN, infinite) as ``null``,
    anything else JSON cannot hold (a datetime, a path) as its text. Never ``NaN``: no other tool reads it."""
    return dumps_indented(_printable(value))


def _printable(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_printable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)
