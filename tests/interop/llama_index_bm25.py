"""A BM25 retriever for LlamaIndex nodes, built as llama-index-retrievers-bm25 builds its own (bm25s,
an English stemmer, ``_retrieve`` traced as a span of its own inside ``retrieve``). That package pins
PyStemmer below 3, which would change hoprag's own stems, so the test extra cannot install it;
:class:`BM25Retriever` stands in for it where docs/evaluate-your-pipeline.md imports it."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import Stemmer
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

dispatcher = get_dispatcher(__name__)


class BM25NodeRetriever(BaseRetriever):
    """The ``top_k`` nodes of highest BM25 score for a query."""

    def __init__(self, nodes: Sequence[BaseNode], top_k: int) -> None:
        self._nodes = list(nodes)
        self._top_k = min(top_k, len(self._nodes))
        self._stemmer = Stemmer.Stemmer("english")
        self._bm25 = bm25s.BM25()
        texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in self._nodes]
        self._bm25.index(bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False),
                         show_progress=False)
        super().__init__()

    @dispatcher.span
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        tokens = bm25s.tokenize([query_bundle.query_str], stopwords="en", stemmer=self._stemmer,
                                show_progress=False)
        ids, scores = self._bm25.retrieve(tokens, k=self._top_k, show_progress=False)
        return [NodeWithScore(node=self._nodes[int(i)], score=float(s)) for i, s in zip(ids[0], scores[0])]


class BM25Retriever(BM25NodeRetriever):
    """``llama_index.retrievers.bm25.BM25Retriever``'s constructor as docs/evaluate-your-pipeline.md calls it."""

    @classmethod
    def from_defaults(cls, nodes: Sequence[BaseNode], similarity_top_k: int) -> BM25Retriever:
        return cls(nodes, top_k=similarity_top_k)
