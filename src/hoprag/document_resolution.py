"""Which corpus document a document recorded by another framework's trace is.

Frameworks record their own ids: LlamaIndex a node UUID, Haystack a content hash. Scored as they
are, such ids match no label and every measure is a silent zero. :class:`DocumentResolver` maps a
recorded document to a corpus document id by the first route that answers:

1. ``id``: the recorded id is a corpus document id (or a chunk id of the index, whose document it
   names);
2. ``metadata``: a metadata key (``metadata_keys``, default :data:`DEFAULT_METADATA_KEYS`, what
   LlamaIndex, Haystack and LangChain loaders set) holds a corpus document id, or a ``source`` /
   file name of a corpus document;
3. ``content``: the recorded text, whitespace collapsed and case folded, is a corpus document's or a
   chunk's text, or lies inside exactly one document's text.

A document no route resolves keeps its recorded id and counts as ``unresolved``. ``check`` refuses a
set where fewer than ``min_share`` resolved, saying how many went by each route and the fix.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from hoprag.errors import InputError
from hoprag.finite_numbers import loads as finite_loads  # json.loads under the number rule
from hoprag.records import Chunk, Document

__all__ = ["DEFAULT_METADATA_KEYS", "DEFAULT_MIN_SHARE", "ROUTES", "DocumentResolver", "RecordedDocument",
           "Resolved"]

DEFAULT_METADATA_KEYS = ("doc_id", "document_id", "source_id", "corpus_id", "id", "_id", "file_name",
                         "file_path", "source", "filename")
DEFAULT_MIN_SHARE = 0.9
ROUTES = ("id", "metadata", "content", "unresolved")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class RecordedDocument:
    """A retrieved document as a trace recorded it."""

    id: str
    content: str = ""
    metadata: Mapping[str, Any] | str | None = None


@dataclass(frozen=True)
class Resolved:
    """A recorded document's corpus id (``doc_id``), its chunk id and the route that found it."""

    doc_id: str
    chunk_id: str
    route: str


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


class DocumentResolver:
    """Resolves recorded documents against a corpus (and an index's chunks) and counts the routes."""

    def __init__(self, documents: Iterable[Document], chunks: Iterable[Chunk] = (), *,
                 metadata_keys: Sequence[str] = DEFAULT_METADATA_KEYS, source: str = "corpus") -> None:
        self.metadata_keys = tuple(metadata_keys)
        self.source = source
        self._doc_ids: set[str] = set()
        self._by_source: dict[str, str] = {}
        self._by_text: dict[str, str] = {}
        self._texts: list[tuple[str, str]] = []  # (normalised text, doc id) for containment
        for doc in documents:
            self._doc_ids.add(doc.id)
            for name in {doc.source, PurePath(doc.source).name} if doc.source else ():
                self._by_source.setdefault(name, doc.id)
            text = _norm(doc.text)
            if text:
                self._by_text.setdefault(text, doc.id)
                self._texts.append((text, doc.id))
        self._chunk_doc: dict[str, str] = {}
        self._by_chunk_text: dict[str, tuple[str, str]] = {}
        for chunk in chunks:
            self._chunk_doc[chunk.id] = chunk.doc_id
            self._by_chunk_text.setdefault(_norm(chunk.text), (chunk.doc_id, chunk.id))
        if not self._doc_ids:
            raise InputError("holds no documents to resolve recorded documents against", source=source,
                             fix="pass the corpus (or index) the cases cite")
        self.counts: Counter[str] = Counter()
        self._memo: dict[tuple[str, str, str], Resolved] = {}

    def resolve(self, doc: RecordedDocument) -> Resolved:
        """The corpus id of ``doc`` and its route (see the module docstring); counted."""
        meta = _metadata(doc.metadata)
        key = (doc.id, json.dumps(meta, sort_keys=True, default=str) if meta else "", doc.content)
        found = self._memo.get(key)
        if found is None:
            found = self._resolve(doc.id, meta, doc.content)
            if len(self._memo) < 100_000:  # the same document recurs across hops and cases
                self._memo[key] = found
        self.counts[found.route] += 1
        return found

    def _resolve(self, doc_id: str, meta: Mapping[str, Any], content: str) -> Resolved:
        if doc_id in self._doc_ids:
            return Resolved(doc_id, doc_id, "id")
        if doc_id in self._chunk_doc:
            return Resolved(self._chunk_doc[doc_id], doc_id, "id")
        for name in self.metadata_keys:
            value = meta.get(name)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                text = str(value)
                corpus_id = text if text in self._doc_ids else self._by_source.get(text) \
                    or self._by_source.get(PurePath(text).name)
                if corpus_id:
                    return Resolved(corpus_id, corpus_id, "metadata")
        text = _norm(content)
        if text:
            if text in self._by_text:
                return Resolved(self._by_text[text], self._by_text[text], "content")
            if text in self._by_chunk_text:
                corpus_id, chunk_id = self._by_chunk_text[text]
                return Resolved(corpus_id, chunk_id, "content")
            inside = {corpus_id for body, corpus_id in self._texts if text in body}
            if len(inside) == 1:  # a split of one document (another framework's chunking)
                corpus_id = inside.pop()
                return Resolved(corpus_id, corpus_id, "content")
        return Resolved(doc_id, doc_id, "unresolved")

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        """``46 documents: 40 by id, 6 by metadata, 0 by content, 0 unresolved``."""
        parts = ", ".join(f"{self.counts[r]} {'by ' + r if r != 'unresolved' else r}" for r in ROUTES)
        return f"{self.total} recorded documents: {parts}"

    def check(self, min_share: float, what: str) -> None:
        """Refuse when fewer than ``min_share`` of the recorded documents resolved."""
        total = self.total
        if not total:
            return
        resolved = total - self.counts["unresolved"]
        if resolved / total < min_share:
            keys = ", ".join(self.metadata_keys)
            raise InputError(
                f"only {resolved} of {total} recorded documents ({resolved / total:.0%}) resolve to a document of "
                f"{self.source} ({self.summary()}); scored as they are, they would match no label",
                source=what,
                fix=f"record the corpus id as the document id or under a metadata key ({keys}; name yours with "
                "--doc-key KEY), record the document text, or pass the corpus the pipeline retrieved from; "
                "--min-resolved SHARE lowers the bar")


def _metadata(value: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    """Recorded metadata as a mapping: OpenInference writes it as a JSON string."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            data = finite_loads(value)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}
    return {}
