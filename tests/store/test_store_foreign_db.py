"""The run store opens only its own database: another application's SQLite file or PostgreSQL database
is refused with one message and left exactly as it was, through every command that takes a run store.

A foreign database here is what a user may well have lying around: an application's SQLite file with
its own ``runs`` table (the name hoprag uses too) and a ``users`` table.
"""

from __future__ import annotations

import ast
import sqlite3
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
import typer.main

from hoprag.cli import app, main
from hoprag.store import RunStore, StoreError
from hoprag.store import schema as t
from hoprag.store.ownership import (APPLICATION_ID, FOREIGN, NEW, NEWER, OURS, ForeignStoreError, StoreFacts,
                                    classify)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ENTERPRISE = ROOT / "data" / "enterprise"

V1_RUNS = frozenset({"run_id", "kind", "created_at", "artifact_id", "config", "meta"})
V2_TABLES = {table.name: frozenset(table.columns.keys()) for table in t.metadata.sorted_tables
             if table.name != t.META_TABLE}


def foreign_sqlite(path: Path) -> Path:
    """Another application's database: its own ``runs`` (other columns) and ``users``, with rows."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, owner TEXT)")
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
        conn.execute("INSERT INTO runs (name, owner) VALUES ('nightly', 'ana'), ('weekly', 'ben')")
        conn.execute("INSERT INTO users (email) VALUES ('ana@example.org')")
    conn.close()
    return path


def snapshot(path: Path) -> tuple[bytes, list[str]]:
    """The file's bytes and its folder's listing (no -wal, -shm or -journal left beside it)."""
    return path.read_bytes(), sorted(p.name for p in path.parent.iterdir())


# --- whose database is it (the rules, on hand-made facts) --------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(("facts", "kind"), [
    (StoreFacts(), NEW),
    (StoreFacts(application_id=0), NEW),
    (StoreFacts(tables={"runs": V1_RUNS}), OURS),  # a version-1 store (only runs written so far)
    (StoreFacts(tables=V2_TABLES, application_id=0), OURS),  # a version-2 store, before the marks
    (StoreFacts(tables={**V2_TABLES, "users": frozenset({"id"})}), FOREIGN),
    (StoreFacts(tables={"runs": frozenset({"id", "name", "owner"})}), FOREIGN),
    (StoreFacts(tables={"runs": V1_RUNS | {"owner"}}), FOREIGN),
    (StoreFacts(tables={"users": frozenset({"id"})}), FOREIGN),
    (StoreFacts(application_id=0x12345678), FOREIGN),
    (StoreFacts(tables={"anything": frozenset({"x"})}, application_id=APPLICATION_ID), OURS),
    (StoreFacts(tables={t.META_TABLE: frozenset({"key", "value"})},
                marker={"application": "hoprag", "schema_version": str(t.SCHEMA_VERSION)}), OURS),
    (StoreFacts(tables={t.META_TABLE: frozenset({"key", "value"})},
                marker={"application": "hoprag", "schema_version": str(t.SCHEMA_VERSION + 1)}), NEWER),
    (StoreFacts(tables={t.META_TABLE: frozenset({"key", "value"})}, marker={"application": "other"}), FOREIGN),
])
def test_whose_database_it_is(facts: StoreFacts, kind: str) -> None:
    assert classify(facts).kind == kind


@pytest.mark.unit
def test_a_foreign_table_is_named_in_the_reason() -> None:
    verdict = classify(StoreFacts(tables={"metrics": frozenset({"id"}), "users": frozenset({"id"})}))
    assert verdict.reason == ("it holds tables hoprag did not make (users), and its table 'metrics' is not hoprag's "
                              "(it lacks meta, metric, run_id, stage, ts and 1 more)")
    verdict = classify(StoreFacts(tables={"runs": frozenset({"id", "name", "owner"})}))
    assert verdict.reason == "its table 'runs' is not hoprag's (columns id, name, owner are not hoprag's)"


# --- SQLite ------------------------------------------------------------------------------------


@pytest.mark.unit
def test_another_applications_sqlite_file_is_refused_and_left_byte_identical(tmp_path: Path) -> None:
    db = foreign_sqlite(tmp_path / "app.db")
    before = snapshot(db)
    with pytest.raises(ForeignStoreError) as caught:
        RunStore(db)
    message = str(caught.value)
    assert message.startswith(f"{db}: not hoprag's run store: it holds tables hoprag did not make (users), and "
                              "its table 'runs' is not hoprag's (columns id, name, owner are not hoprag's)")
    assert "nothing in it was changed" in message
    assert message.endswith("Fix: point --store (or HOPRAG_STORE) at hoprag's own database, e.g. --store "
                            ".hoprag/hoprag.db (created when missing), or at an empty PostgreSQL database")
    assert snapshot(db) == before


@pytest.mark.unit
@pytest.mark.parametrize("content", [b'{"case_id": "q1", "query": "who?"}\n', b"\x00\x01binary" * 40, b"SQLite"])
def test_a_file_that_is_not_sqlite_is_refused_and_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(content)
    with pytest.raises(ForeignStoreError, match="the file is not a SQLite database"):
        RunStore(path)
    assert snapshot(path) == (content, ["cases.jsonl"])


@pytest.mark.unit
def test_a_directory_is_refused_naming_a_file_inside_it(tmp_path: Path) -> None:
    folder = tmp_path / "stores"
    folder.mkdir()
    with pytest.raises(ForeignStoreError, match=r"is a directory.*Fix: pass a file path, e\.g\. --store .*stores/hoprag\.db"):
        RunStore(folder)
    assert list(folder.iterdir()) == []


@pytest.mark.unit
def test_a_file_with_another_application_id_and_no_tables_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA application_id = {0x464C4442}")  # 'FLDB': another application's mark
        conn.execute("CREATE TABLE t (x)")
        conn.execute("DROP TABLE t")  # the header is written, no table is left
    conn.close()
    before = snapshot(db)
    with pytest.raises(ForeignStoreError, match="its SQLite application_id is 0x464c4442"):
        RunStore(db)
    assert snapshot(db) == before


def marks(db: Path) -> tuple[int, dict[str, str]]:
    with sqlite3.connect(db) as conn:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        rows = dict(conn.execute(f"SELECT key, value FROM {t.META_TABLE}").fetchall())
    conn.close()
    return app_id, rows


MARKED = (APPLICATION_ID, {"application": "hoprag", "schema_version": str(t.SCHEMA_VERSION)})


@pytest.mark.unit
@pytest.mark.parametrize("start", ["missing", "empty file"])
def test_a_new_or_empty_file_becomes_a_marked_store(tmp_path: Path, start: str) -> None:
    db = tmp_path / "sub" / "hoprag.db"
    if start == "empty file":
        db.parent.mkdir()
        db.touch()
    with RunStore(db) as store:
        store.create_run("r1")
    assert marks(db) == MARKED
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with RunStore(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["r1"]


@pytest.mark.unit
def test_a_store_of_an_earlier_hoprag_without_marks_is_recognised_and_marked(tmp_path: Path) -> None:
    """Every table of schema 2, created as hoprag did then (no hoprag_meta, no application_id)."""
    db = tmp_path / "hoprag.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        t.metadata.create_all(conn, tables=[tb for tb in t.metadata.sorted_tables if tb.name != t.META_TABLE])
        conn.execute(sa.text("INSERT INTO baselines VALUES ('default', 'old', '2024-05-01 00:00:00')"))
    engine.dispose()
    assert marks_missing(db)
    with RunStore(db) as store:
        assert store.get_baseline().run_id == "old"
    assert marks(db) == MARKED


def marks_missing(db: Path) -> bool:
    with sqlite3.connect(db) as conn:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    return app_id == 0 and t.META_TABLE not in tables


@pytest.mark.unit
def test_a_store_of_a_newer_hoprag_is_refused_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "hoprag.db"
    RunStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE {t.META_TABLE} SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    before = snapshot(db)
    with pytest.raises(ForeignStoreError, match=r"made by a newer hoprag \(schema version 99.*Fix: upgrade hoprag"):
        RunStore(db)
    assert snapshot(db) == before


@pytest.mark.unit
def test_a_store_error_is_still_a_store_error(tmp_path: Path) -> None:
    """Refusing a foreign database did not swallow the old failures: an unwritable place still says so."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open the run store"):
        RunStore(blocker / "inside" / "hoprag.db")


