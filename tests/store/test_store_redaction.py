"""No enterprise email address in any stored trace: the store's rows (SQLite and a real PostgreSQL)
and the traces files of the demo and of a gated run, with the raw text only under ``redact=False``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from hoprag.store import RunStore
from hoprag.store import schema as t

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
# Read with a pattern of its own, wider than the detectors, so the check does not trust what it checks.
EMAILS = sorted({m.casefold() for m in re.findall(r"[\w.+%-]+@[\w-]+(?:\.[\w-]+)+",
                                                     (ENTERPRISE / "corpus.jsonl").read_text(encoding="utf-8"))})

pytestmark = pytest.mark.integration


def leaked(text: str) -> list[str]:
    folded = text.casefold()
    return [e for e in EMAILS if e in folded]


def stored_trace_rows(store: RunStore) -> list[str]:
    """Every trace row exactly as the database holds it (the JSON column cast to text)."""
    with store.engine.connect() as conn:
        return [str(r[0]) for r in conn.execute(sa.select(sa.cast(t.traces.c.data, sa.Text)))]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "hoprag.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="module")
def enterprise_traces(tmp_path_factory: pytest.TempPathFactory) -> list:
    from hoprag.datasets.schema import load_cases
    from hoprag.index.store import build_index, load_index
    from hoprag.ingest.loaders import load_documents
    from hoprag.pipeline.factory import make_engine

    out = tmp_path_factory.mktemp("ent-index")
    build_index(load_documents(ENTERPRISE / "corpus.jsonl"), out)
    index = load_index(out)
    cases = load_cases(ENTERPRISE / "cases.jsonl")
    return [make_engine(kind, index).answer(c.query, case_id=c.case_id, run_id="raw")
            for kind in ("single", "multihop") for c in cases]


def test_the_corpus_holds_the_addresses_the_check_looks_for() -> None:
    assert "legal-ops@kestrel-dynamics.example" in EMAILS and len(EMAILS) == 8


def test_store_rows_hold_placeholders_by_default_and_raw_text_only_when_asked(store_url: str, enterprise_traces) -> None:
    raw_text = "\n".join(json.dumps(tr.to_dict()) for tr in enterprise_traces)
    assert leaked(raw_text), "the engines retrieve the mailboxes, so there is something to redact"
    with RunStore(store_url) as store:
        store.create_run("redacted")
        store.create_run("raw")
        assert store.add_traces("redacted", enterprise_traces) == len(enterprise_traces)
        store.add_traces("raw", enterprise_traces, redact=False)
        rows = stored_trace_rows(store)
        back = store.traces("redacted")
        raw_back = store.traces("raw")
    assert len(rows) == 2 * len(enterprise_traces)
    assert sum(bool(leaked(r)) for r in rows) == sum(bool(leaked(json.dumps(tr.to_dict()))) for tr in enterprise_traces)
    assert not any(leaked(json.dumps(tr.to_dict())) for tr in back)
    assert raw_back == enterprise_traces
    assert all(tr.redacted for tr in back) and sum(tr.redactions.get("email", 0) for tr in back) > 0
    assert "<EMAIL_1>" in "\n".join(rows)
    # same ids, offsets and ranks as the raw traces
    key = lambda tr: [(tr.case_id, e.hit.chunk_id, e.hit.doc_id, e.hit.start, e.hit.end, e.hit.rank) for e in tr.evidence]
    assert [key(tr) for tr in back] == [key(tr) for tr in enterprise_traces]


def test_demo_on_the_enterprise_set_stores_no_email_address(tmp_path: Path) -> None:
    from hoprag.demo import run_demo

    store_url = str(tmp_path / "hoprag.db")  # PostgreSQL rows: the add_traces test above, same code path

    data = tmp_path / "data"
    shutil.copytree(ENTERPRISE, data / "enterprise")
    out = tmp_path / "demo-output"
    run_demo(data, out, quiet=True, store_url=store_url, thresholds=None)
    files = sorted((out / "enterprise").glob("traces-*.jsonl"))
    assert [f.name for f in files] == ["traces-multihop.jsonl", "traces-single.jsonl"]
    for path in files:
        assert leaked(path.read_text(encoding="utf-8")) == [], path.name
    with RunStore(store_url) as store:
        rows = stored_trace_rows(store)
    assert len(rows) == 2 * 16
    assert [r for r in rows if leaked(r)] == []
    assert any("<EMAIL_" in r for r in rows)


def test_gated_run_writes_and_stores_no_email_address(tmp_path: Path) -> None:
    from hoprag.gates.staged_run import run_gated_pipeline

    with RunStore(tmp_path / "hoprag.db") as store:
        run = run_gated_pipeline([ENTERPRISE / "corpus.jsonl"], ENTERPRISE / "cases.jsonl", tmp_path / "gate", store,
                                 engines=("single", "multihop"), embedder="hash", baseline=None)
        rows = stored_trace_rows(store)
    assert len(rows) == 2 * 16 and [r for r in rows if leaked(r)] == []
    for path in run.traces.values():
        text = path.read_text(encoding="utf-8")
        assert leaked(text) == [] and "<EMAIL_" in text
