"""Runs a pipeline script of docs/evaluate-your-pipeline.md as ``python SCRIPT`` runs it, and records what each of
its retrieval calls returned, so the scores can be computed apart from hoprag.

``python run_recorded.py SCRIPT CORPUS`` writes ``SCRIPT.calls.json``: one list per retrieval call, in
call order, of the corpus ids of its documents in rank order (read from the metadata value that is a
corpus id, whatever its key). The script itself runs unchanged, as ``__main__``; only the retriever's
method is wrapped, beneath the instrumentor, which still traces the call. Where
llama-index-retrievers-bm25 is not installed (it pins PyStemmer below 3), the test's own retriever of
the same construction stands in for it (:mod:`llama_index_bm25`).
"""

from __future__ import annotations

import functools
import json
import runpy
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def _bm25_package() -> Any:
    try:
        from llama_index.retrievers.bm25 import BM25Retriever
    except ImportError:
        from llama_index_bm25 import BM25Retriever

        for name in ("llama_index.retrievers", "llama_index.retrievers.bm25"):
            try:
                __import__(name)
            except ImportError:
                sys.modules[name] = types.ModuleType(name)
        sys.modules["llama_index.retrievers.bm25"].BM25Retriever = BM25Retriever  # type: ignore[attr-defined]
    return BM25Retriever


def _record(cls: type, method: str, metas: Callable[[Any], Iterable[Mapping[str, Any]]], ids: set[str],
            calls: list[list[str]]) -> None:
    original = getattr(cls, method)

    @functools.wraps(original)
    def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        calls.append([next((v for v in meta.values() if v in ids), "") for meta in metas(out)])
        return out

    setattr(cls, method, recorded)


def main(script: str, corpus: str) -> None:
    ids = {json.loads(line)["id"] for line in Path(corpus).read_text(encoding="utf-8").splitlines() if line.strip()}
    calls: list[list[str]] = []
    text = Path(script).read_text(encoding="utf-8")
    if "llama_index" in text:
        _record(_bm25_package(), "retrieve", lambda hits: [h.node.metadata for h in hits], ids, calls)
    if "haystack" in text:
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        _record(InMemoryBM25Retriever, "run", lambda out: [d.meta for d in out["documents"]], ids, calls)
    if "langchain" in text:
        from langchain_community.retrievers import BM25Retriever

        _record(BM25Retriever, "invoke", lambda docs: [d.metadata for d in docs], ids, calls)
    sys.path.insert(0, str(Path(script).resolve().parent))  # as `python SCRIPT` puts it first: its own modules
    runpy.run_path(script, run_name="__main__")
    Path(script + ".calls.json").write_text(json.dumps(calls), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