# --- PostgreSQL --------------------------------------------------------------------------------


def pg_dump(url: str) -> list[tuple]:
    """Every table and column of the public schema, and each table's rows."""
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        columns = conn.execute(sa.text(
            "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position")).all()
        tables = sorted({c[0] for c in columns})
        rows = [(name, sorted(map(tuple, conn.execute(sa.text(f'SELECT * FROM "{name}"')).all()))) for name in tables]
    engine.dispose()
    return [tuple(c) for c in columns] + rows


def foreign_pg(url: str) -> str:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE runs (id SERIAL PRIMARY KEY, name TEXT NOT NULL, owner TEXT)"))
        conn.execute(sa.text("CREATE TABLE metrics (id SERIAL PRIMARY KEY, label TEXT)"))
        conn.execute(sa.text("INSERT INTO runs (name, owner) VALUES ('nightly', 'ana')"))
    engine.dispose()
    return url


@pytest.mark.integration
def test_a_postgres_database_with_other_tables_of_our_names_is_refused_unchanged(pg_url: str) -> None:
    url = foreign_pg(pg_url)
    before = pg_dump(url)
    with pytest.raises(ForeignStoreError, match="not hoprag's run store: its table 'metrics' is not hoprag's \\(columns label"):
        RunStore(url)
    assert pg_dump(url) == before


