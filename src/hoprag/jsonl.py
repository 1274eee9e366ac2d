"""JSONL reading and writing for records: errors name the file, line and field; appends flush."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from hoprag.errors import InputError

T = TypeVar("T")


def read_jsonl_dicts(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; a bad line raises naming file and line."""
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", source=str(path), fix="check the path")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"malformed JSON ({exc.msg} at column {exc.colno})",
                    source=str(path),
                    line=number,
                    fix="make every line one complete JSON object",
                ) from None
            if not isinstance(obj, dict):
                raise InputError(
                    f"expected a JSON object, got {type(obj).__name__}",
                    source=str(path),
                    line=number,
                    fix="make every line one JSON object",
                )
            yield number, obj


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
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"invalid {record_type.__name__}: {exc}", source=str(path), line=number
            ) from None
    return records


def write_records(path: str | Path, records: Iterable[Any]) -> int:
    """Write records (anything with ``to_dict``) as JSONL; returns the count written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
            count += 1
    return count


def append_record(path: str | Path, record: Any) -> None:
    """Append one record and flush, so a run that dies keeps every trace written so far."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        handle.flush()
