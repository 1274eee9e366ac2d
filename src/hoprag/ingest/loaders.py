"""Read a corpus into :class:`~hoprag.records.Document` records.

Three forms are accepted:

* ``.jsonl`` — one document per line, in the enterprise format (``id, title, text, source, version,
  timestamp, doc_type, acl, metadata``; only ``id`` and ``text`` are required) or the BEIR
  ``corpus.jsonl`` format (``_id, title, text[, metadata]``);
* ``.json`` — a JSON array of the same objects;
* a folder of ``.md`` / ``.txt`` files (searched recursively): ``id`` is the relative path without
  its suffix, ``title`` the first markdown heading (``.md`` only) or else the file stem, ``source``
  is ``"files"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hoprag.errors import EmptyCorpusError, InputError, UnknownFormatError
from hoprag.files import check_dir, read_text
from hoprag.jsonl import parse_json, read_jsonl_dicts
from hoprag.records import Document

__all__ = ["TEXT_SUFFIXES", "iter_corpora", "load_corpora", "load_documents"]

TEXT_SUFFIXES = (".md", ".txt")
_STRING_FIELDS = ("title", "source", "version", "timestamp", "doc_type", "acl")
_HEADING = re.compile(r"^[ ]{0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_FIX_ID = "give every document an 'id' (or BEIR '_id') string"
_FIX_TEXT = "give every document a 'text' string (use \"\" for a document with no body)"


def load_documents(path: str | Path) -> list[Document]:
    """Load one corpus file or folder; raises :class:`InputError` naming file, line and fix."""
    return list(iter_corpora([path]))


def _check_source(path: Path) -> None:
    """Refuse a corpus path that is missing or of an unknown kind before anything is read."""
    if not path.exists():
        raise InputError(
            "corpus not found",
            source=str(path),
            fix="pass a .jsonl or .json file of documents, or a folder of .md/.txt files",
        )
    if path.is_dir():
        check_dir(path, "corpus folder")
    elif path.suffix.lower() not in (".jsonl", ".json"):
        raise UnknownFormatError(
            f"unsupported corpus file type '{path.suffix or '(none)'}'",
            source=str(path),
            fix="use .jsonl (one document per line), .json (an array of documents) "
            "or a folder of .md/.txt files",
        )


def _iter_source(path: Path) -> Iterator[Document]:
    if path.is_dir():
        yield from _iter_folder(path)
    elif path.suffix.lower() == ".jsonl":
        for number, obj in read_jsonl_dicts(path, "corpus file"):
            yield _document(obj, path, number)
    else:
        for number, obj in _iter_json_array(path):
            yield _document(obj, path, number)


def load_corpora(paths: Iterable[str | Path]) -> list[Document]:
    """Load several corpora in order and concatenate them; an id may appear only once overall."""
    return list(iter_corpora(paths))


def iter_corpora(paths: Iterable[str | Path]) -> Iterator[Document]:
    """Documents of several corpora in order, read as they are asked for (one line at a time for JSONL).

    Every path is checked (it exists, its kind is known) when this is called; a bad
    record, a corpus without documents or an id seen before raises :class:`InputError` naming the
    file, the record and the fix when the stream reaches it. Only the ids are kept while streaming.
    """
    sources = [Path(p) for p in paths]
    if not sources:
        raise EmptyCorpusError("no corpus was given", fix="pass at least one corpus file or folder")
    for path in sources:
        _check_source(path)
    return _stream(sources)


def _stream(sources: list[Path]) -> Iterator[Document]:
    # id -> where it was first seen: (source index << 40) | record number; small ints, no tuples
    seen: dict[str, int] = {}
    for index, path in enumerate(sources):
        count = 0
        for count, doc in enumerate(_iter_source(path), start=1):
            first = seen.get(doc.id)
            if first is not None:
                _duplicate(doc.id, first, index, count, sources)
            seen[doc.id] = (index << 40) | count
            yield doc
        if not count:
            raise EmptyCorpusError(
                "the corpus has no documents",
                source=str(path),
                fix="add documents with 'id' and 'text' (or .md/.txt files to the folder)",
            )


def _duplicate(doc_id: str, first: int, index: int, number: int, sources: list[Path]) -> None:
    where, line = first >> 40, first & ((1 << 40) - 1)
    same = where == index
    raise InputError(
        f"duplicate document id '{doc_id}' "
        + (f"(first seen in record {line})" if same else f"(already loaded from {sources[where]})"),
        source=str(sources[index]),
        line=number,
        field="id",
        fix="make document ids unique" if same else "make document ids unique across all corpora, e.g. prefix each corpus's ids",
    )


def _iter_json_array(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    data = parse_json(read_text(path, "corpus file"), source=str(path),
                      fix="make the file one JSON array of document objects")
    if not isinstance(data, list):
        raise InputError(
            f"expected a JSON array of documents, got {type(data).__name__}",
            source=str(path),
            fix="make the file one JSON array of document objects, or use .jsonl",
        )
    for number, obj in enumerate(data, start=1):
        if not isinstance(obj, dict):
            raise InputError(
                f"expected a JSON object, got {type(obj).__name__}",
                source=str(path),
                line=number,
                fix="make every array element one document object",
            )
        yield number, obj


def _document(obj: dict[str, Any], path: Path, number: int) -> Document:
    """One document from an enterprise or BEIR object; ``number`` is the line or record number."""
    where = {"source": str(path), "line": number}
    raw_id = obj.get("id", obj.get("_id"))
    if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise InputError(
            "missing document id" if raw_id is None else f"document id must be a string, got {raw_id!r}",
            field="id",
            fix=_FIX_ID,
            **where,
        )
    doc_id = str(raw_id)
    if not doc_id.strip():
        raise InputError("empty document id", field="id", fix=_FIX_ID, **where)
    text = obj.get("text")
    if not isinstance(text, str):
        raise InputError(
            "missing document text" if text is None else f"text must be a string, got {type(text).__name__}",
            field="text",
            fix=_FIX_TEXT,
            **where,
        )
    values: dict[str, str] = {}
    for name in _STRING_FIELDS:
        value = obj.get(name)
        if value is None:
            values[name] = ""
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            values[name] = str(value)
        else:
            raise InputError(
                f"{name} must be a string, got {type(value).__name__}",
                field=name,
                fix=f"write '{name}' as one string",
                **where,
            )
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError(
            f"metadata must be an object, got {type(metadata).__name__}",
            field="metadata",
            fix="write 'metadata' as a JSON object",
            **where,
        )
    return Document(id=doc_id, text=text, metadata=dict(metadata), **values)


def _iter_folder(root: Path) -> Iterator[Document]:
    files = sorted(
        (p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    seen: dict[str, Path] = {}
    for file in files:
        rel = file.relative_to(root)
        doc_id = rel.with_suffix("").as_posix()
        if doc_id in seen:
            raise InputError(
                f"duplicate document id '{doc_id}': {seen[doc_id].name} and {file.name} share a name",
                source=str(file),
                field="id",
                fix="rename one of the files (the id is the path without its suffix)",
            )
        seen[doc_id] = file
        text = read_text(file, "corpus document", allow_empty=True)
        title = file.stem
        if file.suffix.lower() == ".md":
            match = _HEADING.search(text)
            if match:
                title = match.group(1).strip()
        yield Document(
            id=doc_id,
            title=title,
            text=text,
            source="files",
            metadata={"path": rel.as_posix()},
        )
