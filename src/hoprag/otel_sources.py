"""What ``hoprag traces import`` resolves against: the cases (their ids and queries) and the corpus
or index whose documents the recorded ones become (:mod:`hoprag.document_resolution`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hoprag.document_resolution import DEFAULT_METADATA_KEYS, DocumentResolver

__all__ = ["cases_by_id", "resolver_for"]


def cases_by_id(cases_file: str | Path | None) -> dict[str, str] | None:
    """Case id → query of a cases file, or ``None`` without one."""
    if cases_file is None:
        return None
    from hoprag.datasets.schema import load_cases

    return {case.case_id: case.query for case in load_cases(cases_file)}


def resolver_for(corpus: str | Path | None, index: str | None,
                 metadata_keys: Sequence[str] | None = None) -> DocumentResolver | None:
    """A resolver over the corpus file (or folder) or the index (its documents and chunks); ``None``
    when neither is given, so recorded ids are kept as they are."""
    keys = tuple(metadata_keys or DEFAULT_METADATA_KEYS)
    if index is not None:
        from hoprag.index.open import open_index

        opened = open_index(index)
        try:
            return DocumentResolver(opened.documents.values(), opened.chunks.values(), metadata_keys=keys,
                                    source=str(index))
        finally:
            opened.close()
    if corpus is not None:
        from hoprag.ingest.loaders import load_documents

        return DocumentResolver(load_documents(corpus), metadata_keys=keys, source=str(corpus))
    return None
