"""What every index is, wherever it is kept: the :class:`Index` contract and its :class:`IndexStats`.

:func:`hoprag.index.open.open_index` returns an ``Index`` (a :class:`~hoprag.index.store.LoadedIndex`
for a directory, a :class:`~hoprag.index.pg_store.PgIndex` for a ``postgresql://`` URL); the engine
factory, the ablations, the judgment pool, the demo, the gates and the service take one. Both
stores subclass ``Index`` and pass one conformance suite (``tests/index/test_index_contract.py``).
A caller needs nothing beyond these members; anything else an implementation has (the local
index's ``bm25``, ``directory`` and ``graph``, the PostgreSQL index's connection pool) belongs to
that store alone.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # the contract is imported by both stores: it imports neither, nor their arrays
    from hoprag.index.base import Retriever
    from hoprag.index.entity_graph import EntityGraph
    from hoprag.index.manifest import IndexManifest
    from hoprag.records import Chunk, Document

__all__ = ["Index", "IndexStats", "StoreKind"]

StoreKind = Literal["local", "postgres"]


@dataclass(frozen=True)
class IndexStats:
    """What an index holds, in one record: enough to say which index answered and what it can do."""

    #: ``local`` (a directory ``hoprag index --out`` wrote) or ``postgres`` (``hoprag index --out postgresql://…``)
    store: StoreKind
    #: where the index is, as messages show it: the directory, or the URL without its password
    location: str
    artifact_id: str
    documents: int
    chunks: int
    #: dense vectors were built (``dense`` and ``hybrid`` retrieval work)
    dense: bool
    #: an entity graph was built (:meth:`Index.entity_graph` returns it)
    graph: bool


@runtime_checkable
class Index(Protocol):
    """A built index: its manifest, its documents and chunks, its retrievers and its entity graph.

    ``documents`` and ``chunks`` are read-only mappings by id, in corpus order, read when asked for;
    a chunk's text is ``chunks[id].text``. ``retriever(mode)`` ranks chunks; every retriever takes
    ``filters``, ``exclude`` and ``clearance`` (applied before top-k, so a caller gets ``k`` hits it
    may see whenever ``k`` exist; :class:`~hoprag.index.base.Retriever`).
    """

    manifest: IndexManifest
    documents: Mapping[str, Document]
    chunks: Mapping[str, Chunk]

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the index is, as messages show it (a directory, or a URL without its password)."""

    @property
    @abstractmethod
    def has_dense(self) -> bool:
        """Whether ``dense`` and ``hybrid`` retrieval are available (the index holds vectors)."""

    @abstractmethod
    def retriever(self, mode: str = "bm25", *, fusion: str = "rrf", **options: Any) -> Retriever:
        """The retriever for ``mode``: ``bm25``, ``dense`` or ``hybrid`` (fused by ``fusion``: ``rrf`` or
        ``weighted``). ``options`` go to the dense or hybrid retriever. An unknown mode is a
        :class:`~hoprag.errors.ConfigError`; a dense mode over an index without vectors an
        :class:`~hoprag.errors.IndexLoadError` saying how to rebuild it."""

    @abstractmethod
    def entity_graph(self) -> EntityGraph | None:
        """The entity graph the multi-hop engine's graph hop walks; ``None`` when the index has none.

        A method, not an attribute: the graph is read on first use, and looking at an index (an
        ``isinstance`` check included) must not read it."""

    @abstractmethod
    def stats(self) -> IndexStats:
        """What the index holds (from its manifest: nothing is read or counted)."""

    @abstractmethod
    def close(self) -> None:
        """Release what the index holds open (connections); the index is not used afterwards."""
