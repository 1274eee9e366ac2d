"""``--clearance`` on search, ask, run and ablate: what a caller at each level is shown, end to end.

Commands run in-process (typer's CliRunner) over an index of the enterprise corpus; every traces
file, JSON output and printed trail is searched for documents above the caller's clearance (ids,
titles, 40-character windows of their text). An unrestricted ``ask`` is the control.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.security.acl import Clearance, LeakDetector, parse_levels
from hoprag.cli import app
from hoprag.index.store import build_index
from hoprag.ingest.loaders import load_corpora

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).resolve().parents[2] / "data" / "enterprise"
CASES = ENTERPRISE / "cases.jsonl"
LEVELS = ("public", "internal", "confidential", "restricted")
ORION = "Under the current retention policy, how long is customer data kept for the plan acquired under Project Orion?"
ABLATED = ("ent-001", "ent-004", "ent-005", "ent-008")
WIDE = {"COLUMNS": "1000", "HOPRAG_CLEARANCE": None}  # no wrapping: printed text is searched as printed


@pytest.fixture(scope="module")
def documents():
    return load_corpora([ENTERPRISE / "corpus.jsonl"])


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, documents) -> Path:
    out = tmp_path_factory.mktemp("cli-acl") / "index"
    build_index(documents, out)
    return out


def invoke(*args: str, env: dict | None = None):
    result = CliRunner().invoke(app, list(args), env={**WIDE, **(env or {})})
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_an_unrestricted_ask_prints_restricted_text_the_control(index_dir, documents) -> None:
    printed = invoke("ask", str(index_dir), ORION).output
    assert LeakDetector(documents, Clearance("internal")).find(printed) >= {"contract-14"}


@pytest.mark.parametrize("level", LEVELS)
def test_run_at_a_clearance_writes_no_trace_with_a_document_above_it(index_dir, documents, tmp_path, level) -> None:
    out = tmp_path / "traces.jsonl"
    invoke("run", str(index_dir), str(CASES), "--out", str(out), "--clearance", level, "--quiet")
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    detector = LeakDetector(documents, Clearance(level))
    assert all(detector.find_in(row) == set() for row in rows)  # the run's header line too
    traces = [row for row in rows if "case_id" in row]
    assert len(traces) == 16
    for row in traces:
        assert all(step["filters"] == {"clearance": level} for step in row["steps"]), row["case_id"]


@pytest.mark.parametrize("level", LEVELS)
def test_ask_prints_and_returns_nothing_above_the_clearance(index_dir, documents, level) -> None:
    detector = LeakDetector(documents, Clearance(level))
    printed = invoke("ask", str(index_dir), ORION, "--clearance", level).output
    assert "evidence trail" in printed and detector.find(printed) == set()
    if level == "public":  # the other engine and the JSON output, at the level that hides the most
        printed = invoke("ask", str(index_dir), ORION, "--engine", "single", "--clearance", level).output
        assert "evidence trail" in printed and detector.find(printed) == set()
        trace = json.loads(invoke("ask", str(index_dir), ORION, "--json", "--clearance", level).stdout)
        assert detector.find_in(trace) == set()


def test_search_returns_k_allowed_hits_and_reads_the_clearance_from_the_environment(index_dir, documents) -> None:
    public = {d.id for d in documents if d.acl == "public"}
    query = "Project Orion order form plan retention"
    hits = json.loads(invoke("search", str(index_dir), query, "-k", "5", "--json", "--clearance", "public").stdout)
    assert len(hits) == 5 and {h["doc_id"] for h in hits} <= public
    from_env = json.loads(invoke("search", str(index_dir), query, "-k", "5", "--json", env={"HOPRAG_CLEARANCE": "public"}).stdout)
    assert from_env == hits
    unrestricted = json.loads(invoke("search", str(index_dir), query, "-k", "5", "--json").stdout)
    assert {h["doc_id"] for h in unrestricted} - public  # without a clearance restricted contracts rank
    printed = invoke("search", str(index_dir), query, "--clearance", "public").output
    assert LeakDetector(documents, Clearance("public")).find(printed) == set()


def test_custom_levels_and_ablate_take_the_clearance(index_dir, documents, tmp_path) -> None:
    levels = "public,internal,restricted"
    trace = json.loads(
        invoke("ask", str(index_dir), ORION, "--json", "--acl-levels", levels, "--clearance", "internal").stdout
    )
    clearance = parse_levels(levels).clearance("internal")
    assert LeakDetector(documents, clearance).find_in(trace) == set()
    assert trace["steps"][0]["filters"] == {"clearance": clearance.describe()}
    # the cases whose unrestricted chains run through restricted contracts (ablate is slow on all 16)
    subset = tmp_path / "cases.jsonl"
    lines = CASES.read_text(encoding="utf-8").splitlines()
    subset.write_text("\n".join(line for line in lines if json.loads(line)["case_id"] in ABLATED) + "\n", encoding="utf-8")
    out = tmp_path / "ablate"
    invoke("ablate", str(index_dir), str(subset), "--out", str(out), "--clearance", "public")
    detector = LeakDetector(documents, Clearance("public"))
    files = sorted(out.glob("traces-*.jsonl"))
    assert len(files) == 8  # oracle rows (built from the visible chunks only) and the graph row included
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            assert detector.find_in(json.loads(line)) == set(), path.name


def test_an_unknown_clearance_is_a_clear_error_not_a_traceback(index_dir) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hoprag.cli", "search", str(index_dir), "Orion", "--clearance", "secret"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    said = " ".join(done.stderr.split())  # the console may wrap the message
    assert "unknown clearance 'secret'" in said and "public, internal, confidential, restricted" in said
    assert "Traceback" not in done.stdout + done.stderr
