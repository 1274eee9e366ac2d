"""JSONL reading for records: errors name the file, line and field; a line cut off mid-write is found.

Numbers are read under :mod:`hoprag.finite_numbers` (no NaN, no Infinity, nothing that overflows a
float). Writing a user's file goes through the output guard (:mod:`hoprag.io.outputs`:
``write_records``; traces: :mod:`hoprag.io.traces`), which sits above this module.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hoprag.errors import InputError
from hoprag.files import open_text
from hoprag.finite_numbers import DECODER, NumberError, loads, refusal

T = TypeVar("T")


def read_jsonl_dicts(
    path: str | Path, what: str = "JSONL file", *, allow_empty: bool = True, fast: Callable[[str], Any] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; a bad line raises naming file and line.

    ``what`` names the file in errors ("cases file"); ``allow_empty=False`` refuses a file without a
    single record. Unreadable files fail as :func:`hoprag.files.open_text` describes. ``fast`` reads
    a well-formed line straight into its record, or returns ``None``: each line is offered to it first,
    a line it reads is yielded as that record (not a dict), and any other line is decoded and checked
    as without it, so every error stays the same.
    """
    path = Path(path)
    with open_text(path, what, allow_empty=allow_empty) as lines:
        found = yield from iter_jsonl_dicts(lines, source=str(path), fast=fast)
    if not found and not allow_empty:
        raise InputError(f"{what} holds no records (only blank lines)", source=str(path),
                         fix=f"pass a {what} with one JSON object per line")


def iter_jsonl_dicts(
    lines: Iterable[str], *, source: str, fast: Callable[[str], Any] | None = None
) -> Generator[tuple[int, dict[str, Any]], None, int]:
    """``(line_number, object)`` for each non-blank line of text already read (``source`` names it).

    Returns the number of records. The common case (a line that parses) costs one decode call:
    blank lines and errors are sorted out only when decoding fails. ``fast``: see :func:`read_jsonl_dicts`.
    """
    count = 0
    for number, line in enumerate(lines, start=1):
        if fast is not None:
            record = fast(line)
            if record is not None:
                count += 1
                yield number, record
                continue
        obj = decode_line(line, source=source, number=number)
        if obj is not None:
            count += 1
            yield number, obj
    return count


def decode_line(line: str, *, source: str, number: int) -> dict[str, Any] | None:
    """The JSON object on line ``number`` of ``source`` (``None`` for a blank line); a line that is
    not one JSON object raises :class:`InputError` naming it. The common case costs one decode call."""
    try:
        obj = _DECODER.decode(line)
    except (ValueError, RecursionError):
        if not line.strip():
            return None
        # raises the InputError that says what is wrong (a value only if the failure was the stack's)
        obj = parse_json(line, source=source, line=number, fix="make every line one complete JSON object")
    if "\\u" in line and _SURROGATE_ESCAPE.search(line):
        _refuse_lone_surrogates(obj, source=source, line=number)
    if type(obj) is not dict:
        raise InputError(
            f"expected a JSON object, got {type(obj).__name__}",
            source=source,
            line=number,
            fix="make every line one JSON object",
        )
    return obj


def parse_json(text: str, *, source: str, line: int | None = None, fix: str, what: str | None = None) -> Any:
    """``json.loads`` whose every failure is an :class:`InputError` naming ``source`` (and ``line``).

    Beyond syntax errors this covers integers longer than Python converts (``ValueError``),
    nesting deeper than the parser's recursion limit, a ``\\ud800``-style escape of half a UTF-16
    pair (Python accepts it, but the string can then never be written as UTF-8 again), and a number
    :mod:`hoprag.finite_numbers` refuses (``NaN``, ``Infinity``, ``1e400``), named by its field.
    ``what`` names the content in the message.
    """
    try:
        value = loads(text)
        if "\\u" in text and _SURROGATE_ESCAPE.search(text):
            _refuse_lone_surrogates(value, source=source, line=line)
        return value
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if line is not None else f"line {exc.lineno}, column {exc.colno}"
        head = f"{what} is not valid JSON" if what else "malformed JSON"
        raise InputError(f"{head} ({exc.msg} at {where})", source=source,
                         line=line if line is not None else exc.lineno, fix=fix) from None
    except NumberError:
        raise refusal(text, source=source, line=line) from None
    except ValueError as exc:  # an integer of more digits than int() accepts
        raise InputError(f"unreadable JSON value ({exc})", source=source, line=line, fix=fix) from None
    except RecursionError:
        raise InputError("JSON nested too deeply to read", source=source, line=line, fix=fix) from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_DECODER = DECODER


