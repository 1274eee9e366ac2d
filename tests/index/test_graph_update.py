"""An update's entity graph changed in place (:mod:`hoprag.index.graph_update`) is the graph a
rebuild writes, file for file: adds, replaces, deletes and a mix over the enterprise corpus, with
the default caps and with caps so low that updates move keys across them (common entities dropped
and brought back), with a title added and one taken away that lie inside other documents' names, and an update that
only adds (the old matrices extended, hoprag.index.graph_append);
past the delta threshold, and for an index without the common entities' counts, the graph worker
rebuilds it and the files are the same."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

import hoprag.index.graph_fork as graph_fork
import hoprag.index.graph_update as graph_update
import hoprag.index.store as store
import hoprag.index.update as update
from hoprag.errors import IndexLoadError
from hoprag.index.analysis import COMMON
from hoprag.index.entity_graph import GraphConfig
from hoprag.index.graph_worker import GraphWorker
from hoprag.index.store import build_index, load_index
from hoprag.index.update import update_index
from hoprag.ingest.loaders import load_documents
from hoprag.records import Document

pytestmark = pytest.mark.integration

DOCS = load_documents(Path(__file__).parents[2] / "data" / "enterprise" / "corpus.jsonl")
#: a title ("Kestrel Plan") that lies inside the kept chunks' "Kestrel Plan Catalog" names
PLAN = Document(id="x-plan", title="Kestrel Plan", text="Kestrel Plan is how Kestrel Dynamics names the plans of "
                "the Kestrel Plan Catalog. Each Kestrel Plan has a code such as KP-118.")
#: a new title inside the same names
CATALOG = Document(id="x-catalog", title="Plan Catalog", text="The Plan Catalog lists every plan Kestrel Dynamics sells.")
FIRST = [*DOCS[:18], PLAN]
LOW_CAP = GraphConfig(min_cap=2, max_share=0.02)


def _longer(doc: Document) -> Document:
    return dataclasses.replace(doc, text=f"{doc.text} The Skyline House team confirmed it for Project Orion.")


CASES = {
    "add": ([DOCS[20], CATALOG, DOCS[26]], []),
    "replace": ([_longer(DOCS[3]), dataclasses.replace(DOCS[9], title="Kestrel Plan Catalog")], []),
    "delete": ([], [DOCS[0].id, PLAN.id, DOCS[8].id]),
    "mix": ([_longer(DOCS[2]), DOCS[22], DOCS[30]], [PLAN.id, DOCS[12].id]),
}


@pytest.fixture(params=[None, LOW_CAP], ids=["default-caps", "low-caps"])
def graph_config(request, monkeypatch) -> GraphConfig | None:
    if request.param is not None:
        monkeypatch.setattr(store, "GraphWorker", lambda: GraphWorker(request.param))
    return request.param


@pytest.fixture()
def used(monkeypatch) -> list[str]:
    """The kind of graph each update used."""
    kinds: list[str] = []

    def spy(*args, **kwargs):
        graph = graph_update.graph_for_update(*args, **kwargs)
        kinds.append(type(graph).__name__)
        return graph

    monkeypatch.setattr(update, "graph_for_update", spy)
    return kinds


def graph_files(index: Path) -> dict[str, bytes]:
    return {f"{p.parent.name}/{p.name}": p.read_bytes() for folder in ("graph", "analysis")
            for p in sorted((index / folder).iterdir())}


def _updated_and_rebuilt(tmp_path: Path, given: list[Document], deleted: list[str]) -> tuple[Path, Path]:
    build_index(FIRST, tmp_path / "updated")
    update_index(tmp_path / "updated", given, deleted)
    fresh = [d for d in given if d not in FIRST]
    gone = set(deleted) | {d.id for d in fresh}
    build_index([d for d in FIRST if d.id not in gone] + fresh, tmp_path / "rebuilt")
    return tmp_path / "updated", tmp_path / "rebuilt"


def assert_same_graph(updated: Path, rebuilt: Path) -> None:
    a, b = graph_files(updated), graph_files(rebuilt)
    assert sorted(a) == sorted(b)
    for name in b:
        assert a[name] == b[name], name
    drop = {"build_seconds"}
    assert (load_index(updated).manifest.graph.model_dump(exclude=drop)
            == load_index(rebuilt).manifest.graph.model_dump(exclude=drop))


@pytest.mark.parametrize("where", ["forked", "in-process"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_in_place_graph_update_equals_a_rebuild(case, where, graph_config, used, tmp_path, monkeypatch) -> None:
    """Changed in a forked child (hoprag.index.graph_fork, where the machine allows it) or in the
    updating process: the same files as a rebuild."""
    if where == "forked" and not graph_fork.can_fork():
        pytest.skip("no fork or a single core here: the graph is changed in process")
    monkeypatch.setattr(graph_update, "INCREMENTAL_MAX_SHARE", 1.0)
    monkeypatch.setattr(update, "can_fork", lambda: where == "forked")
    updated, rebuilt = _updated_and_rebuilt(tmp_path, *CASES[case])
    assert used == ["ForkedGraph" if where == "forked" else "IncrementalGraph"]
    assert_same_graph(updated, rebuilt)
    info = load_index(rebuilt).manifest.graph
    if graph_config is LOW_CAP:  # the caps really cut: common entities are left out and counted
        assert info.dropped_common > 0
        assert len(json.loads((rebuilt / "analysis" / COMMON).read_text(encoding="utf-8"))) == info.dropped_common


def test_a_forked_child_that_dies_before_reporting_leaves_the_graph_to_the_updating_process(
        used, tmp_path, monkeypatch) -> None:
    if not graph_fork.can_fork():
        pytest.skip("no fork or a single core here: the graph is changed in process")
    monkeypatch.setattr(graph_update, "INCREMENTAL_MAX_SHARE", 1.0)
    monkeypatch.setattr(graph_fork, "_run_child", lambda *args: os._exit(3))  # the child leaves at once
    updated, rebuilt = _updated_and_rebuilt(tmp_path, *CASES["add"])
    assert used == ["ForkedGraph"]
    assert_same_graph(updated, rebuilt)


def test_a_delta_past_the_threshold_is_rebuilt_by_the_worker_path(used, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(graph_update, "INCREMENTAL_MAX_SHARE", 0.0)
    updated, rebuilt = _updated_and_rebuilt(tmp_path, *CASES["mix"])
    assert used == ["GraphWorker"]
    assert_same_graph(updated, rebuilt)


def test_an_index_without_the_common_counts_is_rebuilt_then_updated_in_place(used, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(store, "GraphWorker", lambda: GraphWorker(LOW_CAP))
    monkeypatch.setattr(graph_update, "INCREMENTAL_MAX_SHARE", 1.0)
    target = tmp_path / "index"
    build_index(FIRST, target)
    (target / "analysis" / COMMON).unlink()  # as an index built before the counts were kept
    update_index(target, [DOCS[20]], [])
    update_index(target, [DOCS[21]], [DOCS[1].id])
    assert used == ["GraphWorker", "ForkedGraph" if graph_fork.can_fork() else "IncrementalGraph"]
    build_index([d for d in FIRST if d.id != DOCS[1].id] + [DOCS[20], DOCS[21]], tmp_path / "rebuilt")
    assert_same_graph(target, tmp_path / "rebuilt")


def test_an_update_that_only_adds_extends_the_old_matrices_as_a_rebuild_makes_them(graph_config, tmp_path,
                                                                                     monkeypatch) -> None:
    """New documents whose titles lie inside no kept name (hoprag.index.graph_append): the old
    chunk_entity and entity_chunk extended, not transposed again; with low caps a key leaves the
    entities (its old row dropped) and new keys get rows between the old ones."""
    import hoprag.index.graph_append as graph_append

    seen: list[tuple[int, int]] = []

    def spy(graph_dir, new_row, *args):
        seen.append((int((new_row < 0).sum()), int(new_row.size)))
        return graph_append.appended_matrices(graph_dir, new_row, *args)

    monkeypatch.setattr(graph_update, "appended_matrices", spy)
    monkeypatch.setattr(graph_update, "INCREMENTAL_MAX_SHARE", 1.0)
    monkeypatch.setattr(update, "can_fork", lambda: False)
    updated, rebuilt = _updated_and_rebuilt(tmp_path, [DOCS[20], DOCS[26], DOCS[31]], [])
    assert_same_graph(updated, rebuilt)
    assert len(seen) == 1
    dropped, old_entities = seen[0]
    new_entities = load_index(rebuilt).manifest.graph.entities
    assert new_entities > old_entities - dropped  # new keys came in
    if graph_config is LOW_CAP:
        assert dropped > 0


def test_damaged_graph_files_stop_the_update_with_the_rebuild_fix_and_keep_the_index(tmp_path) -> None:
    target = tmp_path / "index"
    build_index(FIRST, target)
    (target / "analysis" / COMMON).write_text("[[", encoding="utf-8")
    before = graph_files(target)
    with pytest.raises(IndexLoadError, match="damaged") as caught:
        update_index(target, [DOCS[20]], [])
    assert f"hoprag index CORPUS --out {target}" in str(caught.value)
    assert graph_files(target) == before and load_index(target).manifest.document_count == len(FIRST)


def test_no_fork_while_another_non_daemon_thread_runs() -> None:
    """A program's worker thread could hold a lock the child would wait for: the graph is then changed
    in process (a daemon thread, as a progress display's, does not stop the fork)."""
    import threading

    if not graph_fork.can_fork():
        pytest.skip("no fork or a single core here")
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert not graph_fork.can_fork()
    finally:
        release.set()
        worker.join()
    shown = threading.Event()
    display = threading.Thread(target=shown.wait, daemon=True)
    display.start()
    try:
        assert display.is_alive() and graph_fork.can_fork()
    finally:
        shown.set()
