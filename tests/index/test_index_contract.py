"""One index contract (:class:`hoprag.index.contract.Index`), two stores, one way to open them.

Every test of the first part runs against the local index and the PostgreSQL one, built from the
bundled enterprise corpus (36 documents: 9 public, 18 internal, 9 restricted). The query's
expectations are read off the corpus by hand: 'forestry', 'canopy' and 'surveys' are written in
contract-38 only (restricted, one chunk), and 'Project Tamarack' in contract-38 and ticket-2041
(internal) only. Then ``ablate`` and ``pool`` through the CLI on a PostgreSQL URL, and the checks
that every command opens its index through :func:`hoprag.index.open.open_index` and that nothing
outside ``hoprag.index`` opens one another way.
"""

from __future__ import annotations

import ast
import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hoprag.errors import ConfigError, IndexLoadError
from hoprag.index.contract import Index, IndexStats
from hoprag.index.entity_graph import EntityGraph
from hoprag.index.open import open_index
from hoprag.index.pg_build import build_pg_index
from hoprag.index.store import IndexConfig, build_index
from hoprag.ingest.loaders import load_corpora
from hoprag.pipeline.factory import make_engine
from hoprag.records import Document
from tests.cli_run import run_cli

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
SRC = ROOT / "src" / "hoprag"
QUERY = "forestry canopy surveys for Project Tamarack"
STORES = ("local", "postgres")
#: the enterprise corpus's documents per acl class, counted in corpus.jsonl
ACL_CLASSES = {"internal": 18, "public": 9, "restricted": 9}


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return load_corpora([ENTERPRISE / "corpus.jsonl"])


