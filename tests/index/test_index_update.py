"""An updated index is the index a rebuild of the updated corpus gives: random sequences of adds,
replaces and deletes over the enterprise corpus, compared with a build of the expected corpus order
(kept documents in order, then the new and replaced ones) — every file's arrays (BM25 scores,
vocabulary, entity graph, dense vectors, the kept analysis), the rows, the manifest's corpus hash and
counts, and every case question's hits and scores at each clearance."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoprag.errors import InputError
from hoprag.index.manifest import IndexConfig
from hoprag.index.store import build_index, load_index
from hoprag.index.update import update_index
from hoprag.index.update_plan import read_delete_ids
from hoprag.ingest.loaders import load_documents
from hoprag.records import Document

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[2] / "data" / "enterprise"
DOCS = load_documents(DATA / "corpus.jsonl")
QUESTIONS = [json.loads(line)["query"] for line in (DATA / "cases.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
CONFIG = IndexConfig(dense=True, embedder="static")
#: a plain file compared byte for byte; the manifest and the SQLite file are compared by content
_BY_CONTENT = {"manifest.json", "corpus.sqlite"}


def _variant(doc: Document, how: int, other: Document) -> Document:
    """A new version of ``doc``: more text, less text, another title, another clearance."""
    if how == 0:
        return dataclasses.replace(doc, text=f"{doc.text} {other.text[:300]}", version="v9")
    if how == 1:
        return dataclasses.replace(doc, text=doc.text[: max(40, len(doc.text) // 3)])
    if how == 2:
        return dataclasses.replace(doc, title=other.title)
    return dataclasses.replace(doc, acl="restricted" if doc.acl != "restricted" else "public")


@st.composite
def _steps(draw: st.DrawFn) -> tuple[list[Document], list[tuple[list[Document], list[str]]]]:
    """A first corpus and a few updates (documents given, ids deleted), each valid for the corpus it meets."""
    ids = draw(st.permutations(range(len(DOCS))))
    first = [DOCS[i] for i in sorted(ids[:14])]
    pool = [DOCS[i] for i in ids[14:]]
    current = list(first)
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        n = len(current)
        deleted = draw(st.sets(st.integers(0, n - 1), max_size=min(3, n - 1)))
        rest = [i for i in range(n) if i not in deleted]
        replaced = draw(st.sets(st.sampled_from(rest), max_size=3))
        unchanged = draw(st.sets(st.sampled_from(rest), max_size=2)) - replaced
        added = [pool.pop() for _ in range(min(len(pool), draw(st.integers(0, 3))))]
        given_docs = [_variant(current[i], draw(st.integers(0, 3)), DOCS[draw(st.integers(0, len(DOCS) - 1))])
                      for i in sorted(replaced)]
        given_docs = [d for d in given_docs if d != current[[c.id for c in current].index(d.id)]]
        given_docs += added + [current[i] for i in sorted(unchanged)]
        given_docs = draw(st.permutations(given_docs))
        steps.append((list(given_docs), [current[i].id for i in sorted(deleted)]))
        gone = {current[i].id for i in deleted} | {d.id for d in given_docs if d.id in {c.id for c in current} and d not in current}
        fresh = [d for d in given_docs if d not in current]
        current = [d for d in current if d.id not in gone] + fresh
    return first, steps


def _expected(first: list[Document], steps: list[tuple[list[Document], list[str]]]) -> list[Document]:
    current = list(first)
    for given_docs, deleted in steps:
        fresh = [d for d in given_docs if d not in current]
        gone = set(deleted) | {d.id for d in fresh}
        current = [d for d in current if d.id not in gone] + fresh
    return current


def assert_same_index(updated: Path, rebuilt: Path) -> None:
    files = sorted(p.relative_to(rebuilt) for p in rebuilt.rglob("*") if p.is_file())
    # history/ holds the versions the updates took out (hoprag.index.history): beside the index, not in it
    current = sorted(p.relative_to(updated) for p in updated.rglob("*") if p.is_file() and "history" not in p.parts)
    assert current == files
    for name in files:
        a, b = updated / name, rebuilt / name
        if name.suffix == ".npy":
            x, y = np.load(a), np.load(b)
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
        elif name.name not in _BY_CONTENT:
            assert a.read_bytes() == b.read_bytes(), name
    u, r = load_index(updated), load_index(rebuilt)
    for field in ("document_count", "chunk_count", "corpus_hash", "acl_classes", "config_hash"):
        assert getattr(u.manifest, field) == getattr(r.manifest, field), field
    assert u.manifest.graph.model_dump(exclude={"build_seconds"}) == r.manifest.graph.model_dump(exclude={"build_seconds"})
    assert u.manifest.dense == r.manifest.dense
    assert list(u.chunks.db.iter_documents()) == list(r.chunks.db.iter_documents())
    assert list(u.chunks.db.iter_chunks()) == list(r.chunks.db.iter_chunks())
    assert sorted(u.chunks.db.title_key_rows()) == sorted(r.chunks.db.title_key_rows())
    for question in QUESTIONS:
        for clearance in (None, "public", "internal"):
            for mode in ("bm25", "dense") if r.has_dense else ("bm25",):
                hits = [(h.chunk_id, h.score) for h in u.retriever(mode).retrieve(question, k=10, clearance=clearance)]
                assert hits == [(h.chunk_id, h.score) for h in r.retriever(mode).retrieve(question, k=10, clearance=clearance)]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_steps())
def test_any_sequence_of_updates_equals_a_rebuild(tmp_path_factory, case):
    first, steps = case
    work = tmp_path_factory.mktemp("update")
    build_index(first, work / "updated", CONFIG)
    for given_docs, deleted in steps:
        update_index(work / "updated", given_docs, deleted)
    expected = _expected(first, steps)
    build_index(expected, work / "rebuilt", CONFIG)
    assert_same_index(work / "updated", work / "rebuilt")
    assert len(load_index(work / "updated").manifest.updates) <= len(steps)


def test_an_update_records_its_change_and_keeps_clearance(tmp_path):
    target = tmp_path / "index"
    first = build_index(DOCS[:10], target)
    public = [d for d in DOCS[:10] if d.acl == "public"][0]
    hidden = dataclasses.replace(public, acl="restricted", text=public.text + " Quokka clause.")
    result = update_index(target, [hidden, DOCS[10]], [DOCS[0].id])
    change = result.manifest.updates[-1]
    assert (change.added, change.replaced, change.deleted, change.unchanged) == (1, 1, 1, 0)
    assert change.previous_corpus_hash == first.corpus_hash and change.method == "delta"
    index = load_index(target)
    # the replaced version is restricted now: a public caller no longer finds it, a restricted one does
    assert not any(h.doc_id == public.id for h in index.bm25.retrieve("quokka clause", k=10, clearance="public"))
    assert [h.doc_id for h in index.bm25.retrieve("quokka clause", k=10, clearance="restricted")][:1] == [public.id]
    assert index.documents[public.id].text.endswith("Quokka clause.")
    assert DOCS[0].id not in index.documents
    # given again unchanged: nothing to do, the index is not rewritten
    again = update_index(target, [hidden], [])
    assert not again.changed and again.manifest.artifact_id == result.manifest.artifact_id


def test_an_index_without_its_analysis_is_updated_by_a_rebuild(tmp_path):
    import shutil

    target = tmp_path / "index"
    build_index(DOCS[:8], target)
    shutil.rmtree(target / "analysis")  # as an index built before analysis/ existed
    result = update_index(target, [DOCS[8]], [DOCS[1].id])
    assert result.manifest.updates[-1].method == "rebuild"
    build_index([d for d in DOCS[:8] if d.id != DOCS[1].id] + [DOCS[8]], tmp_path / "rebuilt")
    assert_same_index(target, tmp_path / "rebuilt")


def test_deletions_are_checked(tmp_path):
    target = tmp_path / "index"
    build_index(DOCS[:5], target)
    with pytest.raises(InputError, match="not in the index"):
        update_index(target, [], ["no-such-id"])
    with pytest.raises(InputError, match="both given and listed"):
        update_index(target, [DOCS[1]], [DOCS[1].id])
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{DOCS[0].id}\n\n# a comment\n{{\"id\": \"{DOCS[1].id}\"}}\n", encoding="utf-8")
    assert read_delete_ids(ids) == [DOCS[0].id, DOCS[1].id]
    ids.write_text(f"{DOCS[0].id}\n{DOCS[0].id}\n", encoding="utf-8")
    with pytest.raises(InputError, match="listed twice"):
        read_delete_ids(ids)


def test_an_update_whose_graph_is_built_in_the_worker_process_equals_a_rebuild(tmp_path, monkeypatch):
    """A large index's update resumes the graph in a worker process (as a large build builds it there):
    forced here from the first chunk, the update still writes the rebuild's files."""
    import hoprag.index.graph_worker as graph_worker

    if graph_worker._cores() < 2:
        pytest.skip("the graph moves to a worker process only with more than one core")
    target = tmp_path / "index"
    build_index(DOCS[:12], target)
    monkeypatch.setattr(graph_worker, "WORKER_MIN_CHUNKS", 1)
    started = []
    real_start = graph_worker.GraphWorker._start
    monkeypatch.setattr(graph_worker.GraphWorker, "_start", lambda self: started.append(1) or real_start(self))
    replaced = dataclasses.replace(DOCS[3], text=DOCS[3].text + " " + DOCS[20].text[:200])
    update_index(target, [DOCS[12], replaced, DOCS[13]], [DOCS[5].id])
    assert started, "the update built its graph in process"
    expected = [d for d in DOCS[:12] if d.id not in {DOCS[3].id, DOCS[5].id}] + [DOCS[12], replaced, DOCS[13]]
    build_index(expected, tmp_path / "rebuilt")
    assert_same_index(target, tmp_path / "rebuilt")
