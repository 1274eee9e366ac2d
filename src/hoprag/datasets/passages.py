"""Benchmark paragraphs as documents: joining sentences with offsets, stable ids, passage corpora.

HotpotQA and 2WikiMultihopQA give each context paragraph as a list of sentences. The document text is
the sentences joined back together, and every sentence keeps its character span in that text, so a
supporting fact ``[title, sent_id]`` becomes an exact span. Pooled passage corpora (HippoRAG's
``[{"title", "text"}]`` lists and ``{title: [sentences]}`` dicts) load into the same documents, with
the same ids, so they deduplicate against the paragraphs an importer builds.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path
from typing import Any

from hoprag.datasets.artefacts import clean_text
from hoprag.errors import EmptyCorpusError, InputError
from hoprag.files import check_file, read_text
from hoprag.jsonl import parse_json, read_jsonl_dicts
from hoprag.records import Document

_SLUG_MAX = 40


def paragraph_text(sentences: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Join a paragraph's sentences into one text; return it and each sentence's ``(start, end)``.

    ``text[start:end]`` is the sentence with surrounding whitespace stripped. HotpotQA sentences carry
    their own leading space (``"".join`` restores the Wikipedia paragraph); 2Wiki sentences are
    stripped (joined with one space). A paragraph counts as self-spaced when any later sentence starts
    with whitespace; then every sentence is appended as is, because HotpotQA's splitter also cuts
    inside quotes (``'"Hey Mama!'`` + ``'".'``) where inserting a space would corrupt the text.
    Otherwise sentences are joined with a single space (empty sentences add no separator).
    """
    sentences = [clean_text(s) for s in sentences]  # before the offsets, so every span stays valid
    self_spaced = any(s[:1].isspace() for s in sentences[1:])
    parts: list[str] = []
    offsets: list[tuple[int, int]] = []
    length = 0
    for i, sentence in enumerate(sentences):
        if i > 0 and not self_spaced and sentence and length > 0:
            parts.append(" ")
            length += 1
        lead = len(sentence) - len(sentence.lstrip())
        stripped = sentence.strip()
        start = length + lead if stripped else length
        offsets.append((start, start + len(stripped)))
        parts.append(sentence)
        length += len(sentence)
    return "".join(parts), offsets


def slugify(title: str, max_len: int = _SLUG_MAX) -> str:
    """Lower-case ASCII slug of a title (accents folded), at most ``max_len`` characters."""
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    slug = slug[:max_len].rstrip("-")
    return slug or "doc"


def doc_id_for(title: str, text: str) -> str:
    """Stable readable id: ``<slug of title>-<first 8 hex of sha1(title + "\\n" + text)>``."""
    digest = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:8]
    return f"{slugify(title)}-{digest}"


#: benchmark paragraphs are published text (Wikipedia), so any caller may see them
BENCHMARK_ACL = "public"


def make_document(title: str, text: str, source: str = "") -> Document:
    """A benchmark paragraph as a Document; metadata stays empty (nothing answer-bearing).

    Its access class is ``public``: without one, a caller at the lowest clearance (the service's
    anonymous reader) would see none of a benchmark corpus, which is public by construction.
    """
    text = clean_text(text)  # known benchmark artefacts never reach a user (hoprag.datasets.artefacts)
    return Document(id=doc_id_for(title, text), title=title, text=text, source=source, acl=BENCHMARK_ACL)


class CorpusBuilder:
    """Collects documents deduplicated by ``(title, text)``, in first-insertion order."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], Document] = {}
        self._by_id: dict[str, Document] = {}
        self.duplicates_removed = 0

    def add(self, document: Document) -> Document:
        """Add a document; returns the stored one (the earlier copy when it is a duplicate)."""
        key = (document.title, document.text)
        existing = self._by_key.get(key)
        if existing is not None:
            self.duplicates_removed += 1
            return existing
        clash = self._by_id.get(document.id)
        if clash is not None:
            raise InputError(
                f"document id {document.id!r} is used by two different documents "
                f"({clash.title!r} and {document.title!r})",
                field="id",
                fix="give every document in the corpus a unique id",
            )
        self._by_key[key] = document
        self._by_id[document.id] = document
        return document

    def add_text(self, title: str, text: str, source: str = "") -> Document:
        return self.add(make_document(title, text, source))

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    def documents(self) -> list[Document]:
        return list(self._by_key.values())


_CORPUS_FIX = (
    'give a JSON list of {"title": ..., "text": ...} objects, a JSON object {title: [sentences]} '
    'or {title: "text"}, or a JSONL file with one {"title", "text"} object per line'
)


def load_passage_corpus(path: str | Path, *, source: str | None = None) -> list[Document]:
    """Load a passage corpus file as Documents (ids from :func:`doc_id_for` unless a JSONL line has ``id``).

    Accepts ``[{"title", "text"}, ...]``, ``{title: [sentences]}``, ``{title: "text"}`` (JSON) and
    JSONL of ``{"title", "text"[, "id"]}`` objects such as an importer's ``corpus.jsonl``. Other keys
    of an entry are ignored. ``source`` defaults to the file's stem.
    """
    path = Path(path)
    label = source if source is not None else path.stem
    check_file(path, "passage corpus file")
    if path.suffix == ".jsonl":
        docs = [
            _entry_document(obj, path, number, label, keep_id=True)
            for number, obj in read_jsonl_dicts(path, "passage corpus file")
        ]
    else:
        docs = _json_corpus(path, label)
    if not docs:
        raise EmptyCorpusError("passage corpus has no passages", source=str(path), fix=_CORPUS_FIX)
    return docs


def _json_corpus(path: Path, label: str) -> list[Document]:
    text = read_text(path, "passage corpus file", allow_empty=True)
    if not text.strip():
        raise EmptyCorpusError("passage corpus file is empty", source=str(path), fix=_CORPUS_FIX)
    data = parse_json(text, source=str(path),
                      fix="repair the JSON (or name the file .jsonl if it holds one object per line)")
    if isinstance(data, list):
        return [_entry_document(obj, path, i, label, keep_id=False) for i, obj in enumerate(data, start=1)]
    if isinstance(data, dict):
        docs = []
        for title, value in data.items():
            if isinstance(value, str):
                body = value
            elif isinstance(value, list) and all(isinstance(s, str) for s in value):
                body = paragraph_text(value)[0]
            else:
                raise InputError(
                    f"passage {title!r} is a {type(value).__name__}, not text or a list of sentences",
                    source=str(path),
                    field=title,
                    fix=_CORPUS_FIX,
                )
            docs.append(make_document(title, body, label))
        return docs
    raise InputError(
        f"a passage corpus must be a JSON list or object, got {type(data).__name__}",
        source=str(path),
        fix=_CORPUS_FIX,
    )


def _entry_document(obj: Any, path: Path, number: int, label: str, *, keep_id: bool) -> Document:
    if not isinstance(obj, dict):
        raise InputError(
            f"passage {number} is a {type(obj).__name__}, not an object", source=str(path), fix=_CORPUS_FIX
        )
    for key in ("title", "text"):
        if not isinstance(obj.get(key), str):
            problem = "missing" if key not in obj else f"not a string ({type(obj[key]).__name__})"
            raise InputError(
                f"passage {number}: '{key}' is {problem}",
                source=str(path),
                line=number if keep_id else None,
                field=key,
                fix=_CORPUS_FIX,
            )
    if keep_id and obj.get("id") is not None:
        doc = Document.from_dict(obj)
        return doc if doc.source else Document.from_dict({**obj, "source": label})
    return make_document(obj["title"], obj["text"], label)
