"""Boolean chunk masks for metadata filters, built once per field and cached per filter."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from hoprag.errors import ConfigError
from hoprag.records import Document

__all__ = ["FILTER_FIELDS", "FilterIndex"]

FILTER_FIELDS = ("id", "doc_id", "title", "source", "version", "timestamp", "doc_type", "acl")
_SCALARS = (str, int, float, bool)
_CACHE_SIZE = 64


class FilterIndex:
    """Maps a filter dict to a boolean mask over chunks (``True`` = allowed).

    ``chunk_docs[i]`` is the document of chunk ``i`` (``None`` when unknown, which never matches).
    Values compare as strings, so ``{"version": 2}`` matches a document with version ``"2"``.
    """

    def __init__(self, chunk_docs: Iterable[Document | None], count: int | None = None) -> None:
        """``count`` is the number of chunks when ``chunk_docs`` is a stream (walked once per field)."""
        self._docs = chunk_docs
        self._n = len(chunk_docs) if count is None else count  # type: ignore[arg-type]
        self._postings: dict[str, dict[str, np.ndarray]] = {}
        self._cache: dict[tuple[Any, ...], np.ndarray] = {}

    def mask(self, filters: dict[str, Any]) -> np.ndarray:
        key = _freeze(filters)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        mask = np.ones(self._n, dtype=bool)
        for field, wanted in filters.items():
            values = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
            postings = self._field(field)
            field_mask = np.zeros(self._n, dtype=bool)
            for value in values:
                if not isinstance(value, _SCALARS):
                    raise ConfigError(
                        f"filter '{field}' value {value!r} is not a string or number; "
                        "use a value or a list of values"
                    )
                hits = postings.get(str(value))
                if hits is not None:
                    field_mask[hits] = True
            mask &= field_mask
        mask.setflags(write=False)
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = mask
        return mask

    def _field(self, field: str) -> dict[str, np.ndarray]:
        postings = self._postings.get(field)
        if postings is not None:
            return postings
        if field in FILTER_FIELDS:
            attr = "id" if field == "doc_id" else field
            getter = lambda doc: (getattr(doc, attr),)  # noqa: E731
        elif field.startswith("metadata.") and len(field) > len("metadata."):
            key = field[len("metadata."):]
            getter = lambda doc: _meta_values(doc.metadata.get(key))  # noqa: E731
        else:
            raise ConfigError(
                f"unknown filter field '{field}'; valid: {', '.join(FILTER_FIELDS)} or 'metadata.<key>'"
            )
        lists: dict[str, list[int]] = {}
        for i, doc in enumerate(self._docs):
            if doc is None:
                continue
            for value in getter(doc):
                lists.setdefault(str(value), []).append(i)
        postings = {value: np.asarray(idx, dtype=np.int64) for value, idx in lists.items()}
        self._postings[field] = postings
        return postings


def _meta_values(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(v for v in value if isinstance(v, _SCALARS))
    return (value,) if isinstance(value, _SCALARS) else ()


def _freeze(filters: dict[str, Any]) -> tuple[Any, ...]:
    items = []
    for field in sorted(filters):
        value = filters[field]
        if isinstance(value, (list, tuple, set, frozenset)):
            value = ("__any__", *sorted(str(v) for v in value))
        else:
            value = str(value)
        items.append((field, value))
    return tuple(items)
