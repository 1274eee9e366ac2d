"""A bounded, thread-safe cache of retrieval results keyed by (retriever, issued query, k, prior
evidence ids, clearance).

The same conditioned query asked with the same evidence already held returns the same hits, so a
repeated sub-query (across branches, or questions sharing a bridge) costs one retrieval.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from hoprag.security.acl import Clearance
from hoprag.records import Hit


class RetrievalCache:
    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[tuple, list[Hit]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_retrieve(
        self, retriever, query: str, k: int, exclude: Sequence[str], *, clearance: Clearance | None = None
    ) -> list[Hit]:
        # the retriever is part of the key: an engine may serve first and dependent lookups by two
        key = (id(retriever), query, k, tuple(sorted(exclude)), clearance)
        if self.size:
            with self._lock:
                found = self._items.get(key)
                if found is not None:
                    self._items.move_to_end(key)
                    self.hits += 1
                    return found
        options: dict = {"exclude": exclude} if exclude else {}
        if clearance is not None:  # passed only when set, so retrievers without the keyword still plug in
            options["clearance"] = clearance
        result = retriever.retrieve(query, k, **options)
        if self.size:
            with self._lock:
                self.misses += 1
                self._items[key] = result
                if len(self._items) > self.size:
                    self._items.popitem(last=False)
        return result
