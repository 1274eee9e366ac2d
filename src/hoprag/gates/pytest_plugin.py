"""pytest plugin: gate a run from your own test suite; a blocking failure fails the test.

Enabled through the ``pytest11`` entry point (or ``-p hoprag.gates.pytest_plugin``)::

    def test_release_gate(hoprag_gate):
        report = hoprag_gate("gate-2024…", thresholds="thresholds.yaml")   # fails on block
        assert not report.warnings                                          # your own policy

    @pytest.mark.hoprag_gate(run="gate-2024…", thresholds="thresholds.yaml", store="ci.db")
    def test_marked(hoprag_gate):
        hoprag_gate()        # arguments come from the marker

``hoprag_gate(run=None, thresholds=None, *, store=None, baseline="default", no_baseline=False,
metrics=None)`` also gates a list of :class:`~hoprag.metrics.Metric` given directly
(``metrics=``, no store needed). Warnings become ``HopragGateWarning`` pytest warnings. Options:
``--hoprag-store`` and ``--hoprag-thresholds`` set suite-wide defaults.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest

__all__ = ["HopragGateWarning"]


class HopragGateWarning(UserWarning):
    """A warn-mode gate failed: reported, not fatal."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hoprag", "hoprag stage gates")
    group.addoption("--hoprag-store", default=None, help="run store URL for hoprag_gate (default: $HOPRAG_STORE)")
    group.addoption("--hoprag-thresholds", default=None, help="thresholds YAML for hoprag_gate")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hoprag_gate(run=, thresholds=, store=, baseline=, no_baseline=): "
                                       "defaults for the hoprag_gate fixture")


def _describe(rows: Sequence[Any]) -> str:
    return "; ".join(f"{r.stage}.{r.metric} = {r.value} ({r.threshold}): {r.reason}" for r in rows)


@pytest.fixture
def hoprag_gate(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Gate a run (or a list of metrics); ``pytest.fail`` on a blocking failure; returns the report."""
    marker = request.node.get_closest_marker("hoprag_gate")
    defaults: dict[str, Any] = dict(marker.kwargs) if marker else {}
    defaults.setdefault("store", request.config.getoption("--hoprag-store"))
    defaults.setdefault("thresholds", request.config.getoption("--hoprag-thresholds"))

    def gate(run: str | None = None, thresholds: Any = None, **kwargs: Any) -> Any:
        from hoprag.gates.baseline import load_baseline
        from hoprag.gates.gate import evaluate_gate
        from hoprag.gates.thresholds import Thresholds, load_thresholds, parse_thresholds

        opts = {**defaults, **{k: v for k, v in kwargs.items() if v is not None}}
        run = run or opts.get("run")
        source = thresholds or opts.get("thresholds")
        if source is None:
            pytest.fail("hoprag_gate: no thresholds; pass thresholds=, mark the test or use --hoprag-thresholds",
                        pytrace=False)
        rules = source if isinstance(source, Thresholds) else (
            parse_thresholds(source) if isinstance(source, dict) else load_thresholds(source))
        metrics = opts.get("metrics")
        baseline_metrics = opts.get("baseline_metrics")
        baseline_run = None
        if metrics is None:
            from hoprag.store import RunStore

            if not run:
                pytest.fail("hoprag_gate: no run id; pass run= or metrics=", pytrace=False)
            with RunStore(opts.get("store")) as store:
                store.require_run(run)
                metrics = store.metrics(run)
                if not opts.get("no_baseline") and baseline_metrics is None:
                    base = load_baseline(store, opts.get("baseline", "default"))
                    baseline_metrics, baseline_run = base.metrics, base.info.run_id
        report = evaluate_gate(run or (metrics[0].run_id if metrics else "?"), metrics, rules,
                               baseline_metrics, baseline_run)
        for row in report.warnings:
            warnings.warn(HopragGateWarning(_describe([row])), stacklevel=2)
        if report.blocked:
            pytest.fail(f"hoprag gate blocked run {report.run_id}: {_describe(report.blocking_failures)}",
                        pytrace=False)
        return report

    return gate