@pytest.fixture(scope="module")
def local_dir(docs: list[Document], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("contract") / "index"
    build_index(docs, out, IndexConfig())
    return out


@pytest.fixture(scope="module")
def local_index(local_dir: Path) -> Iterator[Index]:
    index = open_index(str(local_dir))
    yield index
    index.close()


@pytest.fixture(scope="module")
def pg_index_url(docs: list[Document], pg_server: object) -> str:
    """The enterprise corpus built into a database of this module's own, as a user-facing URL."""
    import psycopg

    base = pg_server.get_uri()  # type: ignore[attr-defined]
    name = f"contract_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = base.replace("/postgres?", f"/{name}?", 1) + "&index=contract"
    build_pg_index(docs, url, IndexConfig())
    return url


@pytest.fixture(scope="module")
def postgres_index(pg_index_url: str) -> Iterator[Index]:
    index = open_index(pg_index_url)
    yield index
    index.close()


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def index(store: str, request: pytest.FixtureRequest) -> Index:
    return request.getfixturevalue(f"{store}_index")




# --- every store ------------------------------------------------------------------------------------


def test_each_store_is_an_index_by_declaration(index: Index) -> None:
    assert isinstance(index, Index)
    assert Index in type(index).__mro__  # implemented explicitly, not by a coincidence of names


def test_hits_are_ranked_best_first_within_k(index: Index) -> None:
    hits = index.retriever("bm25").retrieve(QUERY, 5)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    # contract-38 holds every query term, ticket-2041 only 'project tamarack'; the rest 'project' at most
    assert [h.doc_id for h in hits[:2]] == ["contract-38", "ticket-2041"]
    assert all(index.chunks[h.chunk_id].doc_id == h.doc_id for h in hits)


def test_clearance_hides_restricted_documents_and_still_returns_k(index: Index) -> None:
    retriever = index.retriever("bm25")
    everything = retriever.retrieve(QUERY, len(index.chunks))
    internal = retriever.retrieve(QUERY, 5, clearance="internal")
    # contract-38 was first: filtering the top 5 afterwards would leave 4; the caller gets 5
    assert len(internal) == 5 and "contract-38" not in {h.doc_id for h in internal}
    assert internal[0].doc_id == "ticket-2041"
    assert [h.chunk_id for h in internal] == [h.chunk_id for h in everything
                                               if index.documents[h.doc_id].acl != "restricted"][:5]
    public = retriever.retrieve(QUERY, 5, clearance="public")
    assert public and all(index.documents[h.doc_id].acl == "public" for h in public)


def test_excluded_chunks_are_dropped_before_top_k(index: Index) -> None:
    hits = index.retriever("bm25").retrieve(QUERY, 5, exclude=["contract-38#0", "no-such-chunk"])
    assert len(hits) == 5 and hits[0].doc_id == "ticket-2041"
    assert "contract-38#0" not in {h.chunk_id for h in hits}


def test_documents_and_chunk_text(index: Index) -> None:
    assert len(index.documents) == index.manifest.document_count == 36
    assert len(index.chunks) == index.manifest.chunk_count
    doc = index.documents["contract-38"]
    assert (doc.title, doc.acl, doc.doc_type) == ("Order Form - Project Tamarack", "restricted", "contract")
    chunk = index.chunks["contract-38#0"]
    assert chunk.doc_id == "contract-38" and chunk.text == doc.text[chunk.start:chunk.end]
    assert "forestry canopy surveys" in chunk.text
    assert "no-such-doc" not in index.documents and index.documents.get("no-such-doc") is None
    assert list(index.documents)[:2] == ["contract-09", "contract-14"]  # corpus order (corpus.jsonl's first two)


def test_the_entity_graph_is_there_or_none(index: Index, store: str) -> None:
    graph = index.entity_graph()
    if store == "local":
        assert isinstance(graph, EntityGraph) and graph.n_chunks == index.manifest.chunk_count
    else:  # a PostgreSQL index keeps no entity graph
        assert graph is None
    assert index.stats().graph is (graph is not None)


def test_stats_and_manifest(index: Index, store: str, local_dir: Path, pg_index_url: str) -> None:
    location = str(local_dir) if store == "local" else index.location
    assert index.stats() == IndexStats(store=store, location=location, artifact_id=index.manifest.artifact_id,
                                       documents=36, chunks=index.manifest.chunk_count, dense=False,
                                       graph=store == "local")
    if store == "postgres":
        assert location.startswith("postgresql://") and location.endswith("index=contract")
        password = pg_index_url.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
        assert not password or password not in location
    assert index.manifest.acl_classes == ACL_CLASSES
    assert index.has_dense is False


def test_modes_the_index_lacks_are_refused_with_the_fix(index: Index) -> None:
    with pytest.raises(ConfigError, match="unknown retrieval mode 'nope'; valid: bm25, dense, hybrid"):
        index.retriever("nope")
    with pytest.raises(IndexLoadError, match="built without dense vectors"):
        index.retriever("dense")


def test_the_engine_answers_over_every_store_at_a_clearance(index: Index, store: str) -> None:
    engine = make_engine("multihop", index, clearance="internal")
    assert (engine.graph_hop is not None) is (store == "local")  # the graph hop walks the index's graph
    trace = engine.answer("Which support tier applies to Project Tamarack?", case_id="t")
    cited = {e.hit.doc_id for e in trace.evidence}
    assert "ticket-2041" in cited and "contract-38" not in cited


# --- the CLI on a PostgreSQL URL --------------------------------------------------------------------


def test_ablate_and_pool_take_a_postgres_url(pg_index_url: str, postgres_index: Index, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    cases = ENTERPRISE / "cases.jsonl"
    code, output = run_cli(["ablate", pg_index_url, str(cases), "--out", str(tmp_path / "ab")], capsys)
    assert code == 0, output
    assert "| single |" in output and "| iterative |" in output
    lines = (tmp_path / "ab" / "traces-single.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 16  # one trace per case
    assert not (tmp_path / "ab" / "traces-graph.jsonl").exists()  # no entity graph: no graph row

    from hoprag.cli_io import COMMAND_IO

    pool = next(name for name in COMMAND_IO if name.split()[-1] == "pool").split()
    code, output = run_cli([*pool, pg_index_url, str(cases), "--out", str(tmp_path / "pool"), "--depth", "5",
                            "--clearance", "internal"], capsys)
    assert code == 0, output
    manifest = json.loads((tmp_path / "pool" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["index"] == postgres_index.location and manifest["clearance"] == "internal"
    rows = [json.loads(line) for line in (tmp_path / "pool" / "annotation.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["case_id"] for r in rows} == {json.loads(line)["case_id"] for line in cases.read_text(encoding="utf-8").splitlines()}
    assert all(postgres_index.documents[r["doc_id"]].acl != "restricted" for r in rows)


# --- one way to open an index -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_every_command_that_takes_an_index_opens_it_through_open_index(monkeypatch, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Each command the output-guard table lists with an index input is run on a URL; the one opener
    refuses it with a word of its own, so a command that opened the index any other way says otherwise."""
    from hoprag.cli_io import COMMAND_IO
    from hoprag.index import open as opener

    url = "postgresql://probe@127.0.0.1:9/db?index=probe"
    cases = str(ENTERPRISE / "cases.jsonl")
    rest = {  # what follows the index, by the command's last word
        "search": ["retention"],
        "ask": ["What is KP-214?"],
        "run": [cases, "--out", str(tmp_path / "t.jsonl"), "-q"],
        "ablate": [cases, "--out", str(tmp_path / "ab")],
        "pool": [cases, "--out", str(tmp_path / "pool")],
        "serve": ["--port", str(_free_port()), "--store", str(tmp_path / "store.db")],
    }
    commands = [name for name, io in COMMAND_IO.items() if "index_dir" in io.inputs]
    assert sorted(name.split()[-1] for name in commands) == sorted(rest)  # a new one needs a row here
    argv = {name: [*name.split(), url, *rest[name.split()[-1]]] for name in commands}
    opened: list[str] = []

    def refuse(target, **options):
        opened.append(str(target))
        raise ConfigError("opened-through-open-index")

    monkeypatch.setattr(opener, "open_index", refuse)
    for name, args in argv.items():
        code, output = run_cli(args, capsys)
        assert code == 2 and "opened-through-open-index" in output, (name, output)
    assert opened == [url] * len(argv)


def _calls_and_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
            if (isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value == "graph"):
                names.add("getattr-graph")
    return names


def test_nothing_outside_the_index_package_opens_an_index_another_way() -> None:
    """load_index, open_pg_index and the store classes' constructors are the index package's own; every
    caller goes through open_index and asks index.entity_graph() for the graph (no probing)."""
    private = {"load_index", "open_pg_index", "LoadedIndex", "PgIndex"}
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        found = _calls_and_imports(path)
        inside = path.parent == SRC / "index"
        bad = (found & {"getattr-graph"}) | (set() if inside else found & private)
        if bad:
            offenders[str(path.relative_to(SRC))] = sorted(bad)
    assert not offenders, offenders


def test_the_index_package_imports_no_layer_above_it() -> None:
    above = ("hoprag.pipeline", "hoprag.evaluation", "hoprag.gates", "hoprag.service", "hoprag.commands",
             "hoprag.cli", "hoprag.demo", "hoprag.report", "hoprag.store")
    offenders = []
    for path in sorted((SRC / "index").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {m}" for m in modules if m.startswith(above)]
    assert not offenders, offenders
