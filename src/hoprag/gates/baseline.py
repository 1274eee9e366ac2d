"""Freeze a run as the baseline, and read back what later runs compare against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hoprag.errors import ConfigError
from hoprag.metrics import Metric
from hoprag.store import FAILED, INCOMPLETE, RUNNING, BaselineInfo, RunStore

__all__ = ["PROFILE_ARTIFACT", "REFERENCE_ARTIFACT", "Baseline", "freeze_baseline", "load_baseline"]

REFERENCE_ARTIFACT = "embed.reference"
PROFILE_ARTIFACT = "ingest.field_profile"


@dataclass(frozen=True)
class Baseline:
    info: BaselineInfo
    metrics: list[Metric]
    reference: np.ndarray | None
    profile: dict[str, Any] | None


def freeze_baseline(store: RunStore, run_id: str, name: str = "default") -> Baseline:
    """Make ``run_id`` the baseline ``name``; its metrics and reference batch become the reference.

    A run that failed, is still running, or whose writer died mid-way holds partial metrics: refused.
    """
    run = store.require_run(run_id)
    if run.status in (RUNNING, FAILED, INCOMPLETE):
        why = f" ({run.error})" if run.error else ""
        raise ConfigError(
            f"run '{run_id}' is {run.status}{why}: its metrics are partial, so it cannot be a baseline. "
            "Fix: freeze a complete run (`hoprag runs list --status complete` lists them), or let this one finish")
    metrics = store.metrics(run_id)
    if not metrics:
        raise ConfigError(f"run '{run_id}' has no metrics to freeze. Fix: produce them with `hoprag gate run` first")
    info = store.set_baseline(name, run_id)
    return Baseline(info, metrics, store.get_array(run_id, REFERENCE_ARTIFACT), store.get_json(run_id, PROFILE_ARTIFACT))


def load_baseline(store: RunStore, name: str = "default", *, required: bool = True) -> Baseline | None:
    """The baseline ``name``; missing raises (``required``) with the fix, else returns None."""
    info = store.get_baseline(name)
    if info is None:
        if not required:
            return None
        known = ", ".join(b.name for b in store.list_baselines()) or "none"
        raise ConfigError(
            f"no baseline '{name}' in {store.display_url} (baselines: {known}). Fix: freeze one with "
            "`hoprag gate baseline --run RUN_ID`, or gate on absolute thresholds only with --no-baseline")
    return Baseline(info, store.metrics(info.run_id), store.get_array(info.run_id, REFERENCE_ARTIFACT),
                    store.get_json(info.run_id, PROFILE_ARTIFACT))
