"""What hoprag's own spans carry so that importing them gives back the trace they were made from.

:mod:`hoprag.telemetry` writes these attributes and :mod:`hoprag.otel_import` reads them, so the
pair is kept in one place: export → ``hoprag traces import`` → ``hoprag eval`` scores as the
trace itself does. Each hop span is an OTel GenAI retrieval (``gen_ai.retrieval.query.text``,
``gen_ai.retrieval.documents``: a JSON array of ``{id, score}``, each also with the document id,
offsets, title and retriever, which other tools ignore); the synthesis span holds the answer
(``gen_ai.output.messages``), each hop its bridge state and the steps it depends on; the question's span the question (``input.value``), the evidence the
engine selected, in buffer order and with its text (:data:`EVIDENCE`), and the answer's claims with
their citations (:data:`CLAIMS`), and where redacted evidence text lies in its source (:data:`SHIFTS`). Every text was redacted before (the caller passes a trace that
went through the redaction boundary).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hoprag.finite_numbers import loads  # span attributes are user input: the one number rule
from hoprag.records import Claim, Evidence, Hit

__all__ = ["BRIDGE", "CLAIMS", "EVIDENCE", "SHIFTS", "bridge_from", "shifts_from", "shifts_json", "claims_from", "claims_json", "documents_json", "evidence_from", "evidence_json",
           "hit_from", "output_messages_json"]

EVIDENCE = "hoprag.evidence"
CLAIMS = "hoprag.answer.claims"
#: a hop's whole bridge state, as JSON (``hoprag.bridge`` holds its value alone)
BRIDGE = "hoprag.bridge_state"
#: where redacted evidence text lies in its source (supporting facts are placed by it)
SHIFTS = "hoprag.redaction_shifts"


def _document(hit: Hit) -> dict[str, Any]:
    return {"id": hit.chunk_id, "score": hit.score, "doc_id": hit.doc_id, "rank": hit.rank, "start": hit.start,
            "end": hit.end, "title": hit.title, "retriever": hit.retriever}


def documents_json(hits: Sequence[Hit]) -> str:
    """A step's hits as ``gen_ai.retrieval.documents``."""
    return json.dumps([_document(h) for h in hits], ensure_ascii=False)


def evidence_json(evidence: Sequence[Evidence]) -> str:
    return json.dumps([{**_document(e.hit), "text": e.text, "evidence_title": e.title, "hop": e.hop,
                        "step_id": e.step_id, "sub_query": e.sub_query} for e in evidence], ensure_ascii=False)


def claims_json(claims: Sequence[Claim]) -> str:
    return json.dumps([c.to_dict() for c in claims], ensure_ascii=False)


def output_messages_json(text: str) -> str:
    """An answer as ``gen_ai.output.messages``."""
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def hit_from(doc: dict[str, Any], *, chunk_id: str, doc_id: str, score: float, rank: int, retriever: str) -> Hit:
    """The Hit a recorded document is: what the import resolved, with what hoprag's spans add
    (the document id beside the chunk id, offsets, title, retriever) when the document holds it."""
    own_doc = doc.get("doc_id")
    return Hit(chunk_id=chunk_id, doc_id=str(own_doc) if own_doc and doc_id == chunk_id else doc_id, score=score,
               rank=_int(doc.get("rank")) or rank, retriever=str(doc.get("retriever") or retriever),
               start=_int(doc.get("start")), end=_int(doc.get("end")), title=str(doc.get("title") or ""))


def _loads(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, str):
        return None
    try:
        data = loads(value)
    except ValueError:
        return None
    return data if isinstance(data, list) and all(isinstance(d, dict) for d in data) else None


def evidence_from(value: Any) -> list[Evidence] | None:
    """The evidence :data:`EVIDENCE` holds, or ``None`` when it holds none that can be read."""
    docs = _loads(value)
    if not docs:
        return None
    try:
        return [Evidence(hit=Hit(chunk_id=str(d["id"]), doc_id=str(d.get("doc_id") or d["id"]),
                                 score=float(d.get("score") or 0.0), rank=_int(d.get("rank")) or 0,
                                 retriever=str(d.get("retriever") or ""), start=_int(d.get("start")),
                                 end=_int(d.get("end")), title=str(d.get("title") or "")),
                         text=str(d.get("text") or ""), title=str(d.get("evidence_title") or ""),
                         hop=_int(d.get("hop")) or 1, step_id=str(d.get("step_id") or ""),
                         sub_query=str(d.get("sub_query") or "")) for d in docs]
    except (KeyError, TypeError, ValueError):
        return None


def claims_from(value: Any) -> tuple[Claim, ...]:
    """The claims :data:`CLAIMS` holds (none when absent or unreadable)."""
    try:
        return tuple(Claim.from_dict(c) for c in _loads(value) or ())
    except (KeyError, TypeError, ValueError):
        return ()


def shifts_json(shifts: dict[str, tuple[tuple[int, int], ...]]) -> str:
    return json.dumps({k: [list(pair) for pair in v] for k, v in shifts.items()})


def shifts_from(value: Any) -> dict[str, tuple[tuple[int, int], ...]]:
    """The redaction shifts :data:`SHIFTS` holds (none when absent or unreadable)."""
    try:
        data = loads(value) if isinstance(value, str) else {}
        return {str(k): tuple((int(p), int(d)) for p, d in v) for k, v in data.items()}
    except (AttributeError, TypeError, ValueError):
        return {}


def bridge_from(value: Any) -> dict[str, Any]:
    """The bridge state :data:`BRIDGE` holds (none when absent or unreadable)."""
    try:
        data = loads(value) if isinstance(value, str) else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
