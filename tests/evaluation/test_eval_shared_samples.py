"""On the bundled samples: every failing case gets an earliest-failure class; oracle-hop check."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from hoprag.datasets.schema import load_cases
from hoprag.demo import run_demo
from hoprag.evaluation.ablations import run_ablations
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.failures import EXTRA_CLASSES, FAILURE_CLASSES
from hoprag.io.traces import read_traces
from hoprag.index.store import load_index
from hoprag.ingest.loaders import load_documents

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DATA = Path(__file__).parents[2] / "data"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval4_demo")
    # its own run store: not the working tree's .hoprag/hoprag.db, which every earlier run has grown
    run_demo(DATA, out, quiet=True, console=Console(file=open("/dev/null", "w")), store_url=str(out / "runs.db"))
    return out


@pytest.mark.parametrize("name", ["hotpotqa", "musique", "2wiki", "enterprise"])
def test_every_failure_is_classified(demo: Path, name: str) -> None:
    work = demo / name
    cases = load_cases(work / "cases.jsonl")
    ids = {d.id for d in load_documents(work / "corpus.jsonl")}
    for engine in ("single", "multihop"):
        report = evaluate_chains(cases, read_traces(work / f"traces-{engine}.jsonl"), corpus_ids=ids)
        failing = [r for r in report.cases if not r["passed"]]
        assert failing, "the offline engines do not solve every case"
        assert all(r["failure"] in FAILURE_CLASSES + EXTRA_CLASSES for r in failing)
        counts = report.failures
        assert sum(counts[c] for c in FAILURE_CLASSES + EXTRA_CLASSES) == counts["failed"] == len(failing)
        assert counts["missing_trace"] == 0


@pytest.mark.parametrize("name", ["enterprise", "2wiki"])
def test_oracle_hop_not_below_free_running_or_explained(demo: Path, name: str, tmp_path: Path) -> None:
    work = demo / name
    cases = load_cases(work / "cases.jsonl")
    result = run_ablations(load_index(work / "index"), cases, tmp_path)
    check = result.oracle_check
    assert check["holds"] or check["oracle_worse"]
    for worse in check["oracle_worse"]:
        assert worse["oracle"] < worse["free"] and worse["why"]
    kinds = {r["ablation"]: r["kind"] for r in result.rows}
    assert kinds["oracle-hop"] == kinds["oracle-evidence"] == kinds["minimal-evidence"] == "oracle"
    assert kinds["fixed-template"] == kinds["single"] == kinds["iterative"] == "system"
    oracle_evidence = next(r for r in result.rows if r["ablation"] == "oracle-evidence")
    assert oracle_evidence["metrics"]["chain_coverage@10"] == 1.0
    table = (tmp_path / "ablations.md").read_text()
    assert table.index("| iterative |") < table.index("oracle rows") < table.index("| oracle-hop |")
