"""The pytest plugin, run in a child pytest with pytester: a blocking failure fails the user's test."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from hoprag.metrics import Metric
from hoprag.store import RunStore

pytest_plugins = ["pytester"]


def _plugin_args() -> list[str]:
    installed = any(ep.value.startswith("hoprag.gates.pytest_plugin") for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "hoprag.gates.pytest_plugin"]


@pytest.mark.integration
def test_block_fails_and_warn_passes(pytester: pytest.Pytester, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with RunStore(db) as store:
        for run, pii in (("clean", 0.0), ("leaky", 3.0)):
            store.create_run(run)
            store.add_metrics([Metric(run, "ingest", "pii_hits", pii), Metric(run, "ingest", "duplicate_frac", 0.5)])
    pytester.makefile(".yaml", thresholds="ingest:\n  pii_hits: {max: 0, mode: block}\n  duplicate_frac: {max: 0.02}\n")
    pytester.makepyfile(f"""
        import pytest

        def test_clean(hoprag_gate):
            report = hoprag_gate("clean", thresholds="thresholds.yaml", no_baseline=True)
            assert len(report.warnings) == 1

        def test_leaky(hoprag_gate):
            hoprag_gate("leaky", thresholds="thresholds.yaml", no_baseline=True)

        @pytest.mark.hoprag_gate(run="leaky", thresholds="thresholds.yaml", no_baseline=True, store={str(db)!r})
        def test_marked(hoprag_gate):
            hoprag_gate()
        """)
    result = pytester.runpytest(*_plugin_args(), f"--hoprag-store={db}", "-W", "default")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*hoprag gate blocked run leaky: ingest.pii_hits = 3.0*", "*HopragGateWarning*"])
