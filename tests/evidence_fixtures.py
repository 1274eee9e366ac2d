"""Held evidence for the answerer's tests: one passage as a hop found it, built the same way everywhere."""

from __future__ import annotations

from hoprag.records import Evidence, Hit


def held(chunk_id: str, title: str, text: str, hop: int = 1, sub_query: str = "q") -> Evidence:
    """A passage a hop held: its document is the chunk id before ``#``, its rank the hop it was found at."""
    hit = Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=hop, retriever="bm25")
    return Evidence(hit=hit, text=text, title=title, hop=hop, step_id=f"s{hop}", sub_query=sub_query)
