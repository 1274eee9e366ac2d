"""What a pipeline hands :mod:`hoprag.recorder` as a hit, read: ids, pairs, dicts and framework objects.

:func:`read_hit` reads one hit (see the recorder's module doc for the kinds); :func:`hit_id` picks
its id when no corpus resolves it: the id given as such, else the first metadata key that holds one
(the keys :mod:`hoprag.document_resolution` reads), else the framework's own id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hoprag.errors import InputError
from hoprag.finite_numbers import NumberError, finite_float

__all__ = ["HIT_KINDS", "RecordedHit", "RecorderError", "hit_id", "as_list", "finite", "read_hit"]

_ID_KEYS = ("id", "doc_id", "chunk_id", "document_id")
HIT_KINDS = ("an id, an (id, score) pair, a dict with 'id' (or 'doc_id'), a LlamaIndex NodeWithScore, "
             "or a Haystack or LangChain Document")


class RecorderError(InputError):
    """The recorder was called wrongly (a hit it cannot read, a second answer); nothing is written."""


@dataclass(frozen=True)
class RecordedHit:
    """A hit as the pipeline gave it: its ids, score, text, title and metadata."""

    own_id: str
    score: float | None = None
    text: str = ""
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    explicit: bool = False  # the id was given as such (an id, a dict's id), not a framework's own


def as_list(values: Any, what: str) -> list[Any]:
    """``values`` as a list; a string, a dict or a single object is refused (it is one hit, not a list)."""
    if values is None:
        return []
    if isinstance(values, (str, bytes)) or isinstance(values, Mapping) or not isinstance(values, Iterable):
        raise RecorderError(f"{what} must be a list, not {type(values).__name__}", field=what,
                            fix=f"pass a list of hits, each {HIT_KINDS} (a single id as [id])")
    return list(values)


def finite(value: Any, name: str) -> float:
    """``value`` as a finite float, or a :class:`RecorderError` naming ``name``."""
    try:
        return finite_float(value, name)
    except NumberError as exc:
        raise RecorderError(f"{name}: {exc.reason}", field=name, fix=exc.fix) from None
    except (TypeError, ValueError):
        raise RecorderError(f"{name} must be a number, not {value!r}", field=name,
                            fix=f"pass {name} as a finite number, or leave it out") from None


def _scalar_id(value: Any) -> str | None:
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
        return str(value)
    return None


def read_hit(item: Any, rank: int) -> RecordedHit:
    """What one hit says about itself (see the module doc for the kinds read)."""
    own = _scalar_id(item)
    if own is not None:
        return RecordedHit(own, explicit=True)
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], (int, float)) \
            and not isinstance(item[1], bool):
        inner = read_hit(item[0], rank)
        return RecordedHit(inner.own_id, item[1], inner.text, inner.title, inner.metadata, inner.explicit)
    if isinstance(item, Mapping):
        meta = item.get("metadata") or item.get("meta") or {}
        own = next((found for key in _ID_KEYS if (found := _scalar_id(item.get(key))) is not None), None)
        text = item.get("text") or item.get("content") or item.get("page_content") or ""
        return RecordedHit(own or "", item.get("score"), str(text), str(item.get("title") or ""),
                     meta if isinstance(meta, Mapping) else {}, explicit=own is not None)
    node = getattr(item, "node", None)
    if node is not None and hasattr(item, "score"):  # LlamaIndex NodeWithScore
        inner = read_hit(node, rank)
        return RecordedHit(inner.own_id, getattr(item, "score", None), inner.text, inner.title, inner.metadata)
    meta = getattr(item, "metadata", None) or getattr(item, "meta", None) or {}
    own = _scalar_id(getattr(item, "node_id", None)) or _scalar_id(getattr(item, "id_", None)) \
        or _scalar_id(getattr(item, "id", None))
    text = _text_of(item)
    if own is None and not meta and not text:
        raise RecorderError(f"hit {rank} ({type(item).__name__}) names no document", field="hits",
                            fix=f"pass each hit as {HIT_KINDS}")
    score = getattr(item, "score", None)
    return RecordedHit(own or "", score if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                 text, "", meta if isinstance(meta, Mapping) else {})


def _text_of(item: Any) -> str:
    for name in ("text", "content", "page_content"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    get = getattr(item, "get_content", None)
    if callable(get):
        value = get()
        return value if isinstance(value, str) else ""
    return ""


def hit_id(found: RecordedHit, keys: Sequence[str]) -> str:
    """Without a corpus: the id given as such, else the first metadata key holding one, else the
    framework's own id (a node UUID, a content hash)."""
    if found.explicit:
        return found.own_id
    for key in keys:
        value = _scalar_id(found.metadata.get(key))
        if value is not None:
            return value
    if found.own_id:
        return found.own_id
    raise RecorderError("a hit names no document (no id and none of the metadata keys)", field="hits",
                        fix=f"give each hit an id or one of the metadata keys {', '.join(keys)}")
