"""Index QA: what reached the index, and whether every document with text did."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hoprag.gates.hooks import hook, metric
from hoprag.metrics import Metric
from hoprag.records import Chunk, Document

__all__ = ["IndexOutput"]


@dataclass(frozen=True)
class IndexOutput:
    documents: Sequence[Document]
    chunks: Sequence[Chunk]
    artifact_id: str = ""
    config_hash: str = ""


@hook("index")
def index_check(out: IndexOutput, ctx: dict[str, Any]) -> list[Metric]:
    with_chunks = {c.doc_id for c in out.chunks}
    with_text = [d for d in out.documents if d.text.strip()]
    missing = [d.id for d in with_text if d.id not in with_chunks]
    n_docs = len(out.documents)
    return [
        metric(ctx, "documents_indexed", len(with_chunks), artifact_id=out.artifact_id, config_hash=out.config_hash),
        metric(ctx, "chunks_indexed", len(out.chunks), artifact_id=out.artifact_id),
        metric(ctx, "chunks_per_document", len(out.chunks) / n_docs if n_docs else 0.0),
        metric(ctx, "unindexed_documents", len(missing), doc_ids=missing[:50]),
    ]
