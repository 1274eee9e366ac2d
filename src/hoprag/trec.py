"""TREC-format qrels and run files: the ``Qrels`` and ``Run`` types, their one reader and writer each.

qrels: ``qid iteration docid relevance`` (4 columns, whitespace-separated).
run:   ``qid Q0 docid rank score tag`` (6 columns); the rank column is ignored, as trec_eval does:
the ranking is by score, descending, ties broken by docid descending.

Writers go through the output guard (:mod:`hoprag.io.outputs`) and refuse an empty id or one with
whitespace before writing anything (the columns are whitespace-separated). Which documents a case
judges and a trace ranks is :mod:`hoprag.evaluation.qrels`; the measures are
:mod:`hoprag.evaluation.measures.documents`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from hoprag.errors import InputError
from hoprag.files import open_text
from hoprag.finite_numbers import NumberError, bounded_int, finite_float
from hoprag.io.kinds import TREC_QRELS, TREC_RUN
from hoprag.io.outputs import atomic_writer

__all__ = ["Qrels", "Run", "read_qrels", "read_run", "write_qrels", "write_run"]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def _lines(path: Path, what: str) -> Iterator[str]:
    with open_text(path, what) as lines:
        yield from lines


def read_qrels(path: str | Path) -> Qrels:
    """``{qid: {docid: relevance}}``; a malformed line names file and line."""
    path = Path(path)
    qrels: Qrels = {}
    for number, line in enumerate(_lines(path, "qrels file"), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise InputError(f"expected 4 columns (qid iter docid rel), got {len(parts)}", source=str(path),
                             line=number, fix="write qrels as 'qid 0 docid relevance'")
        try:
            rel = bounded_int(parts[3], "relevance")
        except NumberError as exc:
            raise InputError(exc.reason, source=str(path), line=number, field="relevance (column 4)",
                             fix=exc.fix) from None
        except ValueError:
            raise InputError(f"relevance {parts[3]!r} is not an integer", source=str(path), line=number,
                             fix="use integer relevance grades (0, 1, 2, ...)") from None
        qrels.setdefault(parts[0], {})[parts[2]] = rel
    if not qrels:
        raise InputError("no judgments in qrels file", source=str(path), fix="give at least one 'qid 0 docid rel' line")
    return qrels


def read_run(path: str | Path) -> Run:
    """``{qid: {docid: score}}``; a malformed line names file and line."""
    path = Path(path)
    run: Run = {}
    for number, line in enumerate(_lines(path, "run file"), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise InputError(f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}",
                             source=str(path), line=number, fix="write runs as 'qid Q0 docid rank score tag'")
        try:
            # NaN has no order (the ranking by score would be arbitrary), and no tool after us reads inf
            score = finite_float(parts[4], "score")
        except NumberError as exc:
            raise InputError(exc.reason, source=str(path), line=number, field="score (column 5)",
                             fix="give every result a finite retrieval score in column 5") from None
        except ValueError:
            raise InputError(f"score {parts[4]!r} is not a number", source=str(path), line=number,
                             fix="put the retrieval score in column 5") from None
        run.setdefault(parts[0], {})[parts[2]] = score
    if not run:
        raise InputError("no results in run file", source=str(path), fix="give at least one result line")
    return run


def _check_ids(table: Qrels | Run, what: str, tag: str | None = None) -> int:
    """The number of lines ``table`` makes; an id TREC columns cannot hold is refused first."""
    lines = 0
    for qid, docs in table.items():
        _check_id(qid, "query id", qid, what)
        for docid in docs:
            _check_id(docid, "document id", qid, what)
        lines += len(docs)
    if tag is not None:
        _check_id(tag, "run tag", "", what)
    return lines


def _check_id(value: str, field: str, qid: str, what: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        where = f"query {qid!r}: " if qid and field != "query id" else ""
        raise InputError(f"{where}{field} {value!r} of the {what} is empty or contains whitespace", field=field,
                         fix="TREC files are whitespace-separated; use ids without spaces")


def write_qrels(path: str | Path, qrels: Qrels) -> int:
    """Write ``qrels`` atomically through the output guard (:mod:`hoprag.io.outputs`); returns the lines written."""
    lines = _check_ids(qrels, "qrels")
    with atomic_writer(path, TREC_QRELS) as handle:
        for qid, docs in qrels.items():
            for docid, rel in docs.items():
                handle.write(f"{qid} 0 {docid} {int(rel)}\n")
    return lines


def write_run(path: str | Path, run: Run, tag: str = "hoprag") -> int:
    """Write ``run`` ranked by score (ties by docid descending, as trec_eval reads them); returns the lines."""
    lines = _check_ids(run, "run", tag)
    with atomic_writer(path, TREC_RUN) as handle:
        for qid, docs in run.items():
            ranked = sorted(docs.items(), key=lambda item: (-item[1], _Desc(item[0])))
            for rank, (docid, score) in enumerate(ranked, start=1):
                handle.write(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")
    return lines


class _Desc:
    """Sort key that orders strings descending."""

    __slots__ = ("s",)

    def __init__(self, s: str) -> None:
        self.s = s

    def __lt__(self, other: _Desc) -> bool:
        return self.s > other.s
