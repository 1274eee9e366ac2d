"""The retrieval contract every index implements (bm25, dense, fused)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol, runtime_checkable

from hoprag.security.acl import Clearance
from hoprag.records import Hit

__all__ = ["Filters", "Retriever"]

#: Exact match on document fields: ``{"doc_type": "policy", "acl": ["public", "internal"]}``;
#: a list means "any of"; several fields must all match. ``"metadata.<key>"`` reaches metadata.
Filters = dict[str, Any]


@runtime_checkable
class Retriever(Protocol):
    """Ranks chunks for a query.

    ``retrieve`` returns at most ``k`` hits, best first, ranks 1-based, ties broken by chunk order;
    ``exclude`` holds chunk ids that must not be returned (e.g. evidence earlier hops already
    found); ``filters`` restricts to chunks whose document matches (see :data:`Filters`). A query
    with no usable terms returns ``[]``.

    ``clearance`` (a level name such as ``"internal"``, or a :class:`~hoprag.security.acl.Clearance` carrying
    its own policy) restricts to chunks whose document a caller at that level may see, applied
    *before* top-k so the caller still gets ``k`` allowed hits when ``k`` exist; ``None`` (the
    default) means no restriction: the operator who owns the index. An unknown level raises
    :class:`~hoprag.errors.ConfigError` naming the valid ones.
    """

    name: str

    def retrieve(
        self,
        query: str,
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[Hit]: ...