@pytest.mark.integration
def test_an_empty_postgres_database_becomes_a_marked_store(pg_url: str) -> None:
    with RunStore(pg_url) as store:
        store.create_run("r1")
    engine = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.text(f"SELECT key, value FROM {t.META_TABLE}")).all())
    engine.dispose()
    assert rows == MARKED[1]
    with RunStore(pg_url) as again:
        assert [r.run_id for r in again.list_runs()] == ["r1"]


# --- one way in ---------------------------------------------------------------------------------

#: what may create a store engine or its tables: the opening itself and what it is built from
OPENING_MODULES = {"store/ownership.py", "store/connection.py", "store/schema.py"}


@pytest.mark.unit
def test_no_module_opens_a_store_database_around_open_store_engine() -> None:
    """A SQLAlchemy engine, the store's engine factory or its table creation used anywhere else would
    reach a database without the ownership check."""
    source = ROOT / "src" / "hoprag"
    offenders = []
    for path in sorted(source.rglob("*.py")):
        where = path.relative_to(source).as_posix()
        if where in OPENING_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module in ("hoprag.store.connection", "hoprag.store.schema"):
                names = [a.name for a in node.names if a.name in ("make_engine", "ensure_schema", "create_all")]
            elif isinstance(node, ast.Attribute) and node.attr in ("create_engine", "ensure_schema", "create_all"):
                names = [node.attr]
            offenders += [f"{where}:{node.lineno} {name}" for name in names]
    assert offenders == []


# --- every command that takes a run store -----------------------------------------------------

#: options named --store that are not the run store, and what they are instead
NOT_THE_RUN_STORE = {"index": "the PostgreSQL database an index is built into"}


def run_store_commands() -> dict[str, object]:
    """``path -> command`` of every CLI command with a --store option; fails on an unclassified one."""
    found: dict[str, object] = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if not sub.hidden:  # a renamed command's old spelling: the same command
                walk(sub, (*path, name))
        for param in getattr(command, "params", []):
            if "--store" in getattr(param, "opts", ()):
                key = " ".join(path)
                if "run store" in (param.help or ""):
                    found[key] = command
                else:
                    assert key in NOT_THE_RUN_STORE, f"`hoprag {key} --store` is neither the run store nor listed"

    walk(typer.main.get_command(app), ())
    return found


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hoprag.datasets.importers import import_dataset
    from hoprag.index.store import build_index

    out = tmp_path_factory.mktemp("foreign-store-index") / "index"
    build_index(import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"]).documents, out)
    return out


def args_for(path: str, store: str, tmp: Path, index: Path) -> list[str]:
    """Arguments that are valid for ``hoprag PATH`` but for the store."""
    table = {
        "gate baseline": ["gate", "baseline", "--run-id", "r1"],
        "demo": ["demo", "--data", str(ROOT / "data"), "--out", str(tmp / "demo"), "-q"],
        "gate diff": ["gate", "diff", "r1", "r2"],
        "feedback import": ["feedback", "import", str(DATA / "gates_feedback.jsonl")],
        "gate check": ["gate", "check", "--run-id", "r1", "--thresholds", str(ROOT / "thresholds.yaml")],
        "gate run": ["gate", "run", str(ENTERPRISE / "corpus.jsonl"), "--cases", str(ENTERPRISE / "cases.jsonl"),
                     "--out", str(tmp / "gate-run"), "--embedder", "hash"],
        "index": ["index", str(ENTERPRISE / "corpus.jsonl"), "--out", str(tmp / "ix"),
                  "--thresholds", str(ROOT / "thresholds.yaml")],
        "runs list": ["runs", "list"],
        "runs rm": ["runs", "rm", "--failed"],
        "serve": ["serve", str(index)],
    }
    assert path in table, f"`hoprag {path}` takes a run store: give it valid arguments here"
    return [*table[path], "--store", store]


def cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    saved, sys.argv = sys.argv, ["hoprag", *argv]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = saved
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def test_every_command_that_takes_a_run_store_refuses_a_foreign_database_unchanged(
        backend: str, request: pytest.FixtureRequest, tmp_path: Path, small_index: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPRAG_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    if backend == "sqlite":
        (tmp_path / "db").mkdir()
        db = foreign_sqlite(tmp_path / "db" / "app.db")
        store, where, state = str(db), str(db), lambda: snapshot(db)
    else:
        store = foreign_pg(request.getfixturevalue("pg_url"))
        where, state = str(sa.engine.make_url(store).database), lambda: pg_dump(store)
    before = state()
    commands = run_store_commands()
    assert {"runs list", "runs rm", "gate check", "gate baseline", "gate diff", "feedback import", "gate run",
            "demo", "serve"} <= set(commands)
    for path in sorted(commands):
        code, out, err = cli(capsys, args_for(path, store, tmp_path, small_index))
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2, (path, out, err)
        assert len(lines) == 1 and lines[0].startswith("error: "), (path, err)
        assert "not hoprag's run store" in lines[0] and where in lines[0] and "Fix: point --store" in lines[0], path
        assert "Traceback" not in out + err
        assert state() == before, f"`hoprag {path}` changed the foreign database"