def _refuse_lone_surrogates(value: Any, *, source: str, line: int | None) -> None:
    """Raise if any string (key or value) in ``value`` holds an unpaired surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"a string holds half of a UTF-16 surrogate pair ({item[exc.start]!r}), which is not text",
                    source=source,
                    line=line,
                    fix="remove that lone \\ud800-\\udfff escape, or give the whole pair (e.g. \\ud83d\\ude00)",
                ) from None


def read_records(path: str | Path, record_type: type[T]) -> list[T]:
    """Read a JSONL file of one record type; a missing field names file, line and field."""
    records: list[T] = []
    for number, obj in read_jsonl_dicts(path):
        try:
            records.append(record_type.from_dict(obj))  # type: ignore[attr-defined]
        except KeyError as exc:
            raise InputError(
                f"missing field for {record_type.__name__}",
                source=str(path),
                line=number,
                field=str(exc.args[0]),
                fix=f"add '{exc.args[0]}' to every record",
            ) from None
        except NumberError as exc:
            raise InputError(f"invalid {record_type.__name__}: {exc.reason}", source=str(path), line=number,
                             field=exc.field, fix=exc.fix) from None
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"invalid {record_type.__name__}: {exc}", source=str(path), line=number
            ) from None
    return records


@dataclass(frozen=True)
class TornLine:
    """The last line of a JSONL file when a write was cut off: no line end, and not a complete object.

    ``offset`` is the byte offset where the line starts (so the length of the complete part),
    ``size`` its length in bytes, ``head`` its first bytes (to tell whose line it was).
    """

    line: int
    offset: int
    size: int
    head: bytes = b""


_BLOCK = 1 << 16


def torn_last_line(path: str | Path) -> TornLine | None:
    """The torn last line of ``path``, or ``None`` if the file ends with a complete line.

    Appends write a record and its line end in one call, so a run killed mid-write leaves a last
    line without ``\\n`` that does not parse. A last line that parses as a JSON object but lacks its
    line end is complete (other writers omit the final newline): see :func:`end_with_newline`.
    A file that cannot be opened has no torn line here: its readers say what is wrong with it.
    """
    try:
        return _torn_last_line(Path(path))
    except OSError:
        return None


def _torn_last_line(path: Path) -> TornLine | None:
    with path.open("rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        start = _last_line_start(handle, end)
        if start == end:
            return None
        handle.seek(start)
        tail = handle.read()
        if not tail.strip():
            return None
        try:
            if isinstance(json.loads(tail.decode("utf-8")), dict):
                return None
        except (UnicodeDecodeError, ValueError, RecursionError):
            pass
        handle.seek(0)
        line = 1
        done = 0
        while done < start:
            block = handle.read(min(_BLOCK, start - done))
            line += block.count(b"\n")
            done += len(block)
    return TornLine(line=line, offset=start, size=end - start, head=tail[:64])


def _last_line_start(handle: Any, end: int) -> int:
    """Byte offset just after the last ``\\n`` (0 if there is none; ``end`` if the file ends with one)."""
    pos = end
    while pos > 0:
        step = min(_BLOCK, pos)
        pos -= step
        handle.seek(pos)
        found = handle.read(step).rfind(b"\n")
        if found >= 0:
            return pos + found + 1
    return 0


def cut_torn_last_line(path: str | Path, torn: TornLine) -> None:
    """Truncate ``path`` back to the end of its last complete line (the start of ``torn``)."""
    os.truncate(path, torn.offset)


def end_with_newline(path: str | Path) -> bool:
    """Add the missing line end after a complete last record, so an append starts a new line.

    Returns whether one was added."""
    with Path(path).open("rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return False
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return False
        handle.write(b"\n")
    return True
